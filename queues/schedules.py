"""Schedules: recurring jobs, kept in their queue's slot and ticked by one script per tick.

A schedule (``emq:{Q}:schedule:NAME``, listed in ``emq:{Q}:schedules`` by its next tick) says what to
enqueue (payload, max attempts) and when: a cron expression in a time zone (cronsim computes its ticks),
or a fixed interval counted from the Unix epoch (every 5 min: at :00, :05, ... UTC). Each tick is
enqueued by ``schedule_tick`` as the job ``NAME:TICK_MS``; the script refuses a tick that is not ahead of
the schedule's last one, so two schedulers, or one that sends a tick again after a failover, never
enqueue it twice (PROTOCOL.md, section 9b).

What a tick does when the scheduler reaches it late is the schedule's ``missed`` policy. Ticks are
never made up: when several ticks passed unseen, only the latest of them is considered. It is *late*
when the scheduler reaches it more than :data:`LATE_AFTER_MS` after its time; ``once`` enqueues it all
the same (one late job), ``skip`` moves past it without enqueuing.

:func:`schedule_statuses` is the read for everything that watches schedules (the console's page, the
alerts' dead-man's switch): each schedule's next and last ticks and its last job's outcome.
"""

from __future__ import annotations

import time
import zoneinfo
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, Literal

from cronsim import CronSim, CronSimError

from .errors import Duplicate, EmqError, InvalidInput, Refused
from .keys import SCHEDULE_INDEX, QueueKeys, validate_queue_name, validate_schedule_name
from .moves import MAX_DELAY_MS, MAX_INT, MAX_PAYLOAD_BYTES, MAX_TRIES, Call, _int, _payload, _text, digits, refused_whole

if TYPE_CHECKING:
    from .client import EchoMQ

Missed = Literal["once", "skip"]
# A tick the scheduler reaches more than this after its time is late (the ``missed`` policy decides).
LATE_AFTER_MS: Final = 60_000
# The score of a paused schedule in emq:{Q}:schedules: no scheduler finds it due.
PAUSED_SCORE: Final = MAX_INT
RECENT: Final = 20
PAGE_LIMIT: Final = 100
INDEX_PAGE: Final = 1000


@dataclass(frozen=True, slots=True)
class When:
    """When a schedule ticks: a cron expression (5 fields) in a time zone, or every ``every_ms`` from the epoch."""

    cron: str = ""
    tz: str = ""
    every_ms: int = 0

    def __post_init__(self) -> None:
        if bool(self.cron) == bool(self.every_ms):
            raise InvalidInput("a schedule needs a cron expression (with a time zone) or an interval, not both")
        if self.every_ms:
            _int(self.every_ms, "every_ms", 1000, MAX_DELAY_MS)
            if self.tz:
                raise InvalidInput("a time zone goes with a cron expression; an interval counts from the epoch")
            return
        if len(self.cron.encode()) > 128 or len(self.cron.split(" ")) != 5:
            raise InvalidInput(f"cron must be 5 fields separated by single spaces, not {self.cron!r}")
        try:
            zone = zoneinfo.ZoneInfo(self.tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, TypeError):
            raise InvalidInput(f"unknown time zone {self.tz!r} (an IANA name such as Europe/Berlin or UTC)") from None
        try:
            next(CronSim(self.cron, datetime.now(zone)))
        except (CronSimError, StopIteration) as error:
            raise InvalidInput(f"cron {self.cron!r} is not valid: {error or 'it never ticks'}") from None

    def describe(self) -> str:
        if self.every_ms:
            return f"every {_duration(self.every_ms)}"
        return f"cron {self.cron} ({self.tz})"

    def next_after(self, after_ms: int) -> int:
        """The first tick strictly after ``after_ms``."""
        if self.every_ms:
            return (after_ms // self.every_ms + 1) * self.every_ms
        start = datetime.fromtimestamp(after_ms / 1000, zoneinfo.ZoneInfo(self.tz))
        return _ms(next(CronSim(self.cron, start)))

    def latest_at(self, now_ms: int) -> int:
        """The last tick at or before ``now_ms``."""
        if self.every_ms:
            return now_ms // self.every_ms * self.every_ms
        start = datetime.fromtimestamp((now_ms + 1) / 1000, zoneinfo.ZoneInfo(self.tz))
        return _ms(next(CronSim(self.cron, start, reverse=True)))


def _ms(moment: datetime) -> int:
    return round(moment.timestamp() * 1000)


def _duration(ms: int) -> str:
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


def _missed(value: object) -> Missed:
    if value not in ("once", "skip"):
        raise InvalidInput(f"missed must be once (enqueue a late tick once) or skip, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class Recent:
    suffix: str  # the job id after NAME: (a tick's ms, or run:STAMP)
    state: str  # pending, active, done, failed; '' when the job is gone

    @property
    def outcome(self) -> str:
        return self.state or "gone"


@dataclass(frozen=True, slots=True)
class Schedule:
    """One schedule as the ``schedules`` read gives it: its definition and what its ticks did."""

    queue: str
    name: str
    key_type: str  # 'hash'; another type (or 'none': an entry of the set without its hash) is odd data
    when: When | None  # None when the stored definition does not read as one
    missed: str
    paused: bool
    max_attempts: int | None
    version: int
    next_ms: int | None
    last_tick_ms: int | None
    last_job: str
    last_enqueued_ms: int | None
    ticks: int
    runs: int
    skipped: int
    created_ms: int | None
    updated_ms: int | None
    updated_by: str
    paused_ms: int | None
    paused_by: str
    payload_length: int
    payload_head: str
    recent: list[Recent] = field(default_factory=list)

    @property
    def last_outcome(self) -> str:
        """The state of the newest job its ticks (or a run) enqueued: '' when none, 'gone' when purged."""
        return self.recent[-1].outcome if self.recent else ""

    def job_id(self, suffix: str) -> str:
        return f"{self.name}:{suffix}"

    def overdue_ms(self, now_ms: int) -> int:
        """How long the next tick is past its time without having been enqueued (0: not overdue, or paused):
        ``expected by T, not seen`` for a dead-man's switch."""
        if self.paused or self.next_ms is None or self.key_type != "hash":
            return 0
        return max(0, now_ms - self.next_ms)

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, "name": self.name, "key_type": self.key_type,
                "cron": self.when.cron if self.when else None, "tz": self.when.tz if self.when else None,
                "every_ms": self.when.every_ms if self.when and self.when.every_ms else None,
                "describe": self.when.describe() if self.when else "unreadable", "missed": self.missed,
                "paused": self.paused, "max_attempts": self.max_attempts, "version": self.version,
                "next_ms": self.next_ms, "last_tick_ms": self.last_tick_ms, "last_job": self.last_job,
                "last_enqueued_ms": self.last_enqueued_ms, "last_outcome": self.last_outcome, "ticks": self.ticks,
                "runs": self.runs, "skipped": self.skipped, "created_ms": self.created_ms,
                "updated_ms": self.updated_ms, "updated_by": self.updated_by, "paused_ms": self.paused_ms,
                "paused_by": self.paused_by, "payload_length": self.payload_length, "payload_head": self.payload_head,
                "recent": [{"job": self.job_id(r.suffix), "outcome": r.outcome} for r in self.recent]}


@dataclass(frozen=True, slots=True)
class SchedulePage:
    queue: str
    now_ms: int
    total: int  # schedules the queue holds
    earliest_ms: int | None  # the earliest score of the set: when one of them ticks next (PAUSED_SCORE: all paused)
    schedules: list[Schedule]
    # The cursor of the next page (score, name); None when this page is the last.
    after: tuple[int, str] | None


class ScheduleRefused(Refused):
    """A schedule script refused (nothing written): ``reason`` is its word, ``state`` its detail."""

    def describe(self) -> str:
        name, detail = self.job_id, self.state
        words = {
            "exists": f"the queue has a schedule {name} already (version {detail})",
            "missing": f"there is no schedule {name}",
            "changed": f"schedule {name} changed since it was read (now version {detail})",
            "full": f"the queue holds {detail} schedules, the most it may",
            "paused": f"schedule {name} is paused",
            "not_due": f"that tick of {name} is later than the server's clock ({detail})",
            "ticked": f"that tick of {name} was taken already (the schedule is at {detail})",
            "too_large": f"the payload of {name} is {detail} bytes, more than a job may hold",
        }
        return f"refused: {words[self.reason]}" if self.reason in words else super().describe()


def _refused(script: str, reply: Any, name: str) -> None:
    """Raises :class:`ScheduleRefused` for a schedule script's refusal (a key of another type as ``Refused``)."""
    if isinstance(reply, list) and reply and _text(reply[0]) == "REFUSED" and _text(reply[1]) != "wrongtype":
        raise ScheduleRefused(script, name, _text(reply[1]), _text(reply[2]), "")
    refused_whole(script, reply, name)


def _opt(value: Any) -> int | None:
    return digits(value, 14)


def _when(cron: str, tz: str, every: str) -> When | None:
    try:
        return When(cron, tz, int(every)) if every else When(cron, tz)
    except (InvalidInput, ValueError):
        return None


def _schedule(queue: str, row: list[Any]) -> Schedule:
    name, _score, kind = (_text(v) for v in row[:3])
    (cron, tz, every, missed, paused, max_attempts, version, next_ms, last_tick, last_job, last_enqueued, ticks,
     runs, skipped, _last_skipped, created, updated, updated_by, paused_ms, paused_by) = (_text(v) for v in row[3:23])
    length, head = int(row[23]), _text(row[24])
    rest = row[25:]
    recent = [Recent(_text(rest[i]), _text(rest[i + 1])) for i in range(0, len(rest) - 1, 2)]
    return Schedule(queue, name, kind, _when(cron, tz, every) if kind == "hash" else None, missed, paused == "1",
                    _opt(max_attempts), _opt(version) or 0, _opt(next_ms), _opt(last_tick), last_job,
                    _opt(last_enqueued), _opt(ticks) or 0, _opt(runs) or 0, _opt(skipped) or 0, _opt(created),
                    _opt(updated), updated_by, _opt(paused_ms), paused_by, length, head, recent)


def schedules(queue: str, *, up_to_ms: int | None = None, after: tuple[int, str] | None = None,
              limit: int = 50) -> Call[SchedulePage]:
    """A page of the queue's schedules, next tick first (paused ones last); ``up_to_ms``: only those due by then."""
    keys = QueueKeys(queue)
    args = ["" if up_to_ms is None else _int(up_to_ms, "up_to_ms", 0),
            "" if after is None else _int(after[0], "cursor score", 0), "" if after is None else after[1],
            _int(limit, "limit", 1, PAGE_LIMIT)]

    def parse(reply: list[Any]) -> SchedulePage:
        refused_whole("schedules", reply)
        now, total, earliest, cursor_score, cursor_name = reply[:5]
        cursor = (int(float(_text(cursor_score))), _text(cursor_name)) if _text(cursor_score) else None
        first = _text(earliest)
        return SchedulePage(keys.queue, int(now), int(total), int(float(first)) if first else None,
                            [_schedule(keys.queue, row) for row in reply[5:]], cursor)

    return Call("schedules", [keys.schedules], args, parse)


@dataclass(frozen=True, slots=True)
class ScheduleChange:
    queue: str
    name: str
    version: int
    next_ms: int | None
    already: bool = False  # pause/resume: it was so already (nothing written)


def _change_parse(script: str, queue: str, name: str) -> Any:
    def parse(reply: list[Any]) -> ScheduleChange:
        _refused(script, reply, name)
        if _text(reply[0]) == "ALREADY":
            return ScheduleChange(queue, name, int(_text(reply[1]) or 0), None, already=True)
        nxt = _text(reply[2]) if len(reply) > 2 else ""
        return ScheduleChange(queue, name, int(_text(reply[1]) or 0), int(nxt) if nxt else None)
    return parse


@dataclass(frozen=True, slots=True)
class Definition:
    """What a schedule enqueues and when, checked before anything is sent."""

    when: When
    payload: bytes
    max_attempts: int = 3
    missed: Missed = "once"
    paused: bool = False

    @classmethod
    def of(cls, *, cron: str | None = None, tz: str | None = None, every_ms: int | None = None,
           payload: object = b"", max_attempts: object = 3, missed: object = "once",
           paused: bool = False) -> Definition:
        if cron and every_ms:
            raise InvalidInput("a schedule has a cron expression or an interval, not both")
        if not cron and every_ms is None:
            raise InvalidInput("a schedule needs --cron EXPR (with --tz) or --every-ms N")
        when = When(cron=cron, tz=tz or "UTC") if cron else When(every_ms=_int(every_ms, "every_ms", 1000, MAX_DELAY_MS))
        data = _payload(payload)
        if len(data) > MAX_PAYLOAD_BYTES:
            raise InvalidInput(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes")
        return cls(when, data, _int(max_attempts, "max_attempts", 1, MAX_TRIES), _missed(missed), bool(paused))


def schedule_set(queue: str, name: str, definition: Definition, *, mode: Literal["add", "update"], now_ms: int,
                 expected_version: int | None = None, actor: str = "") -> Call[ScheduleChange]:
    """Adds (``mode='add'``) or replaces a schedule's definition; its first tick is the first after ``now_ms``
    (the server's time)."""
    keys = QueueKeys(queue)
    name = validate_schedule_name(name)
    when = definition.when
    args = [name, mode, "" if expected_version is None else _int(expected_version, "expected version", 0),
            when.cron, when.tz, when.every_ms or "", definition.payload, definition.max_attempts, definition.missed,
            "1" if definition.paused else "0", when.next_after(_int(now_ms, "now_ms", 0)), actor]
    return Call("schedule_set", [keys.schedule(name), keys.schedules], args,
                _change_parse("schedule_set", keys.queue, name))


def schedule_pause(queue: str, name: str, *, pause: bool, next_ms: int | None = None,
                   expected_version: int | None = None, actor: str = "") -> Call[ScheduleChange]:
    """Pauses a schedule, or resumes it from ``next_ms`` (the first tick after now)."""
    keys = QueueKeys(queue)
    name = validate_schedule_name(name)
    if not pause and next_ms is None:
        raise InvalidInput("resuming a schedule needs its next tick")
    args = [name, "pause" if pause else "resume",
            "" if expected_version is None else _int(expected_version, "expected version", 0),
            "" if next_ms is None else _int(next_ms, "next_ms", 0), actor]
    return Call("schedule_pause", [keys.schedule(name), keys.schedules], args,
                _change_parse("schedule_pause", keys.queue, name))


def schedule_delete(queue: str, name: str, *, expected_version: int | None = None) -> Call[ScheduleChange]:
    keys = QueueKeys(queue)
    name = validate_schedule_name(name)
    args = [name, "" if expected_version is None else _int(expected_version, "expected version", 0)]

    def parse(reply: list[Any]) -> ScheduleChange:
        _refused("schedule_delete", reply, name)
        return ScheduleChange(keys.queue, name, int(_text(reply[1]) or 0), None)

    return Call("schedule_delete", [keys.schedule(name), keys.schedules], args, parse)


@dataclass(frozen=True, slots=True)
class TickResult:
    outcome: str  # enqueued | existed | skipped
    job_id: str
    now_ms: int
    next_ms: int | None
    earliest_ms: int | None  # the queue's earliest schedule score after the tick


def schedule_tick(queue: str, name: str, *, what: Literal["tick", "skip", "run"], tick_ms: int,
                  next_ms: int | None, version: int | None, actor: str = "") -> Call[TickResult]:
    """One tick (``tick``: enqueue ``NAME:TICK_MS``; ``skip``: move past it) or a run now (``run``: enqueue
    ``NAME:run:TICK_MS``, ``tick_ms`` the run's stamp). Refused (:class:`Refused`: ticked, changed, paused,
    not_due, missing) with nothing written when the tick is not the schedule's to take."""
    keys = QueueKeys(queue)
    name = validate_schedule_name(name)
    stamp = _int(tick_ms, "tick_ms", 0)
    suffix = f"run:{stamp}" if what == "run" else str(stamp)
    job_id = f"{name}:{suffix}"
    args = [name, what, stamp, "" if next_ms is None else _int(next_ms, "next_ms", 0),
            "" if version is None else _int(version, "version", 0), actor]

    def parse(reply: list[Any]) -> TickResult:
        _refused("schedule_tick", reply, name)
        if _text(reply[0]) == "DUPLICATE":
            raise Duplicate(job_id, _text(reply[1]), _text(reply[2]))
        nxt, earliest = _text(reply[4]), _text(reply[5])
        return TickResult(_text(reply[1]), _text(reply[2]), int(_text(reply[3])), int(nxt) if nxt else None,
                          int(float(earliest)) if earliest else None)

    return Call("schedule_tick", [*keys.script_keys(job_id), keys.schedule(name), keys.schedules], args, parse,
                registers=keys.queue)


# The schedule index: which queues hold schedules (a hint, outside every slot; PROTOCOL.md section 9b).

def index_hint_command(queue: str, next_ms: int) -> tuple[Any, ...]:
    """What follows a schedule's add, edit or resume: its queue is due in the index by its next tick."""
    return ("ZADD", SCHEDULE_INDEX, "LT", int(next_ms), validate_queue_name(queue))


def _hint(mq: EchoMQ, queue: str, next_ms: int | None) -> None:
    if next_ms is not None:
        mq.redis.execute_command(*index_hint_command(queue, next_ms))


def _server_now(mq: EchoMQ, queue: str) -> int:
    return int(mq.server_time_ms(queue))


def add_schedule(mq: EchoMQ, queue: str, name: str, definition: Definition, *,
                 now_ms: int | None = None) -> ScheduleChange:
    """Adds a schedule whose first tick is the first after ``now_ms`` (default: the server's now); refused
    ``exists`` when the name is taken in the queue, ``full`` at 1000."""
    now = _server_now(mq, queue) if now_ms is None else now_ms
    change = mq.run(schedule_set(queue, name, definition, mode="add", now_ms=now, actor=mq.actor))
    _hint(mq, queue, None if definition.paused else change.next_ms)
    return change


def update_schedule(mq: EchoMQ, queue: str, name: str, definition: Definition, *,
                    expected_version: int | None = None, now_ms: int | None = None) -> ScheduleChange:
    """Replaces a schedule's definition (refused ``changed`` when ``expected_version`` is not the stored one)."""
    now = _server_now(mq, queue) if now_ms is None else now_ms
    change = mq.run(schedule_set(queue, name, definition, mode="update", now_ms=now,
                                 expected_version=expected_version, actor=mq.actor))
    _hint(mq, queue, None if definition.paused else change.next_ms)
    return change


def pause_schedule(mq: EchoMQ, queue: str, name: str, *, expected_version: int | None = None) -> ScheduleChange:
    return mq.run(schedule_pause(queue, name, pause=True, expected_version=expected_version, actor=mq.actor))


def resume_schedule(mq: EchoMQ, queue: str, name: str, *, expected_version: int | None = None,
                    now_ms: int | None = None) -> ScheduleChange:
    """Resumes from the first tick after now: the ticks missed while paused are not enqueued."""
    found = get_schedule(mq, queue, name)
    if found.when is None:
        raise InvalidInput(f"schedule {name} of {queue} has a definition that does not read; edit it first")
    next_ms = found.when.next_after(_server_now(mq, queue) if now_ms is None else now_ms)
    change = mq.run(schedule_pause(queue, name, pause=False, next_ms=next_ms, expected_version=expected_version,
                                   actor=mq.actor))
    if not change.already:
        _hint(mq, queue, change.next_ms)
    return change


def delete_schedule(mq: EchoMQ, queue: str, name: str, *, expected_version: int | None = None) -> ScheduleChange:
    return mq.run(schedule_delete(queue, name, expected_version=expected_version))


def run_now(mq: EchoMQ, queue: str, name: str, *, stamp_ms: int | None = None) -> str:
    """Enqueues one job of the schedule now (``NAME:run:STAMP``), paused or not; returns its id. The same
    ``stamp_ms`` twice is one run (:class:`Duplicate` the second time)."""
    stamp = int(time.time() * 1000) if stamp_ms is None else stamp_ms
    return mq.run(schedule_tick(queue, name, what="run", tick_ms=stamp, next_ms=None, version=None,
                                actor=mq.actor)).job_id


def get_schedule(mq: EchoMQ, queue: str, name: str) -> Schedule:
    """One schedule (:class:`Refused` ``missing`` when the queue has none of that name)."""
    name = validate_schedule_name(name)
    page = mq.run(schedules(queue, limit=PAGE_LIMIT))
    while True:
        for found in page.schedules:
            if found.name == name:
                return found
        if page.after is None:
            raise ScheduleRefused("schedule", name, "missing", "", "")
        page = mq.run(schedules(queue, after=page.after, limit=PAGE_LIMIT))


def scheduled_queues(mq: EchoMQ, *, limit: int = INDEX_PAGE) -> list[str]:
    """The queues the schedule index names (at most ``limit``), by name."""
    try:
        names = mq.redis.zrange(SCHEDULE_INDEX, 0, _int(limit, "limit", 1, 10_000) - 1)
    except Exception as error:
        raise _as_error(error) from error
    found = []
    for raw in names:
        try:
            found.append(validate_queue_name(_text(raw)))
        except InvalidInput:
            continue
    return sorted(found)


def _as_error(error: Exception) -> EmqError:
    from .redis_errors import translate
    translated = translate(error, "schedule_index")
    return translated if isinstance(translated, EmqError) else EmqError(str(error))


@dataclass(frozen=True, slots=True)
class ScheduleStatuses:
    now_ms: int
    schedules: list[Schedule]
    # Where the next page starts: (queue, cursor score, cursor name); None when this is the last page.
    after: tuple[str, int, str] | None
    unreadable: dict[str, str] = field(default_factory=dict)  # queue -> why its schedules could not be read


def schedule_statuses(mq: EchoMQ, *, queue: str | None = None, limit: int = 50,
                      after: tuple[str, int, str] | None = None) -> ScheduleStatuses:
    """Every schedule (of ``queue``, or of every queue the index names), a bounded page at a time, queue by
    queue and next tick first: name, next tick, last tick, last outcome, paused, and
    :meth:`Schedule.overdue_ms` for the dead-man's switch ("expected by T, not seen").

    At most ``limit`` (1..100) schedules and one ``schedules`` read per queue looked at."""
    limit = _int(limit, "limit", 1, PAGE_LIMIT)
    names = [validate_queue_name(queue)] if queue is not None else scheduled_queues(mq)
    if after is not None:
        names = [n for n in names if n >= after[0]]
    found: list[Schedule] = []
    unreadable: dict[str, str] = {}
    now = 0
    for name in names:
        cursor = (after[1], after[2]) if after is not None and name == after[0] and after[1] >= 0 else None
        try:
            page = mq.run(schedules(name, after=cursor, limit=limit - len(found)))
        except EmqError as error:
            unreadable[name] = str(error)
            continue
        now = max(now, page.now_ms)
        found.extend(page.schedules)
        if len(found) >= limit:
            if page.after is not None:
                return ScheduleStatuses(now, found, (name, *page.after), unreadable)
            rest = [n for n in names if n > name]
            return ScheduleStatuses(now, found, (rest[0], -1, "") if rest else None, unreadable)
    return ScheduleStatuses(now or int(time.time() * 1000), found, None, unreadable)
