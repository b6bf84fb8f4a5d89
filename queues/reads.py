"""Reads for the console and the CLI: each a read-only script over one queue's slot.

A read script sees one instant, so a page never mixes a job's state from
before a move with its set from after it, and the server's clock comes with it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from .errors import InvalidInput, Refused
from .keys import STATES, QueueKeys, State, expected_state, job_id_token, parse_job_id_token, validate_job_id, validate_state
from .moves import Call, _int, _text, cut_utf8, digits, refused_whole
from .protocol_moves import HISTORY_CODES

PAGE_LIMIT_MAX: Final = 500
CORE_FIELDS: Final = ("state", "attempts", "payload")
# The job read returns the payload whole up to this many bytes (else its preview); a longer one is read
# only on request (:func:`payload`), up to PAYLOAD_READ_MAX.
JOB_PAYLOAD_BYTES: Final = 64 * 1024
PAYLOAD_READ_MAX: Final = 16 * 1024 * 1024
# The history read returns a job's history field only up to this many bytes (the moves write at most 4096).
HISTORY_READ_MAX: Final = 16384
# A score Redis holds as +inf or -inf, shown as the largest integer a script writes (and its negative).
_INFINITE: Final = 10**15


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
    # While the queue is paused: since when (server ms; None when another writer left no time), by whom, why.
    paused: bool = False
    paused_since_ms: int | None = None
    paused_by: str = ""
    paused_reason: str = ""
    # The earliest lease deadline not passed yet (when the next lease lapses); None: no active job.
    next_deadline_ms: int | None = None

    @property
    def delayed(self) -> int:
        return self.counts["pending"] - self.due

    @property
    def oldest_due_age_ms(self) -> int | None:
        return None if self.oldest_due_ms is None else max(self.now_ms - self.oldest_due_ms, 0)

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "now_ms": self.now_ms, **self.counts, "due": self.due,
                "delayed": self.delayed, "lapsed": self.lapsed, "oldest_due_age_ms": self.oldest_due_age_ms,
                "next_due_ms": self.next_due_ms, "last_event_id": self.last_event_id, "paused": self.paused,
                "paused_since_ms": self.paused_since_ms, "paused_by": self.paused_by,
                "paused_reason": self.paused_reason}


@dataclass(frozen=True, slots=True)
class JobRow:
    """One line of a page: what the set says (id, score) beside what the hash says.

    ``payload_head`` comes from the payload itself when it is small, else from
    its ``preview`` field (``payload_source`` says which; 'none': a large
    payload written without a preview, shown by its length only).
    """

    id: str
    score: int
    state: str
    attempts: str
    payload_head: bytes
    payload_length: int
    last_error: str
    exists: bool
    last_error_length: int = 0
    key_type: str = "hash"
    payload_source: str = "payload"
    # False when the id in the set is not UTF-8: ``id`` then holds each such byte as a lone surrogate
    # (``surrogateescape``), which the moves send as that byte again; :func:`queues.keys.job_id_token` writes it.
    id_is_text: bool = True

    @property
    def cursor(self) -> str:
        return f"{self.score}:{job_id_token(self.id)}"

    @property
    def expected_state(self) -> str:
        """What a move on this row compares against (``~absent`` for no state, ``wrongtype:T`` for a key of type T)."""
        return expected_state(self.state, self.key_type)


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
    """A job as Redis holds it, with warnings for anything a runtime should not have written.

    ``fields`` holds every field but the payload and the history; a value longer than the read's
    bound is absent from it and its length is in ``long_fields``. ``payload`` is the whole payload
    when ``payload_whole``, else its preview (or nothing); ``payload_length`` is its length either way.
    """

    queue: str
    id: str
    now_ms: int
    fields: dict[str, bytes]
    scores: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    key_type: str = "hash"
    payload: bytes = b""
    payload_length: int = 0
    payload_whole: bool = True
    has_payload: bool = True
    field_count: int = 0
    long_fields: dict[str, int] = field(default_factory=dict)

    @property
    def exists(self) -> bool:
        return self.key_type != "none"

    def text(self, name: str) -> str:
        value = self.fields.get(name)
        return "" if value is None else _text(value)

    @property
    def state(self) -> str:
        return self.text("state")

    @property
    def expected_state(self) -> str:
        """What a move on this job compares against (``~absent`` for no state, ``wrongtype:T`` for a key of type T)."""
        return expected_state(self.state, self.key_type)

    @property
    def attempts(self) -> str:
        return self.text("attempts")

    @property
    def lease_deadline_ms(self) -> int | None:
        return self.scores.get("active")

    @property
    def lease_left_ms(self) -> int | None:
        deadline = self.lease_deadline_ms
        return None if deadline is None else deadline - self.now_ms

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "id": self.id, "now_ms": self.now_ms, "exists": self.exists,
                "key_type": self.key_type, "fields": {k: _text(v) for k, v in self.fields.items()},
                "long_fields": self.long_fields, "payload_length": self.payload_length,
                "payload_whole": self.payload_whole, "scores": self.scores, "lease_left_ms": self.lease_left_ms,
                "warnings": self.warnings}


def score_int(value: Any) -> int:
    """A score as the scripts print it, as an integer: ±inf as ±10^15, a fraction rounded down."""
    number = float(_text(value))
    if number != number:
        raise InvalidInput(f"score {value!r} is not a number")
    if abs(number) >= _INFINITE:
        return _INFINITE if number > 0 else -_INFINITE
    return int(number // 1)


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode()
    except UnicodeDecodeError:
        return False
    return True


def _stored_id(value: Any) -> str:
    """An id as a set holds it: exact, a byte that is not UTF-8 as a lone surrogate (see :class:`JobRow`)."""
    return value.decode(errors="surrogateescape") if isinstance(value, bytes) else str(value)


def _opt_int(value: Any) -> int | None:
    text = _text(value)
    return score_int(text) if text else None


def clock(queue: str) -> Call[int]:
    return Call("clock", QueueKeys(queue).script_keys(None), [], int)


def count_older(queue: str, state: str, older_than_ms: int = 0) -> Call[int]:
    """How many jobs of ``state`` entered it at least ``older_than_ms`` ago: what a purge would touch now."""
    state = validate_state(state)
    older_than_ms = _int(older_than_ms, "older than (ms)", 0)

    def parse(reply: list[Any]) -> int:
        refused_whole("count_older", reply)
        return int(reply[1])

    return Call("count_older", QueueKeys(queue).script_keys(None), [state, older_than_ms], parse)


@dataclass(frozen=True, slots=True)
class OlderCount:
    """How many jobs of a state a purge would touch, and the server time they were counted at."""

    now_ms: int
    count: int


def count_older_as_of(queue: str, state: str, older_than_ms: int = 0) -> Call[OlderCount]:
    """As :func:`count_older`, with the server time of the count (what a confirmed purge is bound to)."""
    state = validate_state(state)
    older_than_ms = _int(older_than_ms, "older than (ms)", 0)

    def parse(reply: list[Any]) -> OlderCount:
        refused_whole("count_older", reply)
        return OlderCount(int(reply[0]), int(reply[1]))

    return Call("count_older", QueueKeys(queue).script_keys(None), [state, older_than_ms], parse)


@dataclass(frozen=True, slots=True)
class JobState:
    id: str
    state: str
    attempts: str
    exists: bool


STATES_MAX: Final = 500


def states(queue: str, job_ids: list[str]) -> Call[list[JobState]]:
    """The state and attempts of up to STATES_MAX jobs of one queue, at one instant."""
    ids = [validate_job_id(j) for j in job_ids]
    if len(ids) > STATES_MAX:
        raise InvalidInput(f"at most {STATES_MAX} job ids, not {len(ids)}")

    def parse(reply: list[Any]) -> list[JobState]:
        flat = reply[1:]
        return [JobState(ids[n], _text(flat[3 * n]), _text(flat[3 * n + 1]), _text(flat[3 * n + 2]) == "hash")
                for n in range(len(ids))]

    return Call("states", QueueKeys(queue).script_keys(None), ids, parse)


def stats(queue: str) -> Call[QueueStats]:
    keys = QueueKeys(queue)

    def parse(reply: list[Any]) -> QueueStats:
        refused_whole("stats", reply)
        now, p, a, d, f, due, lapsed, oldest, next_due, last, paused, since, by, why = reply[:14]
        return QueueStats(keys.queue, int(now), {"pending": int(p), "active": int(a), "done": int(d), "failed": int(f)},
                          int(due), int(lapsed), _opt_int(oldest), _opt_int(next_due), _text(last),
                          _text(paused) == "1", digits(since),
                          _text(by), _text(why), _opt_int(reply[14]) if len(reply) > 14 else None)

    return Call("stats", keys.script_keys(None), [], parse)


def counts(queue: str) -> Call[dict[str, int]]:
    """The queue's move counters since its first move (``count_move`` in common.lua): field -> count."""
    keys = QueueKeys(queue)

    def parse(reply: list[Any]) -> dict[str, int]:
        refused_whole("counts", reply)
        pairs = ((_text(reply[i]), digits(reply[i + 1])) for i in range(0, len(reply), 2))
        return {name: value for name, value in pairs if value is not None}

    return Call("counts", keys.script_keys(None), [], parse)


WAIT_BUCKETS_MS: Final = (100, 500, 1000, 5000, 10000, 30000, 60000, 300000, 900000, 3600000)


@dataclass(frozen=True, slots=True)
class SeriesPoint:
    """One minute or hour of a queue's history: what happened in it, and how long claimed jobs had waited."""

    start_ms: int
    enqueued: int
    completed: int
    failed: int
    recovered: int
    waits: tuple[int, ...]  # claims per wait bucket (WAIT_BUCKETS_MS, then longer)

    def wait_percentile_ms(self, fraction: float) -> int | None:
        """The bucket bound under which ``fraction`` of this slot's claims had waited (None: no claim;
        beyond the last bound: the last bound)."""
        total = sum(self.waits)
        if not total:
            return None
        seen = 0
        for n, count in enumerate(self.waits):
            seen += count
            if seen >= fraction * total:
                return WAIT_BUCKETS_MS[min(n, len(WAIT_BUCKETS_MS) - 1)]
        return WAIT_BUCKETS_MS[-1]


@dataclass(frozen=True, slots=True)
class Series:
    queue: str
    resolution: str  # 'm' or 'h'
    now_ms: int
    points: list[SeriesPoint]


def series(queue: str, *, resolution: str, first: int, count: int) -> Call[Series]:
    """``count`` minutes (``resolution='m'``) or hours ('h') of history from ``first`` (since the epoch)."""
    keys = QueueKeys(queue)
    if resolution not in ("m", "h"):
        raise InvalidInput("resolution must be 'm' or 'h'")
    first = _int(first, "first", 0)
    count = _int(count, "count", 1, 1000)
    size_ms = 60_000 if resolution == "m" else 3_600_000

    def parse(reply: list[Any]) -> Series:
        now, *flat = reply
        points = []
        for n in range(count):
            values = [digits(v) or 0 for v in flat[n * 15:(n + 1) * 15]]
            points.append(SeriesPoint((first + n) * size_ms, values[0], values[1], values[2], values[3],
                                      tuple(values[4:])))
        return Series(keys.queue, resolution, int(now), points)

    return Call("series", keys.script_keys(None), [resolution, first, count], parse)


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """One live worker of a queue, as it last registered."""

    queue: str
    id: str
    host: str
    pid: str
    runtime: str
    concurrency: str
    started_ms: int | None
    heartbeat_ms: int | None
    expires_ms: int | None
    held: int
    held_ids: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "id": self.id, "host": self.host, "pid": self.pid, "runtime": self.runtime,
                "concurrency": self.concurrency, "started_ms": self.started_ms, "heartbeat_ms": self.heartbeat_ms,
                "expires_ms": self.expires_ms, "held": self.held, "held_ids": self.held_ids}


@dataclass(frozen=True, slots=True)
class Workers:
    queue: str
    now_ms: int
    live: int  # entries not expired (may be more than ``workers`` lists)
    workers: list[WorkerInfo]


def workers(queue: str, *, limit: int = 100) -> Call[Workers]:
    keys = QueueKeys(queue)
    limit = _int(limit, "limit", 1, 1000)

    def parse(reply: list[Any]) -> Workers:
        refused_whole("workers", reply)
        now, live, *flat = reply
        found = []
        for i in range(0, len(flat), 10):
            wid, host, pid, runtime, concurrency, started, beat, expires, held, ids = (_text(v) for v in flat[i:i + 10])
            found.append(WorkerInfo(keys.queue, wid, host, pid, runtime, concurrency, digits(started), digits(beat),
                                    digits(expires), digits(held) or 0, [x for x in ids.split("\n") if x]))
        return Workers(keys.queue, int(now), int(live), found)

    return Call("workers", keys.script_keys(None), [limit], parse)


def parse_cursor(cursor: object) -> tuple[int, str]:
    """A cursor is ``"<score>:<id>"`` as :attr:`JobRow.cursor` writes it."""
    if not isinstance(cursor, str) or ":" not in cursor:
        raise InvalidInput(f"cursor {cursor!r} is not valid: expected <score>:<id>")
    score, _, job_id = cursor.partition(":")
    try:
        return int(score), validate_job_id(parse_job_id_token(job_id))
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
        refused_whole("page", reply)
        now, total, start, more, *flat = reply
        rows = [JobRow(_stored_id(flat[i]), score_int(flat[i + 1]), _text(flat[i + 2]), _text(flat[i + 3]),
                       flat[i + 4], int(flat[i + 5]), _text(flat[i + 6]), _text(flat[i + 8]) != "none",
                       int(flat[i + 7]), _text(flat[i + 8]), _text(flat[i + 9]), _is_utf8(flat[i]))
                for i in range(0, len(flat), 10)]
        return Page(keys.queue, state, order, int(now), int(total), int(start), bool(int(more)), rows)  # type: ignore[arg-type]

    return Call("page", keys.script_keys(None), [state, order, *where, limit, payload_head], parse)


def job(queue: str, job_id: str, *, payload_bytes: int = JOB_PAYLOAD_BYTES) -> Call[JobView]:
    """The job, with its payload whole when it is at most ``payload_bytes`` long (else its preview)."""
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    payload_bytes = _int(payload_bytes, "payload bytes", 0, PAYLOAD_READ_MAX)

    def parse(reply: list[Any]) -> JobView:
        refused_whole("job", reply, job_id)
        now, *rest = reply
        scores: dict[str, int] = {state: score_int(v) for state, v in zip(STATES, rest[:4]) if _text(v)}
        key_type, length, payload, whole, count, *flat = rest[4:]
        fields: dict[str, bytes] = {}
        long_fields: dict[str, int] = {}
        odd_names = [_text(flat[i]) for i in range(0, len(flat), 3) if not _is_utf8(flat[i])]
        for i in range(0, len(flat), 3):
            name, value, size = _text(flat[i]), flat[i + 1], int(flat[i + 2])
            if len(value) == size:
                fields[name] = value
            else:
                long_fields[name] = size
        kind = _text(key_type)
        has_payload = kind == "hash" and (int(length) > 0 or bool(int(whole)))
        view = JobView(keys.queue, job_id, int(now), fields, scores, [], kind, payload, int(length), bool(int(whole)),
                       has_payload, int(count), long_fields)
        view.warnings.extend(job_warnings(fields, scores, key_type=kind, has_payload=has_payload,
                                          payload=payload if view.payload_whole else None))
        view.warnings.extend(f"the field name '{name}' is not UTF-8 (its bytes are shown as \\xNN)"
                             for name in odd_names)
        return view

    return Call("job", keys.script_keys(job_id), [job_id, payload_bytes], parse)


def payload(queue: str, job_id: str, *, max_bytes: int = PAYLOAD_READ_MAX) -> Call[bytes]:
    """A job's whole payload (for "show all" or a download); :class:`Refused` ``too_large`` above ``max_bytes``,
    without reading it."""
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    max_bytes = _int(max_bytes, "max bytes", 0, 512 * 1024 * 1024)

    def parse(reply: list[Any]) -> bytes:
        refused_whole("payload", reply, job_id)
        data: bytes = reply[3]
        return data

    return Call("payload", keys.script_keys(job_id), [job_id, max_bytes], parse)


def job_warnings(fields: dict[str, bytes], scores: dict[str, int], *, key_type: str = "hash",
                 has_payload: bool = True, payload: bytes | None = None) -> list[str]:
    """What is odd about a job, in words; empty when it is as the protocol writes it."""
    if key_type not in ("hash", "none"):
        return [f"the job's key is a {key_type}, not a hash" + (f"; its id is in {', '.join(scores)}" if scores else "")]
    if key_type == "none":
        return ["the job's hash does not exist" + (f" but its id is in {', '.join(scores)}" if scores else "")]
    present = {**fields, "payload": b""} if has_payload else fields
    warnings = [f"the core field {name!r} is missing" for name in CORE_FIELDS if name not in present]
    state = fields.get("state", b"").decode(errors="replace")
    if "state" in fields and state not in STATES:
        warnings.append(f"unknown state {state!r}")
    attempts = fields.get("attempts")
    if attempts is not None and digits(attempts) is None:
        # Quoted as text, as the row's warning says it: a bytes repr (b'two') is Python's, not the operator's.
        warnings.append(f"attempts is not a number: {attempts.decode(errors='backslashreplace')!r}")
    warnings.extend(f"the field '{name}' is not UTF-8 text (its bytes are shown as \\xNN)"
                    for name, value in fields.items() if name != "history" and not _is_utf8(value))
    if len(scores) > 1:
        warnings.append(f"the id is in more than one set: {', '.join(scores)}")
    elif not scores:
        warnings.append("the id is in none of the four sets")
    elif state in STATES and state not in scores:
        warnings.append(f"the state says {state} but the id is in {next(iter(scores))}")
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
    # A history entry of a failure keeps that attempt's error (the stream does not).
    error: str = ""
    # A claim's entry: the release and host its worker registered ('' when it did not tell: "release unknown").
    release: str = ""
    host: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.id, "move": self.move, "id": self.job_id, "from": self.source, "to": self.target,
                "attempts": self.attempts, "actor": self.actor, "ts_ms": self.ts_ms, "error": self.error,
                "release": self.release, "host": self.host}


def parse_event(entry_id: Any, data: dict[Any, Any]) -> Event:
    """One stream entry, whatever another writer put in it: bytes that are not UTF-8 come back as U+FFFD
    (escaped when shown), a ``ts`` that is not ASCII digits as 0."""
    def text(value: Any) -> str:
        return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

    get = {text(k): text(v) for k, v in data.items()}
    ts = get.get("ts", "")
    return Event(text(entry_id), get.get("move", ""), get.get("id", ""), get.get("from", ""), get.get("to", ""),
                 get.get("attempts", ""), get.get("actor", ""), int(ts) if ts.isascii() and ts.isdigit() else 0)


_PERCENT = re.compile(rb"%([0-9A-F]{2})")



def _unescape(field: bytes) -> str:
    return _PERCENT.sub(lambda m: bytes([int(m.group(1), 16)]), field).decode(errors="replace")


# An integer as the scripts read one (PROTOCOL.md, section 4): a claim entry without attempts adds one to it.
_INTEGER = re.compile(r"-?[0-9]{1,14}")
_ENTRY = re.compile(rb"([A-Za-z])(-?[0-9]+)(?:\.([^\t]*))?(?:\t([^\t]*)(?:\t(.*))?)?", re.DOTALL)


def parse_history(job_id: str, text: bytes, last_error: bytes = b"",
                  releases: dict[str, str] | None = None) -> list[Event]:
    """A job's history field as events, newest first (as :meth:`EchoMQ.events` gives them).

    An entry is ``CODE DT ['.' ATTEMPTS] [TAB ACTOR [TAB ERROR]]``: DT counts ms from the first
    entry's time, an attempts left out is the entry before's (plus one on a claim), an actor left
    out the entry before's. A fail entry without
    an error has the next fail entry's, and the newest one without an error has ``last_error``.
    Its ``from`` is the previous entry's ``to`` (empty for the oldest kept). A line that does not
    parse is kept as a move ``?`` with the line as its error.
    """
    events: list[Event] = []
    base: int | None = None
    source, attempts, actor = "", "0", ""
    # The claim before: a claim entry without a note has that one's when it was by the same actor (section 9).
    claim_actor: str | None = None
    claim_note: bytes | None = None
    untold: list[int] = []
    for line in text.split(b"\n") if text else []:
        match = _ENTRY.fullmatch(line)
        if match is None or _text(match.group(1)) not in HISTORY_CODES:
            events.append(Event("", "?", job_id, "", "", "", "", 0, _unescape(line)))
            continue
        move, target = HISTORY_CODES[_text(match.group(1))]
        dt = int(match.group(2))
        ts = dt if base is None else base + dt
        base = ts if base is None else base
        if match.group(3) is not None:
            attempts = _unescape(match.group(3))
        elif move == "claim" and _INTEGER.fullmatch(attempts):
            attempts = str(int(attempts) + 1)
        if match.group(4) is not None:
            actor = _unescape(match.group(4))
        error = _unescape(match.group(5)) if match.group(5) is not None else None
        if move == "fail" and error is None:
            untold.append(len(events))
        if move == "claim":
            note = match.group(5) if match.group(5) is not None else claim_note if claim_actor == actor else None
            claim_actor, claim_note = actor, note
            release, host = attempt_note(note, actor, releases or {})
            events.append(Event("", move, job_id, source, target, attempts, actor, ts, "", release, host))
        else:
            events.append(Event("", move, job_id, "" if move == "enqueue" else source, target, attempts, actor, ts,
                                error or ""))
        source = target
    # Newest first: a fail entry that does not tell its error has the next one's, the newest last_error.
    carried = last_error.decode(errors="replace")
    for n in range(len(events) - 1, -1, -1):
        if events[n].move != "fail":
            continue
        if untold and untold[-1] == n:
            untold.pop()
            events[n] = replace(events[n], error=carried)
        else:
            carried = events[n].error
    return events[::-1]


_HOST_IN_ID: Final = re.compile(r"([^:]+):")


def attempt_note(note: bytes | None, actor: str, releases: dict[str, str]) -> tuple[str, str]:
    """(release, host) of a claim entry's third field, ``N [HOST]`` (PROTOCOL.md, section 9): ``N`` the
    release's number in the queue's ``releases`` hash (its label from ``releases``; ``#N`` when that is gone).

    The claim leaves the host out when the worker id begins with ``HOST:`` (it is there already);
    a release '-' is a worker that told its host only. ('', '') when the entry has no note."""
    if not note:
        return "", ""
    release, _, host = note.partition(b" ")
    number = release.decode(errors="replace")
    shown_release = "" if release == b"-" else releases.get(number, f"#{number}")
    if host:
        return shown_release, _unescape(host)
    found = _HOST_IN_ID.match(actor)
    return shown_release, found.group(1) if found else ""


def history(queue: str, job_id: str) -> Call[list[Event]]:
    """A job's own history (its hash's ``history`` field), newest first: O(its length), whatever the queue holds.

    A history longer than HISTORY_READ_MAX bytes (no move writes one) is refused, in words, rather than
    shown as none."""
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)

    def parse(reply: list[Any]) -> list[Event]:
        refused_whole("history", reply, job_id)
        if int(reply[2]) > HISTORY_READ_MAX:
            # Another writer's: an empty list would pass it off as a job without a history.
            raise Refused("history", job_id, "too_long", str(int(reply[2])), str(HISTORY_READ_MAX))
        labels = reply[5:]
        releases = {_text(labels[i]): _text(labels[i + 1]) for i in range(0, len(labels) - 1, 2)}
        return parse_history(job_id, reply[3], reply[4] if len(reply) > 4 else b"", releases)

    return Call("history", keys.script_keys(job_id), [job_id], parse)


def payload_preview(payload: bytes, limit: int = 64 * 1024, *, total: int | None = None) -> tuple[str, str, bool]:
    """How to show a payload: ('json' | 'text' | 'bytes', the text, whether it was cut).

    ``total`` is the payload's whole length when ``payload`` is only its head.
    """
    cut = len(payload) > limit or (total is not None and total > len(payload))
    try:
        text = (payload if len(payload) <= limit else cut_utf8(payload, limit)).decode()
    except UnicodeDecodeError:
        return "bytes", payload[:limit].hex(" "), cut
    try:
        if not cut:
            return "json", json.dumps(json.loads(text), indent=2, ensure_ascii=False), False
    except (ValueError, RecursionError):
        pass
    return "text", text[:limit], cut


__all__ = ["QueueStats", "JobRow", "Page", "JobView", "Event", "STATES", "stats", "page", "job", "payload", "history",
           "clock", "states", "JobState", "parse_event", "parse_history", "payload_preview", "job_warnings", "validate_state",
           "score_int"]
