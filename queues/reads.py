"""Reads for the console and the CLI: each a read-only script over one queue's slot.

A read script sees one instant, so a page never mixes a job's state from
before a move with its set from after it, and the server's clock comes with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .errors import InvalidInput
from .keys import STATES, QueueKeys, State, validate_job_id, validate_state
from .moves import Call, _int, _text

PAGE_LIMIT_MAX: Final = 500
CORE_FIELDS: Final = ("state", "attempts", "payload")


@dataclass(frozen=True, slots=True)
class QueueStats:
    queue: str
    now_ms: int
    counts: dict[str, int]
    due: int
    lapsed: int
    oldest_due_ms: int | None
    next_due_ms: int | None
    last_event_id: str

    @property
    def delayed(self) -> int:
        return self.counts["pending"] - self.due

    @property
    def oldest_due_age_ms(self) -> int | None:
        return None if self.oldest_due_ms is None else max(self.now_ms - self.oldest_due_ms, 0)

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "now_ms": self.now_ms, **self.counts, "due": self.due,
                "delayed": self.delayed, "lapsed": self.lapsed, "oldest_due_age_ms": self.oldest_due_age_ms,
                "next_due_ms": self.next_due_ms, "last_event_id": self.last_event_id}


@dataclass(frozen=True, slots=True)
class JobRow:
    """One line of a page: what the set says (id, score) beside what the hash says."""

    id: str
    score: int
    state: str
    attempts: str
    payload_head: bytes
    payload_length: int
    last_error: str
    exists: bool

    @property
    def cursor(self) -> str:
        return f"{self.score}:{self.id}"


@dataclass(frozen=True, slots=True)
class Page:
    queue: str
    state: State
    order: Literal["asc", "desc"]
    now_ms: int
    total: int
    start: int
    has_more: bool
    rows: list[JobRow]


@dataclass(frozen=True, slots=True)
class JobView:
    """A job as Redis holds it, with warnings for anything a runtime should not have written."""

    queue: str
    id: str
    now_ms: int
    fields: dict[str, bytes]
    scores: dict[str, int]
    warnings: list[str] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        return bool(self.fields)

    def text(self, name: str) -> str:
        value = self.fields.get(name)
        return "" if value is None else value.decode(errors="replace")

    @property
    def state(self) -> str:
        return self.text("state")

    @property
    def attempts(self) -> str:
        return self.text("attempts")

    @property
    def payload(self) -> bytes:
        return self.fields.get("payload", b"")

    @property
    def lease_deadline_ms(self) -> int | None:
        return self.scores.get("active")

    @property
    def lease_left_ms(self) -> int | None:
        deadline = self.lease_deadline_ms
        return None if deadline is None else deadline - self.now_ms

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "id": self.id, "now_ms": self.now_ms, "exists": self.exists,
                "fields": {k: v.decode(errors="replace") for k, v in self.fields.items()},
                "scores": self.scores, "lease_left_ms": self.lease_left_ms, "warnings": self.warnings}


def _opt_int(value: Any) -> int | None:
    text = _text(value)
    return int(float(text)) if text else None


def clock(queue: str) -> Call[int]:
    return Call("clock", QueueKeys(queue).script_keys(None), [], int)


def count_older(queue: str, state: str, older_than_ms: int = 0) -> Call[int]:
    """How many jobs of ``state`` entered it at least ``older_than_ms`` ago: what a purge would touch now."""
    state = validate_state(state)
    older_than_ms = _int(older_than_ms, "older than (ms)", 0)

    def parse(reply: list[Any]) -> int:
        return int(reply[1])

    return Call("count_older", QueueKeys(queue).script_keys(None), [state, older_than_ms], parse)


def stats(queue: str) -> Call[QueueStats]:
    keys = QueueKeys(queue)

    def parse(reply: list[Any]) -> QueueStats:
        now, p, a, d, f, due, lapsed, oldest, next_due, last = reply
        return QueueStats(keys.queue, int(now), {"pending": int(p), "active": int(a), "done": int(d), "failed": int(f)},
                          int(due), int(lapsed), _opt_int(oldest), _opt_int(next_due), _text(last))

    return Call("stats", keys.script_keys(None), [], parse)


def parse_cursor(cursor: object) -> tuple[int, str]:
    """A cursor is ``"<score>:<id>"`` as :attr:`JobRow.cursor` writes it."""
    if not isinstance(cursor, str) or ":" not in cursor:
        raise InvalidInput(f"cursor {cursor!r} is not valid: expected <score>:<id>")
    score, _, job_id = cursor.partition(":")
    try:
        return int(score), validate_job_id(job_id)
    except (ValueError, InvalidInput):
        raise InvalidInput(f"cursor {cursor!r} is not valid: expected <score>:<id>") from None


def page(queue: str, state: str, *, offset: int | None = None, after: str | None = None,
         before: str | None = None, limit: int = 50, order: str = "asc", payload_head: int = 120) -> Call[Page]:
    """One page of a state. Give at most one of ``offset``, ``after`` or ``before`` (cursors)."""
    keys = QueueKeys(queue)
    state = validate_state(state)
    if order not in ("asc", "desc"):
        raise InvalidInput(f"order must be asc or desc, not {order!r}")
    if sum(x is not None for x in (offset, after, before)) > 1:
        raise InvalidInput("give one of offset, after or before")
    limit = _int(limit, "limit", 1, PAGE_LIMIT_MAX)
    payload_head = _int(payload_head, "payload head", 0, 4096)
    if after is not None:
        score, job_id = parse_cursor(after)
        where: list[Any] = ["after", score, job_id]
    elif before is not None:
        score, job_id = parse_cursor(before)
        where = ["before", score, job_id]
    else:
        where = ["offset", _int(offset or 0, "offset", 0), ""]

    def parse(reply: list[Any]) -> Page:
        now, total, start, more, *flat = reply
        rows = [JobRow(_text(flat[i]), int(float(_text(flat[i + 1]))), _text(flat[i + 2]), _text(flat[i + 3]),
                       flat[i + 4], int(flat[i + 5]), flat[i + 6].decode(errors="replace"), bool(int(flat[i + 7])))
                for i in range(0, len(flat), 8)]
        return Page(keys.queue, state, order, int(now), int(total), int(start), bool(int(more)), rows)  # type: ignore[arg-type]

    return Call("page", keys.script_keys(None), [state, order, *where, limit, payload_head], parse)


def job(queue: str, job_id: str) -> Call[JobView]:
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)

    def parse(reply: list[Any]) -> JobView:
        now, *rest = reply
        scores = {state: int(float(_text(v))) for state, v in zip(STATES, rest[:4]) if _text(v)}
        flat = rest[4:]
        fields = {_text(flat[i]): flat[i + 1] for i in range(0, len(flat), 2)}
        return JobView(keys.queue, job_id, int(now), fields, scores, job_warnings(fields, scores))

    return Call("job", keys.script_keys(job_id), [job_id], parse)


def job_warnings(fields: dict[str, bytes], scores: dict[str, int]) -> list[str]:
    """What is odd about a job, in words; empty when it is as the protocol writes it."""
    if not fields:
        return ["the job's hash does not exist" + (f" but its id is in {', '.join(scores)}" if scores else "")]
    warnings = [f"the core field {name!r} is missing" for name in CORE_FIELDS if name not in fields]
    state = fields.get("state", b"").decode(errors="replace")
    if "state" in fields and state not in STATES:
        warnings.append(f"unknown state {state!r}")
    attempts = fields.get("attempts")
    if attempts is not None and not attempts.decode(errors="replace").isdigit():
        warnings.append(f"attempts is not a number: {attempts!r}")
    if len(scores) > 1:
        warnings.append(f"the id is in more than one set: {', '.join(scores)}")
    elif not scores:
        warnings.append("the id is in none of the four sets")
    elif state in STATES and state not in scores:
        warnings.append(f"the state says {state} but the id is in {next(iter(scores))}")
    payload = fields.get("payload")
    if payload is not None:
        try:
            payload.decode()
        except UnicodeDecodeError:
            warnings.append("the payload is not UTF-8 text (shown as bytes)")
    return warnings


@dataclass(frozen=True, slots=True)
class Event:
    id: str
    move: str
    job_id: str
    source: str
    target: str
    attempts: str
    actor: str
    ts_ms: int

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.id, "move": self.move, "id": self.job_id, "from": self.source, "to": self.target,
                "attempts": self.attempts, "actor": self.actor, "ts_ms": self.ts_ms}


def parse_event(entry_id: Any, data: dict[Any, Any]) -> Event:
    get = {_text(k): _text(v) for k, v in data.items()}
    ts = get.get("ts", "")
    return Event(_text(entry_id), get.get("move", ""), get.get("id", ""), get.get("from", ""), get.get("to", ""),
                 get.get("attempts", ""), get.get("actor", ""), int(ts) if ts.isdigit() else 0)


def payload_preview(payload: bytes, limit: int = 64 * 1024) -> tuple[str, str, bool]:
    """How to show a payload: ('json' | 'text' | 'bytes', the text, whether it was cut)."""
    cut = len(payload) > limit
    try:
        text = payload.decode()
    except UnicodeDecodeError:
        return "bytes", payload[:limit].hex(" "), cut
    try:
        if not cut:
            return "json", json.dumps(json.loads(text), indent=2, ensure_ascii=False), False
    except ValueError:
        pass
    return "text", text[:limit], cut


__all__ = ["QueueStats", "JobRow", "Page", "JobView", "Event", "STATES", "stats", "page", "job", "clock",
           "parse_event", "payload_preview", "job_warnings", "validate_state"]
