"""The schedules' shapes in the API (see ``/api/schedules``)."""

from __future__ import annotations

from typing import Literal

from ninja import Field, Schema

from .schemas import QUEUE_PATTERN, ConfirmationOut

SCHEDULE_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
CONFIRMATION_HELP = "The confirmation a 428 answer gave; it runs the action once, within 2 minutes, for you only"


class RecentJobOut(Schema):
    job: str = Field(description="The job's id: NAME:TICK_MS for a tick, NAME:run:STAMP for a run")
    outcome: str = Field(description="pending, active, done, failed, or gone (purged or deleted)")


class ScheduleOut(Schema):
    queue: str
    name: str
    key_type: str = Field(description="hash; another type (or none) is odd data another writer left")
    cron: str | None
    tz: str | None
    every_ms: int | None
    describe: str = Field(description="When it ticks, in words")
    missed: str = Field(description="once: a tick reached over 60 s late is enqueued once; skip: it is skipped")
    paused: bool
    max_attempts: int | None
    version: int = Field(description="Send it back with an action: refused when the schedule changed since")
    next_ms: int | None = Field(description="Its next tick (ms); still shown while paused")
    last_tick_ms: int | None
    last_job: str
    last_enqueued_ms: int | None
    last_outcome: str = Field(description="The newest job's state ('' none yet, gone when purged)")
    overdue_ms: int = Field(description="How long its next tick is past and not enqueued (0: on time or paused)")
    ticks: int
    runs: int
    skipped: int
    created_ms: int | None
    updated_ms: int | None
    updated_by: str
    paused_ms: int | None
    paused_by: str
    payload_length: int
    payload_head: str = Field(description="The payload when it is at most 256 bytes, else its first 256 bytes")
    recent: list[RecentJobOut] = Field(description="The last 20 jobs it enqueued, oldest first")


class ScheduleCursorOut(Schema):
    queue: str
    score: int
    name: str


class ScheduleListOut(Schema):
    now_ms: int
    schedules: list[ScheduleOut]
    next: ScheduleCursorOut | None = Field(description="Send as after_queue, after_score, after_name for the next page")
    unreadable: dict[str, str] = Field(description="Queues whose schedules could not be read, and why")


class DefinitionIn(Schema):
    cron: str = Field("", max_length=128, description="5 fields, e.g. '0 2 * * *'; or leave empty and give every_ms")
    tz: str = Field("UTC", max_length=64, description="The cron's IANA time zone")
    every_ms: int | None = Field(None, ge=1000, le=315_360_000_000,
                                 description="An interval instead of a cron: ticks at its multiples since the epoch")
    payload: str = Field("", max_length=1_048_576)
    max_attempts: int = Field(3, ge=1, le=1_000_000)
    missed: Literal["once", "skip"] = "once"


class ScheduleIn(DefinitionIn):
    queue: str = Field(pattern=QUEUE_PATTERN, max_length=128)
    name: str = Field(pattern=SCHEDULE_NAME_PATTERN, max_length=64)
    paused: bool = False


class ScheduleActionIn(Schema):
    action: Literal["pause", "resume", "run", "edit", "delete"]
    version: int = Field(ge=0, le=99_999_999_999_999, description="The version you saw")
    definition: DefinitionIn | None = Field(None, description="edit only: the new definition")
    stamp: int | None = Field(None, ge=1, le=99_999_999_999_999,
                              description="run only: the run's job is NAME:run:STAMP (the 428 answer names it)")
    confirmation: str = Field("", description=CONFIRMATION_HELP)


class ScheduleConfirmationOut(ConfirmationOut):
    stamp: int | None = Field(None, description="run only: send it back as stamp with the confirmation")
