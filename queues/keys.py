"""The EchoMQ keyspace: every key of queue Q starts with ``emq:{Q}:``.

The braces make Q the Redis Cluster hash tag, so all of a queue's keys live
in one slot and every move can be one atomic script. This module is the only
place that spells a key.
"""

from __future__ import annotations

import binascii
import functools
import re
from dataclasses import dataclass
from typing import Final, Literal

from .errors import InvalidInput

State = Literal["pending", "active", "done", "failed"]
STATES: Final[tuple[State, ...]] = ("pending", "active", "done", "failed")

# Where the names of known queues are registered (SADD by whoever creates a
# queue). It is outside any queue's slot, so no script writes it.
QUEUE_REGISTRY: Final = "emq:queues"
# The sweeper's lock (see :mod:`queues.sweeper`), also outside every queue's slot.
SWEEPER_LOCK: Final = "emq:lock:sweeper"
# The console's alert evaluator's lock (one console process evaluates the rules at a time), beside it.
ALERTS_LOCK: Final = "emq:lock:alerts"
# A SCAN pattern that matches the keys of every queue (and some others, which :func:`queue_of_key` sorts out).
ANY_QUEUE_KEY_PATTERN: Final = "emq:{*}:*"

# A hint of where leases may lapse, for the sweeper: a sorted set of queue
# names, each scored by a time (ms, server clock) before which the queue holds
# no lapsed lease. A claimer lowers its queue's score to the lease deadline
# (ZADD LT) after the claim; the sweeper looks only at queues whose score has
# passed. It is outside any queue's slot, so it may lag the truth, which the
# per-queue scripts keep (see PROTOCOL.md, "The lease index").
LEASE_INDEX: Final = "emq:leases"

HASH_SLOTS: Final = 16384


@functools.cache
def slot_tag(slot: int) -> str:
    """The smallest decimal number whose CRC16 (as Redis Cluster hashes a key) lands in ``slot``.

    A hash tag that puts a key in a given slot, so that a key can live on the
    master that owns a slot range; every slot has one below 110,000.
    """
    if not 0 <= slot < HASH_SLOTS:
        raise InvalidInput(f"slot must be 0..{HASH_SLOTS - 1}")
    n = 0
    while binascii.crc_hqx(str(n).encode(), 0) % HASH_SLOTS != slot:
        n += 1
    return str(n)


def lease_index_shard(first_slot: int) -> str:
    """On a cluster, the lease index of the queues in the slot range that begins at ``first_slot``,
    kept in that slot, so it lives on the master of its own queues."""
    return f"{LEASE_INDEX}:{{{slot_tag(first_slot)}}}"


def sweeper_lock_shard(first_slot: int) -> str:
    """On a cluster, the sweeper lock of the slot range that begins at ``first_slot``, beside its lease index."""
    return f"{SWEEPER_LOCK}:{{{slot_tag(first_slot)}}}"

# Which queues hold schedules (recurring jobs), and from when one of them may be due: a sorted set of
# queue names, each scored by a time (ms) before which none of that queue's schedules ticks. A hint kept
# as the lease index is (the same take and settle scripts), outside every queue's slot; the schedules
# themselves live in their queue's slot (see :mod:`queues.schedules`).
SCHEDULE_INDEX: Final = "emq:schedule_index"
# The lock under which one process at a time runs the schedules' ticks (see :mod:`queues.scheduler`).
SCHEDULER_LOCK: Final = "emq:lock:scheduler"

MAX_QUEUE_NAME = 128
MAX_JOB_ID = 256
# Braces would move the hash tag into another slot; whitespace and control
# characters make keys that cannot be typed or logged safely. A queue name
# also may not hold ':', which separates the parts of a key.
_FORBIDDEN_IN_ID = re.compile(r"[{}\x00-\x20\x7f]")
_FORBIDDEN_IN_QUEUE = re.compile(r"[{}:\x00-\x20\x7f]")


def validate_queue_name(name: object) -> str:
    if type(name) is str:
        return _valid_queue_name(name)
    return _validate(name, "queue name", MAX_QUEUE_NAME, _FORBIDDEN_IN_QUEUE)


@functools.lru_cache(maxsize=4096)
def _valid_queue_name(name: str) -> str:
    # A producer names the same few queues on every call; a name that fails raises, and is not kept.
    return _validate(name, "queue name", MAX_QUEUE_NAME, _FORBIDDEN_IN_QUEUE)


def validate_job_id(job_id: object) -> str:
    """An id of a job that may exist: UTF-8, or (another writer's) bytes that are not, each such byte held as
    the lone surrogate ``surrogateescape`` decodes it to; the moves send those as the bytes again."""
    return _validate(job_id, "job id", MAX_JOB_ID, _FORBIDDEN_IN_ID, stored=True)


def validate_new_job_id(job_id: object) -> str:
    """An id for a new job (or worker): UTF-8 only, as section 1 of PROTOCOL.md says."""
    return _validate(job_id, "job id", MAX_JOB_ID, _FORBIDDEN_IN_ID)


MAX_SCHEDULE_NAME = 64
# A schedule's name is part of every job id it makes (NAME:TICK_MS) and of a key: plain characters only.
_SCHEDULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def validate_schedule_name(name: object) -> str:
    if not isinstance(name, str) or not _SCHEDULE_NAME.fullmatch(name):
        raise InvalidInput(f"a schedule's name is 1..{MAX_SCHEDULE_NAME} of A-Z a-z 0-9 . _ - (starting with a "
                           f"letter or digit), not {name!r}")
    return name


# The expected state that says "the hash has no state field" (or an empty one) to delete (PROTOCOL.md,
# section 7): a job another writer left without one stays deletable by compare-and-move.
ABSENT_STATE: Final = "~absent"


def expected_state(state: str, key_type: str = "hash") -> str:
    """What a compare-and-move expects of a job shown with ``state`` (its hash's field, '' when it has none) and
    key type: the state, ``~absent`` for none, or ``wrongtype:<type>`` for a job key that is not a hash."""
    if key_type not in ("hash", "none"):
        return f"wrongtype:{key_type}"
    return state or ABSENT_STATE


def job_id_token(job_id: str) -> str:
    """An id as text that names it exactly in a link, a form or a page: the id itself, or ``{HEX}`` (its bytes in
    hexadecimal) when they are not UTF-8. No id holds a brace, so the two cannot be confused."""
    try:
        job_id.encode()
    except UnicodeEncodeError:
        return "{" + job_id.encode(errors="surrogateescape").hex() + "}"
    return job_id


_ID_TOKEN_HEX = re.compile(r"\{((?:[0-9a-fA-F]{2})+)\}")


def parse_job_id_token(text: str) -> str:
    """The id a :func:`job_id_token` names (any other text is the id as it is, for the validation to judge)."""
    found = _ID_TOKEN_HEX.fullmatch(text)
    if found is None:
        return text
    return bytes.fromhex(found.group(1)).decode(errors="surrogateescape")


def validate_state(state: object) -> State:
    if state not in STATES:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}, not {state!r}")
    return state


def _validate(value: object, what: str, max_length: int, forbidden: re.Pattern[str], *, stored: bool = False) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string, not {type(value).__name__}")
    if not value:
        raise InvalidInput(f"{what} must not be empty")
    try:
        data = value.encode(errors="surrogateescape" if stored else "strict")
    except UnicodeEncodeError:
        shown = value.encode(errors="backslashreplace").decode()
        raise InvalidInput(f"{what} {shown} is not UTF-8 text" if not stored
                           else f"{what} {shown} holds a character that is no byte (a lone surrogate)") from None
    if len(data) > max_length:
        raise InvalidInput(f"{what} is longer than {max_length} bytes")
    bad = forbidden.search(value)
    if bad:
        shown = value.encode(errors="surrogateescape").decode(errors="backslashreplace")
        raise InvalidInput(f"{what} {shown!r} contains {bad.group()!r}, which is not allowed")
    return value


def glob_escape(text: str) -> str:
    """``text`` as a literal in a SCAN MATCH pattern (a queue name may hold ``*``, ``?``, ``[`` or ``\\``)."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def queue_of_key(key: str) -> str | None:
    """The queue whose key ``key`` is (``emq:{Q}:...``), or None when it is no queue's key."""
    if not key.startswith("emq:{"):
        return None
    end = key.find("}:", 5)
    name = key[5:end] if end > 5 else ""
    try:
        return validate_queue_name(name)
    except InvalidInput:
        return None


# The names under a queue's prefix that the protocol itself uses; a caller's own key must take another.
_PROTOCOL_NAMES: Final = frozenset({*STATES, "events", "workers", "worker", "releases", "counts", "paused", "job", "failures",
                                    "failure", "m", "h", "schedules", "schedule"})
_OWN_KEY_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")


@dataclass(frozen=True, slots=True)
class QueueKeys:
    queue: str

    def __init__(self, queue: str) -> None:
        object.__setattr__(self, "queue", validate_queue_name(queue))

    @property
    def prefix(self) -> str:
        return f"emq:{{{self.queue}}}:"

    @property
    def pending(self) -> str:
        return self.prefix + "pending"

    @property
    def active(self) -> str:
        return self.prefix + "active"

    @property
    def done(self) -> str:
        return self.prefix + "done"

    @property
    def failed(self) -> str:
        return self.prefix + "failed"

    @property
    def events(self) -> str:
        return self.prefix + "events"

    @property
    def workers(self) -> str:
        """The live workers of the queue: a sorted set of worker ids scored by when their entry expires (ms)."""
        return self.prefix + "workers"

    def worker(self, worker_id: str) -> str:
        """One worker's entry (a hash that expires unless the worker registers again)."""
        return self.prefix + "worker:" + validate_new_job_id(worker_id)

    @property
    def counts(self) -> str:
        """How many of each move the queue has seen (a hash written by the moves themselves)."""
        return self.prefix + "counts"

    @property
    def paused(self) -> str:
        """Exists while the queue is paused (a hash: reason, actor, since_ms); claim refuses meanwhile."""
        return self.prefix + "paused"

    @property
    def schedules(self) -> str:
        """The queue's schedules: a sorted set of schedule names, each scored by its next tick (ms)."""
        return self.prefix + "schedules"

    def schedule(self, name: str) -> str:
        """One schedule (a hash: what it enqueues, when, and how its last ticks went)."""
        return self.prefix + "schedule:" + validate_schedule_name(name)

    @property
    def redaction(self) -> str:
        """The JSON paths whose values the queue's payloads show masked, and whether for everyone (a hash)."""
        return self.prefix + "redaction"

    def state_set(self, state: State) -> str:
        return self.prefix + validate_state(state)

    def job(self, job_id: str) -> str:
        return self.prefix + "job:" + validate_job_id(job_id)

    def job_pattern(self) -> str:
        """A SCAN MATCH pattern for every job hash of this queue, the queue name escaped."""
        return glob_escape(self.prefix) + "job:*"

    def own(self, name: str) -> str:
        """A key in the queue's slot for a caller's own script (see :func:`queues.scripts.script` and ``PACKAGE:NAME``),
        under a name the protocol does not use, so a script of another package may write it in the
        same atomic step as a move."""
        if not isinstance(name, str) or not _OWN_KEY_NAME.fullmatch(name) or name in _PROTOCOL_NAMES:
            raise InvalidInput(f"{name!r} cannot name a caller's key: it must be 1..64 of a-z 0-9 _, starting "
                               "with a letter, and not one the protocol uses")
        return self.prefix + name

    def script_keys(self, job_id: str | None) -> list[str]:
        """KEYS for every script: the four sets, the events, then the job or the prefix."""
        *first, prefix = _first_script_keys(self.queue)
        return [*first, prefix + "job:" + validate_job_id(job_id) if job_id is not None else prefix]


@functools.lru_cache(maxsize=4096)
def _first_script_keys(queue: str) -> tuple[str, str, str, str, str, str]:
    """A queue's four sets and events, and its prefix (the sixth key when no job is named), worked out once."""
    keys = QueueKeys(queue)
    return keys.pending, keys.active, keys.done, keys.failed, keys.events, keys.prefix
