"""Search a state of one queue or of many, in bounded steps, by id, payload, JSON field, error, worker and time.

The work happens in Redis (``lua/search.lua``): each step is one read-only
script that walks the state's sorted set from a cursor for a few
milliseconds at most and returns what matched, so Redis serves every other
client between two steps, and a search can stop between any two. Nothing
here reads a whole set or a whole payload into Python.

The engine is sans-IO: :class:`Search` builds each step's :class:`~queues.moves.Call`
and folds its reply in, so :func:`search`, the console's live search, the CLI and the API
drive the same code.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

from .errors import EmqError, InvalidInput, Refused
from .failures import validate_group
from .keys import MAX_JOB_ID, QueueKeys, State, validate_queue_name, validate_state
from .moves import Call, MoveResult, _text, operator_move
from .operator_moves import JOB_MOVES

Order = Literal["asc", "desc"]
JsonKind = Literal["num", "str", "any", "bool", "null"]

# Oldest first where work waits, newest first where it has ended (as the queue page).
DEFAULT_ORDER: Final[dict[str, Order]] = {"pending": "asc", "active": "asc", "done": "desc", "failed": "desc"}
MAX_TEXT: Final = 4096
# A text searched for inside payloads, errors and workers (as the script's NEEDLE_MAX): a plain find of a text
# that almost matches everywhere costs Redis more the longer the text.
MAX_NEEDLE: Final = 256
MAX_PATH_SEGMENTS: Final = 32
# What one step may cost Redis: about 2 ms, 2000 entries, 100 matches (a reply of at most ~70 KiB).
STEP_BUDGET_US: Final = 2000
STEP_ENTRIES: Final = 2000
STEP_MATCHES: Final = 100
# A /.../ with one of these inside is a regular expression, which a plain find would silently misread.
_REGEX_SIGNS: Final = re.compile(r"[.*+?\[\](){}|^$\\]")
_SEGMENT: Final = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|\[(\d+)\]|([^.\[\]"=\s]+))')
_RELATIVE: Final = re.compile(r"^(\d+)\s*(ms|s|m|h|d)$")
_UNIT_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


@dataclass(frozen=True, slots=True)
class FieldFilter:
    """``user.id = 42``: the payload is JSON and its value at ``path`` equals ``value``.

    ``kind`` says how to compare: ``any`` (an unquoted number: that number, or
    a string of that text), ``num``, ``str`` (a quoted value, or unquoted text),
    ``bool`` or ``null``.
    """

    path: tuple[str | int, ...]
    kind: JsonKind
    value: str

    @classmethod
    def parse(cls, text: str) -> FieldFilter:
        if not isinstance(text, str) or "=" not in text:
            raise InvalidInput(f"a field filter is PATH=VALUE, like user.id=42, not {text!r}")
        split = _first_unquoted_equals(text)
        if split < 0:
            raise InvalidInput(f"a field filter is PATH=VALUE, like user.id=42, not {text!r}")
        path_text, value_text = text[:split], text[split + 1:]
        path = parse_path(path_text)
        value = value_text.strip()
        if not value:
            raise InvalidInput(f"field filter {text!r} has no value after '='; to match an empty string write \"\"")
        if len(_raw(value)) > MAX_NEEDLE:
            raise InvalidInput(f"a field value is at most {MAX_NEEDLE} bytes")
        if value.startswith('"'):
            if len(value) < 2 or not value.endswith('"'):
                raise InvalidInput(f"field value {value} opens a quote it does not close")
            try:
                decoded = json.loads(value)
            except ValueError:
                raise InvalidInput(f"field value {value} is not a valid JSON string") from None
            return cls(path, "str", decoded)
        if value in ("true", "false"):
            return cls(path, "bool", value)
        if value == "null":
            return cls(path, "null", value)
        if re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", value):
            return cls(path, "any", value)
        return cls(path, "str", value)

    def describe(self) -> str:
        path = format_path(self.path)
        return f"{path} = {self.text()[len(path) + 1:]}"

    def text(self) -> str:
        """As typed (``user.id=42``, ``name="Ann"``): :meth:`parse` reads it back to this filter."""
        shown = json.dumps(self.value, ensure_ascii=False) if self.kind == "str" else self.value
        return f"{format_path(self.path)}={shown}"

    def as_arg(self) -> bytes:
        segments = [("k" + p) if isinstance(p, str) else f"i{p}" for p in self.path]
        return _raw("\0".join([self.kind, self.value, *segments]))


def _raw(text: str) -> bytes:
    """Text as bytes to match: a byte that was not UTF-8 where it was typed (a command line keeps it as a lone
    surrogate) is that byte again, as the moves store it."""
    try:
        return text.encode(errors="surrogateescape")
    except UnicodeEncodeError:
        raise InvalidInput(f"{text!r} holds a character that is not text (a lone surrogate)") from None


def _first_unquoted_equals(text: str) -> int:
    quoted = escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quoted:
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == "=" and not quoted:
            return index
    return -1


def parse_path(text: str) -> tuple[str | int, ...]:
    """``user.id``, ``items[0].sku``, ``"a.b".c``: keys separated by dots, [n] for an array index."""
    source = text.strip()
    if not source:
        raise InvalidInput("a field path is needed before '=', like user.id")
    path: list[str | int] = []
    position = 0
    while position < len(source):
        if path and source[position] == ".":
            position += 1
        elif path and source[position] != "[":
            raise InvalidInput(f"cannot read field path {text!r} at {source[position:]!r}: "
                               "write keys separated by dots, [n] for an index, \"...\" around odd keys")
        match = _SEGMENT.match(source, position)
        if match is None or match.end() == position:
            raise InvalidInput(f"cannot read field path {text!r} at {source[position:]!r}: "
                               "write keys separated by dots, [n] for an index, \"...\" around odd keys")
        quoted, index, bare = match.groups()
        if index is not None:
            path.append(int(index))
        else:
            try:
                key = json.loads(f'"{quoted}"') if quoted is not None else bare
            except ValueError:
                raise InvalidInput(f"cannot read the quoted key \"{quoted}\" in field path {text!r}") from None
            if "\0" in key:
                raise InvalidInput("a field path key may not hold a NUL character")
            path.append(key)
        position = match.end()
        while position < len(source) and source[position] == " ":
            position += 1
    if len(path) > MAX_PATH_SEGMENTS:
        raise InvalidInput(f"a field path has at most {MAX_PATH_SEGMENTS} parts, not {len(path)}")
    return tuple(path)


def format_path(path: Iterable[str | int]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            plain = re.fullmatch(r"[^.\[\]\"=\s]+", part) is not None
            out += ("." if out else "") + (part if plain else '"' + part.replace('"', '\\"') + '"')
    return out


def _plain_text(value: str, what: str, *, limit: int = MAX_NEEDLE) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be text")
    if value == "":
        raise InvalidInput(f"an empty {what} matches everything: leave it out instead")
    if len(_raw(value)) > limit:
        raise InvalidInput(f"{what} is at most {limit} bytes: search for a distinctive part of it")
    if len(value) > 2 and value.startswith("/") and value.rstrip("i").endswith("/") \
            and _REGEX_SIGNS.search(value.rstrip("i")[1:-1]):
        raise InvalidInput(f"{what} {value!r} looks like a regular expression; search matches plain text only "
                           "(write the words you expect, without the slashes)")
    return value


def parse_moment(text: str, *, now_ms: int) -> int:
    """A point in time as server ms: epoch ms, ISO 8601 (UTC unless it says), or an age like ``15m`` / ``2h`` ago."""
    value = text.strip()
    if not value:
        raise InvalidInput("a time must not be empty")
    if value.isascii() and value.isdigit():
        return int(value)
    relative = _RELATIVE.match(value)
    if relative:
        return now_ms - int(relative.group(1)) * _UNIT_MS[relative.group(2)]
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"cannot read the time {text!r}: give epoch ms, an ISO time like 2026-05-01T10:00Z "
                           "or an age like 15m, 2h, 3d") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """One filter of a search, as every surface offers it.

    ``name`` is its field in the console's form and in an audit row's query and, with dashes, its
    ``emq search`` option; :attr:`attribute` holds it on :class:`Query` (``name_ms`` for a time). A new
    filter is a row here, its attribute on :class:`Query`, and its matcher in ``lua/search.lua`` under
    the name ``lua`` (a finished time needs none: it bounds the scores read, see :meth:`Query.window`).
    The CLI's option, the console's form field, the query's words and its checks all come from the row.
    """

    name: str
    # How Query.describe says it: "payload contains 'x'".
    said: str
    # The emq option's help.
    help: str
    # The name search.lua reads its value under ("" for a finished time).
    lua: str
    kind: Literal["text", "prefix", "field", "group", "moment"] = "text"
    # More emq options for it.
    aliases: tuple[str, ...] = ()
    # The console form's label for it, and the hints its field shows (placeholder, title).
    label: str = ""
    placeholder: str = ""
    title: str = ""
    # Its field is set in the fixed-width face (ids, payloads, names), not the text one.
    mono: bool = True
    # Also on the short search form of the queue page, not only on the search page's.
    short_form: bool = False
    # On the search page only when the link gave it a value (a failure group comes from a link).
    only_when_given: bool = False
    # A text filter's longest value, in bytes.
    max_bytes: int = MAX_NEEDLE

    @property
    def attribute(self) -> str:
        return self.name + "_ms" if self.kind == "moment" else self.name

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")


# In the order the console's form shows them and a query says them.
FILTERS: Final[tuple[SearchFilter, ...]] = (
    SearchFilter("payload", "payload contains", "plain text the payload contains (bytes, case-sensitive)", "payload",
                 label="Payload contains", placeholder="ORD-1234", short_form=True),
    SearchFilter("field", "payload field", 'PATH=VALUE for JSON payloads, like user.id=42 or items[0].sku="A-1"', "json",
                 "field", label="Field", placeholder="user.id=42",
                 title='PATH=VALUE for JSON payloads: user.id=42, items[0].sku="A-1"', short_form=True),
    SearchFilter("error", "error contains", "text the last error or an earlier attempt's contains (ASCII case-insensitive)",
                 "error", label="Error contains", placeholder="timeout", mono=False, short_form=True),
    SearchFilter("id_prefix", "id starts with", "the start of the job ids", "id_prefix", "prefix",
                 label="Id starts with", short_form=True),
    SearchFilter("group", "failure group is", "a failure group (as emq failures prints it)", "group", "group",
                 label="Failure group", only_when_given=True),
    SearchFilter("worker", "worker contains", "text the worker's name contains", "worker", label="Worker contains"),
    SearchFilter("release", "newest attempt's release is",
                 "the release the newest attempt's worker registered ('-': release unknown)", "release",
                 label="Release is", placeholder="v1.5.0",
                 title="the release the newest attempt's worker registered; - for release unknown", max_bytes=64),
    SearchFilter("host", "newest attempt's host is", "the host the newest attempt ran on (exactly)", "host",
                 label="Host is", title="the host the newest attempt ran on, exactly"),
    SearchFilter("enqueued_after", "enqueued after", "epoch ms, ISO time (UTC unless it says) or an age like 2h",
                 "created_min", "moment", label="Enqueued after", placeholder="2h, or 2026-05-01T10:00Z", mono=False),
    SearchFilter("enqueued_before", "enqueued before", "as --enqueued-after", "created_max", "moment",
                 label="Enqueued before", mono=False),
    SearchFilter("finished_after", "finished after", "when a done job finished or a failed job failed (done or failed only)",
                 "", "moment", ("--failed-after",), label="Finished or failed after", placeholder="done or failed only",
                 mono=False),
    SearchFilter("finished_before", "finished before", "as --finished-after", "", "moment", ("--failed-before",),
                 label="Finished or failed before", mono=False),
)
FILTER_NAMES: Final[tuple[str, ...]] = tuple(f.name for f in FILTERS)


@dataclass(frozen=True, slots=True)
class Query:
    """What to find in one state. Every filter given must hold; at least one must be given."""

    state: State
    id_prefix: str = ""
    payload: str = ""
    field: FieldFilter | None = None
    error: str = ""
    worker: str = ""
    group: str = ""
    release: str = ""
    host: str = ""
    enqueued_after_ms: int | None = None
    enqueued_before_ms: int | None = None
    finished_after_ms: int | None = None
    finished_before_ms: int | None = None
    order: Order | None = None

    @classmethod
    def parse(cls, *, state: str, order: str | None = None, now_ms: int = 0, **typed: str | None) -> Query:
        """Reads a query as typed (the CLI's options, the console's form): a value per name of :data:`FILTERS`,
        None or "" leaving that filter out."""
        if not state:
            raise InvalidInput("choose a state to search: pending, active, done or failed")
        unknown = set(typed) - set(FILTER_NAMES)
        if unknown:
            raise TypeError(f"no search filter is called {', '.join(sorted(unknown))}")
        given: dict[str, Any] = {}
        for f in FILTERS:
            value = typed.get(f.name)
            if not value:
                continue
            if f.kind == "moment":
                if value.strip():
                    given[f.attribute] = parse_moment(value, now_ms=now_ms)
            elif f.kind == "field":
                if value.strip():
                    given[f.attribute] = FieldFilter.parse(value)
            else:
                given[f.attribute] = value.strip() if f.kind == "prefix" else value
        if order not in (None, "", "asc", "desc"):
            raise InvalidInput(f"order must be asc or desc, not {order!r}")
        return cls(validate_state(state), order=order or None, **given).checked()  # type: ignore[arg-type]

    def checked(self) -> Query:
        validate_state(self.state)
        if self.id_prefix:
            if len(_raw(self.id_prefix)) > MAX_JOB_ID or re.search(r"[{}\x00-\x20\x7f]", self.id_prefix):
                raise InvalidInput(f"id prefix {self.id_prefix!r} cannot start any job id")
            _plain_text(self.id_prefix, "id prefix")
            # A glob or an anchor would be read as part of the id and silently match nothing.
            if self.id_prefix.endswith("*") or self.id_prefix.startswith("^"):
                raise InvalidInput(f"id prefix {self.id_prefix!r} looks like a pattern; give the plain start of the "
                                   f"ids ({self.id_prefix.strip('^*')!r}): every id that starts with it matches")
        for f in FILTERS:
            if f.kind == "text" and getattr(self, f.attribute):
                _plain_text(getattr(self, f.attribute), f.name, limit=f.max_bytes)
        if self.field is not None:
            for text in (self.field.value, *(p for p in self.field.path if isinstance(p, str))):
                if len(_raw(text)) > MAX_NEEDLE:
                    raise InvalidInput(f"a field filter's keys and value are at most {MAX_NEEDLE} bytes each")
        if self.group:
            validate_group(self.group)
            if self.state != "failed":
                raise InvalidInput(f"failure groups hold failed jobs, not {self.state} ones")
        if (self.finished_after_ms is not None or self.finished_before_ms is not None) \
                and self.state not in ("done", "failed"):
            raise InvalidInput(f"{self.state} jobs have not finished: a finished time applies to done or failed")
        for low, high, what in ((self.enqueued_after_ms, self.enqueued_before_ms, "enqueued"),
                                (self.finished_after_ms, self.finished_before_ms, "finished")):
            if low is not None and high is not None and low > high:
                raise InvalidInput(f"the {what} window is empty: its start is after its end")
        if self.is_empty:
            raise InvalidInput("give at least one filter (id prefix, payload, field, error, worker or a time): "
                               f"an empty query matches every {self.state} job; browse the state's page instead")
        return self

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, f.attribute) in (None, "") for f in FILTERS)

    @property
    def direction(self) -> Order:
        return self.order or DEFAULT_ORDER[self.state]

    def describe(self) -> str:
        """The query in words, as a confirmation and the audit log state it."""
        parts = []
        for f in FILTERS:
            value = getattr(self, f.attribute)
            if value in (None, ""):
                continue
            if f.kind == "moment":
                parts.append(f"{f.said} {_utc(value)}")
            elif f.kind == "field":
                parts.append(f"{f.said} {value.describe()}")
            else:
                parts.append(f"{f.said} {value}" if f.kind == "group" else f"{f.said} {value!r}")
        return f"{self.state} jobs whose " + " and ".join(parts) if parts else f"every {self.state} job"

    def as_dict(self) -> dict[str, Any]:
        """The query as plain values (the audit row's parameters; :meth:`from_dict` reads it back)."""
        out: dict[str, Any] = {"state": self.state}
        for f in FILTERS:
            value = getattr(self, f.attribute)
            if value in (None, ""):
                continue
            out[f.attribute] = {"path": list(value.path), "kind": value.kind, "value": value.value} \
                if f.kind == "field" else value
        if self.order:
            out["order"] = self.order
        return out

    def form_values(self) -> dict[str, str]:
        """The query as a form would type it, by name of :data:`FILTERS`, every time absolute (epoch ms)."""
        out: dict[str, str] = {}
        for f in FILTERS:
            value = getattr(self, f.attribute)
            if value not in (None, ""):
                out[f.name] = value.text() if f.kind == "field" else str(value)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Query:
        try:
            raw = dict(data)
            field_data = raw.pop("field", None)
            found = FieldFilter(tuple(field_data["path"]), field_data["kind"], field_data["value"]) \
                if field_data else None
            return cls(field=found, **raw).checked()
        except (TypeError, KeyError) as error:
            raise InvalidInput(f"not a search query: {error}") from None

    def filter_args(self) -> list[Any]:
        """The filters as search.lua's name, value pairs (a finished time bounds the scores instead)."""
        args: list[Any] = []
        for f in FILTERS:
            value = getattr(self, f.attribute)
            if value in (None, "") or not f.lua:
                continue
            if f.kind == "field":
                value = value.as_arg()
            elif f.kind in ("text", "prefix"):
                # Lua's string.lower folds ASCII only, so the error text is folded the same way here.
                value = _raw(value).lower() if f.name == "error" else _raw(value)
            args += [f.lua, value]
        return args

    def window(self) -> tuple[str, str]:
        low = "-inf" if self.finished_after_ms is None else str(self.finished_after_ms)
        high = "+inf" if self.finished_before_ms is None else str(self.finished_before_ms)
        return low, high


def _utc(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


@dataclass(frozen=True, slots=True)
class Match:
    """A job that matched, with the state and attempts it had at that instant (what a bulk move expects)."""

    queue: str
    id: str
    score: int
    state: str
    attempts: str
    payload_head: bytes
    payload_length: int
    last_error: str
    worker: str
    found_in: str

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "id": self.id, "score": self.score, "state": self.state,
                "attempts": self.attempts, "payload_head": self.payload_head.decode(errors="replace"),
                "payload_length": self.payload_length, "last_error": self.last_error, "worker": self.worker,
                "found_in": self.found_in}


@dataclass(frozen=True, slots=True)
class Slice:
    """One search script's reply."""

    in_window: int
    looked_at: int
    cursor: tuple[str, str]
    done: bool
    missing: int
    unreadable: int
    high: str
    matches: list[Match]
    redis_us: int = 0
    # Where the next call resumes inside the entry after the cursor ("" for none): a long payload's find ran out
    # of budget part-way.
    resume: str = ""


def search_call(queue: str, query: Query, *, cursor: tuple[str, str] = ("", ""), entries: int = STEP_ENTRIES,
                budget_us: int = STEP_BUDGET_US, matches: int = STEP_MATCHES, high: str | None = None,
                lean: bool = False, resume: str = "") -> Call[Slice]:
    """One bounded step of a search of ``queue``: resumes after ``cursor`` (as the previous slice returned it).

    ``high`` overrides the query's highest score ('now': the millisecond before the server's time now);
    ``lean`` matches carry id, score, state and attempts only; ``resume`` is the previous slice's.
    """
    keys = QueueKeys(queue)
    low, query_high = query.window()
    args: list[Any] = [query.state, query.direction, cursor[0], cursor[1], low, high or query_high, entries,
                       budget_us, matches, *query.filter_args(), *(["lean", "1"] if lean else []),
                       *(["resume", resume] if resume else [])]

    def parse(reply: list[Any]) -> Slice:
        if _text(reply[0]) == "REFUSED":
            raise EmqError(f"the {query.state} key of {keys.queue} is a {_text(reply[3])}, not a sorted set: "
                           "it cannot be searched (emq check says more)")
        _, in_window, looked, score, job_id, done, missing, unreadable, used_high, used_us, resume_at, *flat = reply
        found = [Match(keys.queue, _text(flat[i]), int(float(_text(flat[i + 1]))), _text(flat[i + 2]),
                       _text(flat[i + 3]), flat[i + 4] if isinstance(flat[i + 4], bytes) else _text(flat[i + 4]).encode(),
                       int(flat[i + 5]), _bytes(flat[i + 6]).decode(errors="replace"),
                       _bytes(flat[i + 7]).decode(errors="replace"), query.state)
                 for i in range(0, len(flat), 8)]
        return Slice(int(in_window), int(looked), (_text(score), _text(job_id)), bool(int(done)), int(missing),
                     int(unreadable), _text(used_high), found, int(used_us), _text(resume_at))

    return Call("search", keys.script_keys(None), args, parse)


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


# What a step costs Redis beyond the time its script measures (the call, its reply): charged with every step.
STEP_OVERHEAD_US: Final = 50


class Pacer:
    """Spaces search steps so that together they keep Redis busy at most ``duty`` of the time, one at a time.

    After a step that ran ``c`` seconds in Redis, the next step of every
    search sharing this pacer waits until ``c * (1 / duty - 1)`` more has
    passed: one search gets a pause in proportion to each step's cost, and
    many searches sharing one pacer (a console process) share one duty cycle
    and never have two steps in Redis at once (another client then waits for
    one step at most), however many run. Thread-safe; it never sleeps itself,
    so a thread sleeps with ``time.sleep`` and a coroutine with ``asyncio.sleep``.
    """

    # A step's turn is taken back after this long, should its end never be reported.
    TURN_EXPIRES_S: Final = 30.0
    # How often to look again while another search's step is in Redis.
    BUSY_POLL_S: Final = 0.002

    def __init__(self, duty: float) -> None:
        if not 0 < duty <= 1:
            raise InvalidInput(f"a search's duty cycle is a fraction in (0, 1], not {duty!r}")
        self.duty = duty
        self._lock = threading.Lock()
        self._ready_at = 0.0
        self._turn_since: float | None = None

    def begin(self) -> float:
        """0.0: the caller's step may go now (its turn is taken: report it with :meth:`end`); else how long to
        wait before asking again."""
        with self._lock:
            now = time.monotonic()
            if self._turn_since is not None and now - self._turn_since < self.TURN_EXPIRES_S:
                return self.BUSY_POLL_S
            if now < self._ready_at:
                return self._ready_at - now
            self._turn_since = now
            return 0.0

    def end(self, redis_s: float) -> None:
        """The step that had the turn ran ``redis_s`` seconds in Redis."""
        with self._lock:
            self._turn_since = None
            self._ready_at = max(self._ready_at, time.monotonic()) + redis_s * (1 / self.duty - 1)


@dataclass(frozen=True, slots=True)
class Limits:
    """What one search may cost in all: queues, matches, wall time and Redis time (None: no limit).

    The first ``detail`` matches come with their payload head, error and
    worker; the rest carry id, state and attempts only (all a count or a bulk
    move needs), many more to a step. ``duty`` is the share of Redis's time a
    search may keep it busy (a pause after each step in proportion to its
    cost), when no shared :class:`Pacer` is given.
    """

    max_queues: int = 100
    max_matches: int | None = 10_000
    seconds: float | None = 120.0
    redis_seconds: float | None = 30.0
    duty: float = 0.5
    detail: int | None = None
    step_budget_us: int = STEP_BUDGET_US
    step_entries: int = STEP_ENTRIES
    step_matches: int = STEP_MATCHES
    lean_step_matches: int = 1000


@dataclass
class QueueProgress:
    queue: str
    scanned: int = 0
    in_window: int = 0
    matched: int = 0
    missing: int = 0
    unreadable: int = 0
    done: bool = False
    error: str = ""


@dataclass(frozen=True, slots=True)
class Step:
    """What one step found, and where the whole search stands after it."""

    queue: str
    matches: list[Match]
    progress: QueueProgress
    scanned: int
    total: int
    matched: int
    queues_done: int
    queues_total: int


@dataclass
class Search:
    """A search over ``queues`` (one or many), step by step; drive it with :func:`search`, or send its steps yourself.

    A job is reported once, however many times workers move it out of the
    set and back in while the search runs; what it matched with (state,
    attempts) is what it had when it was first found. In done and failed the
    window ends when the search began (a job that finishes again later lies
    beyond it); in pending and active, where a job comes back with a due
    time or lease deadline anywhere, the ids found so far are remembered.
    """

    query: Query
    queues: list[str]
    limits: Limits = field(default_factory=Limits)
    pacer: Pacer | None = None
    # Which of a step's matches the reader is told of (the others are neither counted nor shown), with the sync
    # client: a reader who may not see some payload values is not told that a text matched inside them.
    keep: Callable[[Any, list[Match]], list[Match]] | None = None
    progress: list[QueueProgress] = field(init=False)
    skipped_queues: int = field(init=False, default=0)
    stopped: str = field(init=False, default="")
    started: float = field(init=False, default_factory=time.monotonic)
    redis_us: int = field(init=False, default=0)
    _index: int = field(init=False, default=0)
    _cursor: tuple[str, str] = field(init=False, default=("", ""))
    _high: str | None = field(init=False, default=None)
    _resume: str = field(init=False, default="")
    _seen: set[tuple[str, str]] = field(init=False, default_factory=set)

    def __post_init__(self) -> None:
        self.query.checked()
        names = list(dict.fromkeys(validate_queue_name(q) for q in self.queues))
        if not names:
            raise InvalidInput("no queue to search")
        self.skipped_queues = max(len(names) - self.limits.max_queues, 0)
        self.queues = names[:self.limits.max_queues]
        self.progress = [QueueProgress(q) for q in self.queues]
        if self.pacer is None:
            self.pacer = Pacer(self.limits.duty)

    @property
    def finished(self) -> bool:
        return bool(self.stopped) or self._index >= len(self.queues)

    @property
    def matched(self) -> int:
        return sum(p.matched for p in self.progress)

    @property
    def scanned(self) -> int:
        return sum(p.scanned for p in self.progress)

    @property
    def total(self) -> int:
        return sum(p.in_window for p in self.progress)

    def next_call(self) -> Call[Slice]:
        if self.finished:
            raise InvalidInput("the search has finished")
        limit = self.limits
        lean = limit.detail is not None and self.matched >= limit.detail
        room = limit.lean_step_matches if lean else limit.step_matches
        if limit.max_matches is not None:
            room = min(room, limit.max_matches - self.matched)
        if not lean and limit.detail is not None:
            room = min(room, limit.detail - self.matched)
        high = self._high
        if high is None and self.query.state in ("done", "failed") and self.query.finished_before_ms is None:
            high = "now"
        return search_call(self.queues[self._index], self.query, cursor=self._cursor, entries=limit.step_entries,
                           budget_us=limit.step_budget_us, matches=max(room, 1), high=high, lean=lean,
                           resume=self._resume)

    def feed(self, result: Slice | Exception) -> Step:
        """Folds one step's reply (or the error it raised) in; returns what it found."""
        progress = self.progress[self._index]
        new: list[Match] = []
        if isinstance(result, Exception):
            # One queue that cannot be read (its node down, say) does not end a search of many.
            if len(self.queues) == 1:
                raise result
            progress.error = str(result)
            progress.done = True
        else:
            self.redis_us += result.redis_us + STEP_OVERHEAD_US
            progress.scanned += result.looked_at
            progress.in_window = result.in_window
            progress.missing += result.missing
            progress.unreadable += result.unreadable
            if self.query.state in ("pending", "active"):
                for match in result.matches:
                    key = (match.queue, match.id)
                    if key not in self._seen:
                        self._seen.add(key)
                        new.append(match)
            else:
                new = result.matches
            progress.matched += len(new)
            self._cursor = result.cursor
            self._resume = result.resume
            self._high = result.high
            progress.done = result.done
        if progress.done:
            self._index += 1
            self._cursor = ("", "")
            self._resume = ""
            self._high = None
        limit = self.limits
        if limit.max_matches is not None and self.matched >= limit.max_matches and not self.finished:
            self.stopped = f"stopped at {limit.max_matches} matches"
        elif limit.seconds is not None and time.monotonic() - self.started > limit.seconds and not self.finished:
            self.stopped = f"stopped after {limit.seconds:.0f} s"
        elif limit.redis_seconds is not None and self.redis_us > limit.redis_seconds * 1e6 and not self.finished:
            self.stopped = f"stopped after {limit.redis_seconds:g} s of Redis time"
        return Step(progress.queue, new, replace(progress), self.scanned, self.total, self.matched,
                    sum(p.done for p in self.progress), len(self.queues))

    def pause_s(self) -> float:
        """0.0 when the next step may run now (its turn is taken: :meth:`run_step` must follow), else how long
        to wait before asking again (the duty cycle, or another search's step in Redis)."""
        assert self.pacer is not None
        return self.pacer.begin()

    def run_step(self, mq: Any) -> Step | None:
        """One step with the sync client, in the turn :meth:`pause_s` gave; gives the turn back with its cost.
        None when the search has finished (it was stopped since)."""
        assert self.pacer is not None
        cost_us = 0
        try:
            if self.finished:
                return None
            call = self.next_call()
            try:
                result: Slice | Exception = mq.run(call)
            except InvalidInput:
                raise
            except Exception as error:  # one queue unreadable: feed records it
                result = error
            cost_us = (result.redis_us if isinstance(result, Slice) else 0) + STEP_OVERHEAD_US
            if self.keep is not None and isinstance(result, Slice) and result.matches:
                result = replace(result, matches=self.keep(mq, result.matches))
            return self.feed(result)
        finally:
            self.pacer.end(cost_us / 1e6)

    def steps(self, mq: Any, *, should_stop: Callable[[], bool] = lambda: False,
              sleep: Callable[[float], None] = time.sleep) -> Iterator[Step]:
        """The steps, run with the sync client (:class:`~queues.EchoMQ`) as they are iterated, each after its
        pause."""
        while not self.finished and not should_stop():
            while (pause := self.pause_s()) > 0:
                sleep(pause)
            if should_stop():
                assert self.pacer is not None
                self.pacer.end(0.0)
                return
            step = self.run_step(mq)
            if step is None:
                return
            yield step

    def stop(self, reason: str) -> None:
        if not self.finished:
            self.stopped = reason

    def summary(self) -> str:
        seconds = time.monotonic() - self.started
        where = f"{self.query.state} jobs of {self.queues[0]}" if len(self.queues) == 1 else \
            f"{self.query.state} jobs of {len(self.queues)} queues"
        text = f"{self.matched} matched of {self.scanned} {where} looked at, in {seconds:.1f} s"
        notes = [self.stopped] if self.stopped else []
        if self.skipped_queues:
            notes.append(f"{self.skipped_queues} more queues not searched (at most {self.limits.max_queues})")
        unreadable = sum(p.unreadable for p in self.progress)
        if unreadable:
            notes.append(f"{unreadable} payloads could not be read (over 1 MiB; for a field filter, "
                         "not JSON or over 64 KiB)")
        failed = [p for p in self.progress if p.error]
        if failed:
            notes.append(f"{len(failed)} queues could not be read ({failed[0].queue}: {failed[0].error})")
        return text + (f" ({'; '.join(notes)})" if notes else "")


def search(mq: Any, query: Query, queues: list[str], *, limits: Limits | None = None,
           should_stop: Callable[[], bool] = lambda: False) -> Iterator[Step]:
    """Runs a search with the sync client, one step per iteration; stop iterating (or ``should_stop``) to stop."""
    return Search(query, queues, limits or Limits()).steps(mq, should_stop=should_stop)


# Which state each move over a search starts from (a job found elsewhere is refused by the move itself).
MATCH_MOVES: Final[dict[str, tuple[str, ...]]] = {move.name: move.applies_to for move in JOB_MOVES if move.over_search}
MOVE_CHUNK: Final = 100


@dataclass
class MoveTally:
    """What a bulk move over a search did so far; ``skipped`` moved on between being found and being moved."""

    moved: int = 0
    skipped: int = 0
    missing: int = 0
    errors: int = 0

    def add(self, other: MoveTally) -> None:
        self.moved += other.moved
        self.skipped += other.skipped
        self.missing += other.missing
        self.errors += other.errors

    def describe(self) -> str:
        return f"moved {self.moved}, skipped {self.skipped}, missing {self.missing}" + (
            f", errors {self.errors}" if self.errors else "")


def check_match_move(move: str, state: str) -> None:
    if move not in MATCH_MOVES:
        raise InvalidInput(f"unknown move {move!r}: choose {', '.join(MATCH_MOVES)}")
    if state not in MATCH_MOVES[move]:
        raise InvalidInput(f"{move} applies to {' or '.join(MATCH_MOVES[move])} jobs, not to {state} ones")


def move_matches(mq: Any, move: str, engine: Search, *, at_most: int | None = None, actor: str = "",
                 chunk: int = MOVE_CHUNK) -> Iterator[MoveTally]:
    """Moves what the search finds, as it finds it: one bounded step at a time, each a chunk of compare-and-moves.

    Every job is moved only if it still has the state and attempts it had
    when the search matched it, so one that moved on since is skipped, never
    touched. At most ``at_most`` jobs are acted on (the count an operator
    confirmed): jobs that came to match later are left alone.
    """
    check_match_move(move, engine.query.state)
    if engine.limits.detail != 0:
        engine.limits = replace(engine.limits, detail=0)
    taken = 0
    for step in engine.steps(mq):
        matches = step.matches
        if at_most is not None:
            matches = matches[:max(at_most - taken, 0)]
        taken += len(matches)
        for start in range(0, len(matches), chunk):
            tally = MoveTally()
            calls = []
            for m in matches[start:start + chunk]:
                try:
                    calls.append(operator_move(move, m.queue, m.id, expect_state=m.state,
                                               expect_attempts=m.attempts, actor=actor))
                except InvalidInput:
                    # Its hash holds a state or attempts no move could expect: left for the integrity check.
                    tally.skipped += 1
            for result in mq.run_many(calls):
                if isinstance(result, MoveResult):
                    tally.moved += 1
                elif isinstance(result, Refused) and result.reason == "missing":
                    tally.missing += 1
                elif isinstance(result, Refused):
                    tally.skipped += 1
                else:
                    tally.errors += 1
            yield tally
        if not matches:
            yield MoveTally()
        if at_most is not None and taken >= at_most:
            engine.stop(f"acted on the {at_most} jobs confirmed")
            return


__all__ = ["FieldFilter", "Query", "Match", "Slice", "Limits", "Step", "Search", "search",
           "search_call", "move_matches", "MoveTally", "MATCH_MOVES", "check_match_move", "parse_path", "format_path",
           "parse_moment", "DEFAULT_ORDER", "Pacer", "MAX_NEEDLE"]
