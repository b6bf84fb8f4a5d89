"""Each move as a call: the script, its KEYS and ARGV, and how to read its reply.

The sync and asyncio clients only execute these calls, so the two cannot
drift apart, and a pipeline can batch any of them.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from .errors import Duplicate, InvalidInput, NothingToClaim, Paused, Refused
from .keys import STATES, QueueKeys, validate_job_id, validate_new_job_id, validate_state
from .operator_moves import job_move

T = TypeVar("T")

MAX_PAYLOAD_BYTES: Final = 1024 * 1024
# The scripts cut last_error to this many bytes at a character boundary; the client cuts the same way
# so that it never sends more than is kept.
MAX_ERROR_BYTES: Final = 4096
MAX_BATCH: Final = 1000
MAX_LEASE_MS: Final = 86_400_000
MAX_DELAY_MS: Final = 10 * 365 * 86_400_000
MAX_TRIES: Final = 1_000_000
# The largest integer a script accepts or writes: 14 digits stay exact in Lua's doubles and print
# without an exponent.
MAX_INT: Final = 99_999_999_999_999
DEFAULT_MAX_ATTEMPTS: Final = 3
DEFAULT_LEASE_MS: Final = 30_000
DEFAULT_BACKOFF_MS: Final = 1_000
_CLAIM_ID = re.compile(r"^[0-9a-f]{1,64}$")


def _wire(value: Any) -> Any:
    """A key or argument as it is sent: text holding a byte that was not UTF-8 (a lone surrogate, as
    ``surrogateescape`` decodes another writer's id) goes as its bytes again, so such a job can be named."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:
            return value.encode(errors="surrogateescape")
    return value


@dataclass(frozen=True, slots=True)
class Call(Generic[T]):
    script: str
    keys: Sequence[str | bytes]
    args: list[Any]
    parse: Callable[[Any], T]
    # enqueue names its queue so the client can add it to the queue registry.
    registers: str | None = None
    # claim and finish_claim name their queue so the client can add the lease deadline to the lease index.
    leases: str | None = None

    def __post_init__(self) -> None:
        # ASCII text, the common case, is sent as it is without a call per value.
        object.__setattr__(self, "keys", [key if type(key) is str and key.isascii() else _wire(key)
                                          for key in self.keys])
        object.__setattr__(self, "args", [arg if type(arg) is str and arg.isascii() else _wire(arg)
                                          for arg in self.args])


@dataclass(frozen=True, slots=True)
class FencingToken:
    """What a claim hands its worker: attempts plus the claim's random id.

    Written ``"<attempts>.<claim_id>"``. Attempts alone can repeat after a
    failover loses a claim's increment; the random claim id cannot.
    """

    attempts: int
    claim_id: str = ""

    def __str__(self) -> str:
        return f"{self.attempts}.{self.claim_id}" if self.claim_id else str(self.attempts)

    @classmethod
    def parse(cls, text: object) -> FencingToken:
        if isinstance(text, FencingToken):
            return text
        if isinstance(text, int) and not isinstance(text, bool):
            text = str(text)
        if not isinstance(text, str):
            raise InvalidInput(f"token must be text like 3.9f86d0, not {type(text).__name__}")
        attempts, dot, claim_id = text.partition(".")
        if not re.fullmatch(r"[0-9]{1,14}", attempts) or int(attempts) < 1:
            raise InvalidInput(f"token {text!r} is not valid: it must start with the attempts (an integer >= 1)")
        if dot and not _CLAIM_ID.match(claim_id):
            raise InvalidInput(f"token {text!r} is not valid: the claim id after '.' must be lowercase hex")
        return cls(int(attempts), claim_id)


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    queue: str
    id: str
    attempts: int
    claim_id: str
    payload: bytes
    lease_deadline_ms: int

    @property
    def token(self) -> FencingToken:
        return FencingToken(self.attempts, self.claim_id)


@dataclass(frozen=True, slots=True)
class MoveResult:
    """An operator move that happened: the state the job is in now."""

    move: str
    id: str
    state: str
    attempts: str
    # edit and restore: the number the payload they replaced is kept under ('' when it stayed the same).
    version: str = ""
    # clone: the new job's id and when it falls due (server ms); state and attempts are the source's.
    new_id: str = ""
    due_ms: int | None = None

    def describe(self) -> str:
        if self.new_id:
            return (f"{job_move(self.move).past}: job {self.id} ({self.state or 'no state'}, attempts "
                    f"{self.attempts or 0}) as new job {self.new_id}, pending")
        kept = f"; the payload it replaced is kept as version {self.version}" if self.version else ""
        return f"{job_move(self.move).past}: job {self.id} is now {self.state} (attempts {self.attempts or 0}){kept}"


@dataclass(frozen=True, slots=True)
class BatchResult:
    moved: int
    missing: int
    skipped: int
    more: bool
    to_failed: int = 0
    # recover_expired only: the earliest lease deadline still ahead (ms; 0 when the queue holds none).
    next_deadline_ms: int = 0


def _text(value: Any) -> str:
    """A reply as text; bytes that are not UTF-8 (another writer's) as ``\\xNN``, so no reply fails to read."""
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else str(value)


def digits(value: Any, max_length: int = 19) -> int | None:
    """A field another writer may have filled with anything, as an integer when it is ASCII digits only
    (``str.isdigit`` also takes '²' and '١٢٣', which ``int`` then refuses or reads as 123)."""
    text = _text(value)
    return int(text) if 0 < len(text) <= max_length and text.isascii() and text.isdigit() else None


def _refusal(move: str, job_id: str, reply: list[Any]) -> Refused:
    _, reason, state, attempts = (_text(v) for v in reply)
    return Refused(move, job_id, reason, state, attempts)


def refused_whole(move: str, reply: Any, job_id: str = "") -> None:
    """Raises the refusal a script answered for the whole call (a key of another type, say)."""
    if isinstance(reply, list) and reply and _text(reply[0]) == "REFUSED":
        raise _refusal(move, job_id, reply)


def cut_utf8(data: bytes, limit: int) -> bytes:
    """At most ``limit`` bytes, never splitting a UTF-8 character (as the scripts cut)."""
    if len(data) <= limit:
        return data
    end = limit
    while end > limit - 3 and 0x80 <= data[end] < 0xC0:
        end -= 1
    return data[:end]


_DECIMAL = re.compile(r"-?[0-9]{1,14}")


def _int(value: object, what: str, minimum: int, maximum: int = MAX_INT) -> int:
    """An integer, or its text as the scripts accept it: ASCII digits only, no sign but '-', no spaces."""
    if isinstance(value, bool) or not isinstance(value, int):
        if not isinstance(value, (str, bytes)) or not _DECIMAL.fullmatch(_text(value)):
            raise InvalidInput(f"{what} must be an integer, not {value!r}")
        value = int(_text(value))
    if value < minimum or value > maximum:
        raise InvalidInput(f"{what} must be between {minimum} and {maximum}, not {value}")
    return value


def _payload(payload: object) -> bytes:
    if isinstance(payload, str):
        payload = payload.encode()
    if not isinstance(payload, bytes):
        raise InvalidInput(f"payload must be text or bytes, not {type(payload).__name__}")
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise InvalidInput(f"payload is {len(payload)} bytes; the limit is {MAX_PAYLOAD_BYTES}")
    return payload


# A new job's id: 12 characters of 0-9 A-Z a-z from 12 random bytes (each byte mod 62: about 71 random bits,
# the first eight characters a little likelier). Every job holds its id twice, in its key and as its set's
# member, and 12 characters cost each job about 30 B less than 24 hex digits (BENCHMARKS.md). An id collides
# with a live job's only as a Duplicate, which writes nothing. No id begins with '-', so none reads as an option.
_ID_ALPHABET: Final = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BYTE_TO_ID_CHAR: Final = bytes(_ID_ALPHABET[byte % len(_ID_ALPHABET)] for byte in range(256))


def new_job_id() -> str:
    return os.urandom(12).translate(_BYTE_TO_ID_CHAR).decode()


def new_claim_id() -> str:
    return os.urandom(8).hex()


def enqueue(queue: str, payload: object, *, job_id: str | None = None, delay_ms: int = 0,
            max_attempts: int = DEFAULT_MAX_ATTEMPTS, actor: str = "") -> Call[str]:
    """Returns the id; a duplicate id raises :class:`Duplicate` (nothing written)."""
    keys = QueueKeys(queue)
    job_id = validate_new_job_id(job_id) if job_id is not None else new_job_id()
    data = _payload(payload)
    delay_ms = _int(delay_ms, "delay_ms", 0, MAX_DELAY_MS)
    max_attempts = _int(max_attempts, "max_attempts", 1, MAX_TRIES)

    def parse(reply: list[Any]) -> str:
        refused_whole("enqueue", reply, job_id)
        if _text(reply[0]) == "DUPLICATE":
            raise Duplicate(job_id, _text(reply[1]), _text(reply[2]))
        return job_id

    return Call("enqueue", keys.script_keys(job_id), [job_id, data, delay_ms, max_attempts, actor], parse,
                registers=keys.queue)


def enqueue_many(queue: str, payloads: list[object], *, job_ids: list[str] | None = None, delay_ms: int = 0,
                 max_attempts: int = DEFAULT_MAX_ATTEMPTS, actor: str = "") -> Call[list[str | Duplicate]]:
    """Adds up to 1000 jobs in one script; each entry of the result is the id or its :class:`Duplicate`."""
    keys = QueueKeys(queue)
    if not 1 <= len(payloads) <= MAX_BATCH:
        raise InvalidInput(f"give between 1 and {MAX_BATCH} payloads, not {len(payloads)}")
    if job_ids is not None and len(job_ids) != len(payloads):
        raise InvalidInput(f"{len(job_ids)} ids for {len(payloads)} payloads")
    ids = [validate_new_job_id(i) for i in job_ids] if job_ids is not None else [new_job_id() for _ in payloads]
    if len(set(ids)) != len(ids):
        raise InvalidInput("a job id is given twice")
    args: list[Any] = [_int(delay_ms, "delay_ms", 0, MAX_DELAY_MS),
                       _int(max_attempts, "max_attempts", 1, MAX_TRIES), actor]
    for job_id, payload in zip(ids, payloads):
        args += [job_id, _payload(payload)]

    def parse(reply: list[Any]) -> list[str | Duplicate]:
        refused_whole("enqueue", reply)
        return [job_id if not isinstance(r, list) else Duplicate(job_id, _text(r[1]), _text(r[2]))
                for job_id, r in zip(ids, reply[1:])]

    return Call("enqueue_many", keys.script_keys(None), args, parse, registers=keys.queue)


def enqueue_by_script(script: str, queue: str, job_id: str, args: Sequence[Any], parse: Callable[[Any], T], *,
                      own_keys: Sequence[str] = ()) -> Call[T]:
    """A job written by a caller's own script (``PACKAGE:NAME``, see :func:`queues.scripts.script`), run as a move.

    KEYS are the six of every move (the sixth the job's hash), then the caller's keys of the queue's slot
    named by ``own_keys`` (:meth:`QueueKeys.own`), so the script may write them in the same atomic step;
    ARGV are ``args`` as given and ``parse`` reads the reply. The queue is registered as after an enqueue.
    The script must keep the job as every move does (PROTOCOL.md, sections 2 and 4).
    """
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    return Call(script, [*keys.script_keys(job_id), *(keys.own(name) for name in own_keys)], list(args), parse,
                registers=keys.queue)


def claim(queue: str, *, lease_ms: int = DEFAULT_LEASE_MS, worker: str = "", count: int = 1,
          claim_id: str | None = None) -> Call[list[ClaimedJob]]:
    """Raises :class:`NothingToClaim` (with ``next_due_ms`` and ``now_ms``) when nothing claimable is due."""
    keys = QueueKeys(queue)
    args = _claim_args(lease_ms, claim_id, worker, count)
    return Call("claim", keys.script_keys(None), args, _claim_reply(keys.queue, args[1]), leases=keys.queue)


def _claim_args(lease_ms: int, claim_id: str | None, worker: str, count: int) -> list[Any]:
    lease_ms = _int(lease_ms, "lease_ms", 1, MAX_LEASE_MS)
    count = _int(count, "count", 1, MAX_BATCH)
    claim_id = claim_id or new_claim_id()
    if not _CLAIM_ID.match(claim_id):
        raise InvalidInput("claim_id must be 1..64 characters 0-9 a-f")
    return [lease_ms, claim_id, worker, count]


def _claim_reply(queue: str, claim_id: str) -> Callable[[list[Any]], list[ClaimedJob]]:
    """How claim's reply reads (claim's own, or the claim half of finish_claim's)."""
    def parse(reply: list[Any]) -> list[ClaimedJob]:
        refused_whole("claim", reply)
        if _text(reply[0]) == "PAUSED":
            raise Paused(queue, digits(reply[1]), _text(reply[2]), _text(reply[3]))
        if _text(reply[0]) == "EMPTY":
            raise NothingToClaim(f"nothing to claim in {queue}", int(_text(reply[1])) if reply[1] else None,
                                 int(_text(reply[2])))
        deadline = int(_text(reply[1]))
        rest = reply[2:]
        return [ClaimedJob(queue, _text(rest[i]), int(rest[i + 1]), claim_id, rest[i + 2], deadline)
                for i in range(0, len(rest), 3)]

    return parse


def _lease_call(move: str, queue: str, job_id: str, token: object, extra: list[Any],
                parse_ok: Callable[[list[Any]], T]) -> Call[T]:
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    fencing = FencingToken.parse(token)

    def parse(reply: list[Any]) -> T:
        refused_whole(move, reply, job_id)
        return parse_ok(reply)

    return Call(move, keys.script_keys(job_id), [job_id, fencing.attempts, fencing.claim_id, *extra], parse)


def extend(queue: str, job_id: str, token: object, *, lease_ms: int = DEFAULT_LEASE_MS, actor: str = "") -> Call[int]:
    """Returns the new lease deadline (ms); raises :class:`Refused` when the lease is lost."""
    lease_ms = _int(lease_ms, "lease_ms", 1, MAX_LEASE_MS)
    return _lease_call("extend", queue, job_id, token, [lease_ms, actor], lambda r: int(_text(r[1])))


def complete(queue: str, job_id: str, token: object, *, actor: str = "") -> Call[int]:
    return _lease_call("complete", queue, job_id, token, [actor], lambda r: int(_text(r[1])))


def complete_many(queue: str, jobs: list[tuple[str, object]], *, actor: str = "") -> Call[list[int | Refused]]:
    """Completes several held jobs in one script, each fenced on its own.

    ``jobs`` is a list of (id, token). The result has one entry per job, in
    order: the finish time (ms) or the :class:`Refused` that job got.
    """
    keys = QueueKeys(queue)
    if not 1 <= len(jobs) <= MAX_BATCH:
        raise InvalidInput(f"give between 1 and {MAX_BATCH} jobs, not {len(jobs)}")
    args: list[Any] = [actor]
    ids: list[str] = []
    for job_id, token in jobs:
        fencing = FencingToken.parse(token)
        ids.append(validate_job_id(job_id))
        args += [job_id, fencing.attempts, fencing.claim_id]
    if len(set(ids)) != len(ids):
        raise InvalidInput("a job is given twice")

    def parse(reply: list[Any]) -> list[int | Refused]:
        refused_whole("complete", reply)
        finished = int(_text(reply[0]))
        return [finished if not isinstance(r, list) else _refusal("complete", job_id, r)
                for job_id, r in zip(ids, reply[1:])]

    return Call("complete_many", keys.script_keys(None), args, parse)


def fail(queue: str, job_id: str, token: object, *, error: str = "", backoff_ms: int = DEFAULT_BACKOFF_MS,
         actor: str = "") -> Call[str]:
    """Returns the state the job went to: pending (will be retried) or failed."""
    if not isinstance(error, str):
        raise InvalidInput("error must be text")
    message = cut_utf8(error.encode(errors="surrogateescape"), MAX_ERROR_BYTES)
    backoff_ms = _int(backoff_ms, "backoff_ms", 0, MAX_LEASE_MS)
    return _lease_call("fail", queue, job_id, token, [message, backoff_ms, actor], lambda r: _text(r[1]))


@dataclass(frozen=True, slots=True)
class Report:
    """A held job's outcome, as :func:`finish_claim` reports it: complete, or fail with ``error``."""

    id: str
    token: object
    outcome: str = "complete"
    error: str = ""


@dataclass(frozen=True, slots=True)
class FinishedAndClaimed:
    """What :func:`finish_claim` did: each report's answer in order (the finish time of a completion,
    the state a failure went to, or the :class:`Refused` it got) and the claim's jobs, or the
    :class:`NothingToClaim` or :class:`Paused` a claim alone would have raised."""

    finished: list[int | str | Refused]
    claimed: list[ClaimedJob] | NothingToClaim | Paused


def finish_claim(queue: str, reports: list[Report], *, lease_ms: int = DEFAULT_LEASE_MS, count: int = 1,
                 backoff_ms: int = DEFAULT_BACKOFF_MS, actor: str = "",
                 claim_id: str | None = None) -> Call[FinishedAndClaimed]:
    """Completes or fails the held jobs in ``reports`` (each fenced on its own) and claims up to ``count``
    jobs, in one script: what ``complete_many`` or ``fail`` and then ``claim`` would do."""
    keys = QueueKeys(queue)
    if len(reports) > MAX_BATCH:
        raise InvalidInput(f"give at most {MAX_BATCH} reports, not {len(reports)}")
    lease_ms, claim_id, _, count = _claim_args(lease_ms, claim_id, actor, count)
    parse_claim = _claim_reply(keys.queue, claim_id)
    args: list[Any] = [actor, lease_ms, claim_id, count, _int(backoff_ms, "backoff_ms", 0, MAX_LEASE_MS)]
    ids: list[str] = []
    for report in reports:
        fencing = FencingToken.parse(report.token)
        ids.append(validate_job_id(report.id))
        if report.outcome not in ("complete", "fail"):
            raise InvalidInput(f"outcome must be complete or fail, not {report.outcome!r}")
        if not isinstance(report.error, str):
            raise InvalidInput("error must be text")
        error = cut_utf8(report.error.encode(errors="surrogateescape"), MAX_ERROR_BYTES) if report.error else b""
        args += [report.id, fencing.attempts, fencing.claim_id, report.outcome, error]
    if len(set(ids)) != len(ids):
        raise InvalidInput("a job is given twice")

    def parse(reply: list[Any]) -> FinishedAndClaimed:
        refused_whole("finish_claim", reply)
        finished: list[int | str | Refused] = []
        for report, job_id, answer in zip(reports, ids, reply[2:]):
            if _text(answer[0]) == "REFUSED":
                finished.append(_refusal(report.outcome, job_id, answer))
            elif _text(answer[1]) == "done":
                finished.append(int(_text(answer[2])))
            else:
                finished.append(_text(answer[1]))
        try:
            claimed: list[ClaimedJob] | NothingToClaim | Paused = parse_claim(reply[1])
        except (NothingToClaim, Paused) as nothing:
            claimed = nothing
        return FinishedAndClaimed(finished, claimed)

    return Call("finish_claim", keys.script_keys(None), args, parse, leases=keys.queue)


def release(queue: str, job_id: str, token: object, *, actor: str = "") -> Call[int]:
    return _lease_call("release", queue, job_id, token, [actor], lambda r: int(_text(r[1])))


def _max_attempts_arg(value: object) -> int | str:
    return "" if value in (None, "") else _int(value, "max_attempts", 1, MAX_TRIES)


def _flag(value: object) -> str:
    if not isinstance(value, bool):
        raise InvalidInput(f"retry must be true or false, not {value!r}")
    return "1" if value else "0"


class _SourcePayload:
    """The value of ``new_payload`` when none is given: the clone takes its source's payload, byte for byte."""

    def __repr__(self) -> str:
        return "the source's payload"


SOURCE_PAYLOAD: Final = _SourcePayload()


def _new_payload(value: object) -> bytes:
    # '' stands for the source's payload, so a payload given (even an empty one) is sent after a '='.
    return b"" if value is SOURCE_PAYLOAD else b"=" + _payload(value)


# How each argument a move of the table may name (OperatorMove.arguments) is checked and sent, and its
# value when the caller leaves it out (a required one has none). ``new_id`` names a new job of the queue:
# its hash is sent as KEYS[7], after the six every move takes.
MOVE_ARGUMENTS: Final[dict[str, tuple[Callable[[object], Any], object]]] = {
    "payload": (_payload, None),
    "max_attempts": (_max_attempts_arg, ""),
    "retry": (_flag, False),
    "version": (lambda value: _int(value, "version", 1, MAX_INT), None),
    "new_id": (validate_new_job_id, None),
    "new_payload": (_new_payload, SOURCE_PAYLOAD),
    "delay_ms": (lambda value: _int(value, "delay_ms", 0, MAX_DELAY_MS), 0),
}


def operator_move(move: str, queue: str, job_id: str, *, expect_state: str | None = None,
                  expect_attempts: int | str | None = None, actor: str = "",
                  extra_attempts: int = 1, arguments: Mapping[str, object] | None = None) -> Call[MoveResult]:
    """One of the moves on one job of :data:`queues.operator_moves.OPERATOR_MOVES`, as compare-and-move.

    The job must still be in ``expect_state`` (by default the state the move
    starts from; delete and cancel should always be told what was shown) and,
    when given, have ``expect_attempts``; otherwise :class:`Refused`.
    ``arguments``: the move's own (its row's ``arguments``, as :data:`MOVE_ARGUMENTS` names them).
    """
    row = job_move(move)
    keys = QueueKeys(queue)
    job_id = validate_job_id(job_id)
    state = expect_state if expect_state is not None else row.starts_from
    if not row.odd_states:
        validate_state(state)
    elif not isinstance(state, str) or not state or len(state) > 64:
        raise InvalidInput("expected state must be a non-empty text")
    seen = "" if expect_attempts in (None, "") else str(_int(expect_attempts, "expected attempts", 0))
    args: list[Any] = [job_id, state, seen]
    if row.extra_attempts:
        args.append(_int(extra_attempts, "extra_attempts", 1, MAX_TRIES))
    given = dict(arguments or {})
    unknown = set(given) - set(row.arguments)
    if unknown:
        raise InvalidInput(f"{move} takes no {', '.join(sorted(unknown))}")
    for name in row.arguments:
        check, default = MOVE_ARGUMENTS[name]
        if given.get(name) is None and default is None:
            raise InvalidInput(f"{move} needs its {name.replace('_', ' ')}")
        args.append(check(given[name] if given.get(name) is not None else default))
    args.append(actor)
    script_keys = keys.script_keys(job_id)
    if "new_id" in row.arguments:
        new_id = args[3 + int(row.extra_attempts) + row.arguments.index("new_id")]
        if new_id == job_id:
            raise InvalidInput(f"the new job id must differ from {job_id!r}, the job's own")
        script_keys.append(keys.job(new_id))

    def parse(reply: list[Any]) -> MoveResult:
        refused_whole(move, reply, job_id)
        version = _text(reply[3]) if len(reply) > 3 else ""
        if len(reply) > 5:
            return MoveResult(move, job_id, _text(reply[1]), _text(reply[2]), version, _text(reply[4]),
                              int(_text(reply[5])))
        return MoveResult(move, job_id, _text(reply[1]), _text(reply[2]), version)

    return Call(row.script, script_keys, args, parse)


def recover_expired(queue: str, *, limit: int = 200, actor: str = "", skip: int = 0) -> Call[BatchResult]:
    keys = QueueKeys(queue)
    args = [_int(limit, "limit", 1, MAX_BATCH), actor, _int(skip, "skip", 0, MAX_INT)]

    def parse(reply: list[Any]) -> BatchResult:
        refused_whole("recover_expired", reply)
        _, to_pending, to_failed, missing, skipped, more, next_deadline = reply
        return BatchResult(int(to_pending) + int(to_failed), int(missing), int(skipped), bool(int(more)), int(to_failed),
                           int(next_deadline))

    return Call("recover_expired", keys.script_keys(None), args, parse)


def retry_failed(queue: str, *, limit: int = 200, extra_attempts: int = 1, actor: str = "",
                 failed_before_ms: int | None = None, skip: int = 0) -> Call[BatchResult]:
    keys = QueueKeys(queue)
    cutoff = "" if failed_before_ms is None else _int(failed_before_ms, "failed_before_ms", 0, MAX_INT)
    args = [_int(limit, "limit", 1, MAX_BATCH), _int(extra_attempts, "extra_attempts", 1, MAX_TRIES),
            actor, cutoff, _int(skip, "skip", 0, MAX_INT)]
    return Call("retry_failed", keys.script_keys(None), args, _batch)


def purge(queue: str, state: str, *, older_than_ms: int = 0, limit: int = 200, actor: str = "",
          skip: int = 0, up_to_ms: int | None = None) -> Call[BatchResult]:
    """``up_to_ms``: measure ages from this server time, not now (a confirmed purge: the jobs counted then)."""
    keys = QueueKeys(queue)
    if state not in ("done", "failed"):
        raise InvalidInput(f"only done or failed jobs can be purged, not {state!r}")
    up_to = "" if up_to_ms is None else _int(up_to_ms, "up_to_ms", 0, MAX_INT)
    args = [state, _int(older_than_ms, "older_than_ms", 0, MAX_INT), _int(limit, "limit", 1, MAX_BATCH), actor,
            _int(skip, "skip", 0, MAX_INT), up_to]
    return Call("purge", keys.script_keys(None), args, _batch)


def _batch(reply: list[Any]) -> BatchResult:
    refused_whole("batch move", reply)
    _, moved, missing, skipped, more = reply
    return BatchResult(int(moved), int(missing), int(skipped), bool(int(more)))


MAX_PAUSE_REASON_BYTES: Final = MAX_ERROR_BYTES


@dataclass(frozen=True, slots=True)
class KeyRemoved:
    """remove_key's answer: which state set of ``queue`` was deleted, and the type it held."""

    queue: str
    which: str
    kind: str

    def describe(self) -> str:
        return (f"removed: the {self.which} set of {self.queue} held a {self.kind}, not a sorted set; it is deleted, "
                f"and {self.queue} can be read and moved again")


@dataclass(frozen=True, slots=True)
class RemovableKey:
    """A state set of a queue that holds another type (what a read's ``wrongtype`` refusal named), which
    :func:`remove_key` can delete."""

    queue: str
    which: str
    kind: str


def removable_key(queue: str, refusal: Refused) -> RemovableKey | None:
    """The state set a ``wrongtype`` refusal of a read of ``queue`` names, when it names one; else None."""
    if refusal.reason != "wrongtype":
        return None
    keys = QueueKeys(queue)
    for state in STATES:
        if refusal.state == keys.state_set(state) and refusal.attempts not in ("", "zset", "none"):
            return RemovableKey(keys.queue, state, refusal.attempts)
    return None


def remove_key(queue: str, which: str, *, seen_type: str, actor: str = "") -> Call[KeyRemoved]:
    """Deletes the ``which`` state set of ``queue`` if it still holds ``seen_type`` (not a sorted set): the repair
    of a set another writer left as another type. :class:`Refused` (the set named as the job id) otherwise."""
    keys = QueueKeys(queue)
    which = validate_state(which)
    if not isinstance(seen_type, str) or seen_type in ("", "zset", "none") or not seen_type.isalpha():
        raise InvalidInput(f"the type shown must be a Redis type other than zset, not {seen_type!r}")

    def parse(reply: list[Any]) -> KeyRemoved:
        if _text(reply[0]) == "REFUSED":
            raise _refusal("remove_key", which, reply)
        return KeyRemoved(keys.queue, which, _text(reply[2]))

    return Call("remove_key", keys.script_keys(None), [which, seen_type, actor], parse)


@dataclass(frozen=True, slots=True)
class PauseResult:
    """pause or resume as it happened: ``changed`` is False when the queue already was (not) paused."""

    move: str
    queue: str
    changed: bool
    since_ms: int | None = None
    actor: str = ""
    reason: str = ""
    paused_for_ms: int | None = None

    def describe(self) -> str:
        if self.move == "pause":
            if not self.changed:
                return f"not paused again: queue {self.queue} was already paused" + (f" by {self.actor}" if self.actor else "")
            return f"paused: queue {self.queue} claims nothing until it is resumed; running jobs finish"
        if not self.changed:
            return f"not resumed: queue {self.queue} was not paused"
        return f"resumed: queue {self.queue} is claimed from again"


def pause(queue: str, *, reason: str = "", actor: str = "") -> Call[PauseResult]:
    """Pauses claims from ``queue`` (enqueue and the running jobs' moves go on)."""
    keys = QueueKeys(queue)
    if not isinstance(reason, str):
        raise InvalidInput("reason must be text")
    text = cut_utf8(reason.encode(), MAX_PAUSE_REASON_BYTES)

    def parse(reply: list[Any]) -> PauseResult:
        refused_whole("pause", reply)
        if _text(reply[0]) == "ALREADY":
            return PauseResult("pause", keys.queue, False, digits(reply[1]), _text(reply[2]), _text(reply[3]))
        return PauseResult("pause", keys.queue, True, int(_text(reply[1])), actor, text.decode(errors="replace"))

    return Call("pause", keys.script_keys(None), [text, actor], parse)


def resume(queue: str, *, actor: str = "") -> Call[PauseResult]:
    keys = QueueKeys(queue)

    def parse(reply: list[Any]) -> PauseResult:
        refused_whole("resume", reply)
        if _text(reply[0]) == "NOT_PAUSED":
            return PauseResult("resume", keys.queue, False)
        return PauseResult("resume", keys.queue, True, actor=actor, paused_for_ms=digits(reply[1]))

    return Call("resume", keys.script_keys(None), [actor], parse)


WORKER_HELD_IDS: Final = 20


@dataclass(frozen=True, slots=True)
class Registration:
    expires_ms: int
    new_release: bool = False


def register_worker(queue: str, worker_id: str, *, ttl_ms: int, host: str, pid: int, runtime: str,
                    concurrency: int, started_ms: int, held: list[str], release: str = "") -> Call[Registration]:
    """A worker's heartbeat in the queue's registry: when its entry expires (server ms), and whether its
    ``release`` (its code's version, '' when it cannot tell; each attempt it claims records it) is new to
    the queue (the worker then adds a deploy mark)."""
    keys = QueueKeys(queue)
    worker_id = validate_new_job_id(worker_id)
    shown = "\n".join(held[:WORKER_HELD_IDS])

    def parse(reply: list[Any]) -> Registration:
        refused_whole("register_worker", reply)
        return Registration(int(_text(reply[2])), len(reply) > 3 and _text(reply[3]) == "1")

    return Call("register_worker", keys.script_keys(None),
                [worker_id, _int(ttl_ms, "ttl_ms", 1000, MAX_LEASE_MS), host, _int(pid, "pid", 0),
                 runtime, _int(concurrency, "concurrency", 0), _int(started_ms, "started_ms", 0), len(held), shown,
                 release],
                parse)


def note_refusal(queue: str, worker_id: str, *, ttl_ms: int, kind: str, text: str) -> Call[bool]:
    """A worker whose claim Redis refused (``oom`` or ``script_error``) notes it in its registry entry and renews
    the entry (allowed under maxmemory); False when it has no live entry to note it in."""
    keys = QueueKeys(queue)
    worker_id = validate_job_id(worker_id)
    if kind not in ("oom", "script_error"):
        raise InvalidInput("kind must be oom or script_error")

    def parse(reply: list[Any]) -> bool:
        if _text(reply[0]) == "REFUSED" and _text(reply[1]) == "missing":
            return False
        refused_whole("note_refusal", reply)
        return True

    return Call("note_refusal", keys.script_keys(None), [worker_id, _int(ttl_ms, "ttl_ms", 1000, MAX_LEASE_MS), kind,
                                                         cut_utf8(text.encode(errors="replace"), 512)], parse)


def unregister_worker(queue: str, worker_id: str) -> Call[bool]:
    keys = QueueKeys(queue)
    worker_id = validate_job_id(worker_id)

    def parse(reply: list[Any]) -> bool:
        refused_whole("unregister_worker", reply)
        return bool(int(reply[1]))

    return Call("unregister_worker", keys.script_keys(None), [worker_id], parse)
