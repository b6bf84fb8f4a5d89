"""Schedules in the console: what an operator's press would do (a confirmation's words) and doing it, audited.

Each action names the schedule's version the page showed: the script refuses it (``changed``) when the
schedule was edited, paused or resumed since, so a press never acts on a schedule the operator did not see.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from dashboard.actions import access
from dashboard.actions.confirmations import Proposal
from dashboard.actions.models import AuditEntry
from dashboard.actions.previews import Preview
from dashboard.services import emq
from queues import InvalidInput, Refused, Unavailable, validate_queue_name
from queues.errors import Duplicate
from queues.schedules import (
    Definition,
    Schedule,
    ScheduleRefused,
    add_schedule,
    delete_schedule,
    get_schedule,
    pause_schedule,
    resume_schedule,
    run_now,
    update_schedule,
)

# Each press, its audit action and its words.
ACTIONS: Final = {
    "schedule_pause": AuditEntry.Action.SCHEDULE_PAUSE,
    "schedule_resume": AuditEntry.Action.SCHEDULE_RESUME,
    "schedule_run": AuditEntry.Action.SCHEDULE_RUN,
    "schedule_edit": AuditEntry.Action.SCHEDULE_EDIT,
    "schedule_delete": AuditEntry.Action.SCHEDULE_DELETE,
}
PAYLOAD_KEPT: Final = 200


@dataclass(frozen=True, slots=True)
class SchedulePress:
    """A press on one schedule exactly as it would run: what a confirmation is bound to."""

    action: str
    queue: str
    name: str
    version: int
    definition: Definition | None = None  # schedule_edit
    stamp: int | None = None  # schedule_run: the run's job is NAME:run:STAMP

    @classmethod
    def parse(cls, data: Any, *, stamp_now: int) -> SchedulePress:
        action = data.get("action", "")
        if action not in ACTIONS:
            raise InvalidInput(f"unknown schedule action {action!r}")
        version_text = data.get("version", "")
        if not version_text.isascii() or not version_text.isdigit() or len(version_text) > 14:
            raise InvalidInput(f"version must be the schedule's version as shown, not {version_text!r}")
        definition = definition_from(data) if action == "schedule_edit" else None
        stamp = None
        if action == "schedule_run":
            text = data.get("stamp", "")
            stamp = int(text) if text.isascii() and text.isdigit() and 0 < len(text) <= 14 else stamp_now
        return cls(action, validate_queue_name(data.get("q", "")), data.get("name", ""), int(version_text),
                   definition, stamp)

    @property
    def proposal(self) -> Proposal:
        parameters: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.definition is not None:
            parameters["definition"] = definition_fields(self.definition)
        if self.stamp is not None:
            parameters["stamp"] = self.stamp
        return Proposal(self.action, self.queue, AuditEntry.Scope.QUEUE, parameters)

    def hidden(self) -> list[tuple[str, str]]:
        fields = [("action", self.action), ("q", self.queue), ("name", self.name), ("version", str(self.version))]
        if self.definition is not None:
            fields += [(k, str(v)) for k, v in definition_fields(self.definition).items()]
        if self.stamp is not None:
            fields.append(("stamp", str(self.stamp)))
        return fields


def definition_fields(definition: Definition) -> dict[str, Any]:
    when = definition.when
    return {"cron": when.cron, "tz": when.tz, "every_ms": when.every_ms or "", "max_attempts": definition.max_attempts,
            "missed": definition.missed, "payload": definition.payload.decode(errors="replace")}


def definition_from(data: Any) -> Definition:
    """A schedule's definition from a form: a cron with a time zone, or an interval in ms."""
    cron, every = data.get("cron", "").strip(), data.get("every_ms", "").strip()
    if every and (not every.isascii() or not every.isdigit() or len(every) > 14):
        raise InvalidInput(f"every_ms must be a whole number of milliseconds, not {every!r}")
    attempts = data.get("max_attempts", "3").strip()
    if not attempts.isascii() or not attempts.isdigit() or len(attempts) > 7:
        raise InvalidInput(f"max attempts must be a whole number, not {attempts!r}")
    return Definition.of(cron=cron or None, tz=data.get("tz", "").strip() or None,
                         every_ms=int(every) if every and not cron else None, payload=data.get("payload", ""),
                         max_attempts=int(attempts), missed=data.get("missed", "once"))


def check_access(user: Any, queue: str) -> None:
    """Every change of a schedule (add, edit, pause, resume, run now, delete) needs the one schedules permission."""
    reason = access.refusal(user, "manage_schedules", queue)
    if reason is not None:
        raise PermissionDenied(reason)


def schedule_preview(press: SchedulePress) -> Preview:
    """What the press does now, in the confirmation's words (``nothing`` when it would do nothing)."""
    proposal = press.proposal
    try:
        found = get_schedule(emq(), press.queue, press.name)
    except Refused:
        return Preview(proposal, 0, "", "", "", "", "Close", nothing=f"{press.queue} has no schedule {press.name}.")
    if found.version != press.version:
        return Preview(proposal, 0, "", "", "", "", "Close",
                       nothing=f"Schedule {press.name} changed since it was shown (version {found.version}, the page "
                               f"showed {press.version}): reload the page.")
    when = found.when.describe() if found.when else "its definition"
    if press.action == "schedule_pause":
        if found.paused:
            return Preview(proposal, 0, "", "", "", "", "Close", nothing=f"Schedule {press.name} is paused already.")
        return Preview(proposal, 1, f"Pause schedule {press.name} ({when}) of", "? It enqueues nothing until resumed.",
                       "Ticks that pass while it is paused are not made up.", "Yes, pause it", "Keep it running")
    if press.action == "schedule_resume":
        if not found.paused:
            return Preview(proposal, 0, "", "", "", "", "Close", nothing=f"Schedule {press.name} is not paused.")
        return Preview(proposal, 1, f"Resume schedule {press.name} ({when}) of", "?",
                       "It ticks again from its next tick after now; the ticks missed while paused are not enqueued.",
                       "Yes, resume it", "Keep it paused")
    if press.action == "schedule_run":
        return Preview(proposal, 1, f"Run schedule {press.name} now: enqueue one job into", "?",
                       f"The job is {press.name}:run:{press.stamp}, outside the ticks (they go on as before).",
                       "Yes, enqueue it", "Do not run")
    if press.action == "schedule_delete":
        return Preview(proposal, 1, f"Delete schedule {press.name} ({when}) of", "?",
                       f"It enqueues nothing more; the {found.ticks + found.runs} jobs it made stay in the queue.",
                       "Yes, delete it", "Keep it")
    assert press.definition is not None
    return Preview(proposal, 1, f"Change schedule {press.name} of", f" to {press.definition.when.describe()}?",
                   f"Was: {when}. Its next tick is counted again from now; ticks already enqueued stay enqueued.",
                   "Yes, change it", "Keep it as it is")


def _words(press: SchedulePress, refusal: Refused) -> str:
    if refusal.reason == "changed":
        return f"refused: schedule {press.name} changed since it was shown (now version {refusal.state}); nothing was done"
    if refusal.reason == "missing":
        return f"refused: {press.queue} has no schedule {press.name}"
    return refusal.describe()


def schedule_act(*, user: Any, press: SchedulePress) -> AuditEntry:
    """Makes the press with one script and writes its audit row (moved, refused or error). Raises
    PermissionDenied (nothing done; the caller records it) and InvalidInput."""
    check_access(user, press.queue)
    mq, q, name, version = emq(), press.queue, press.name, press.version
    parameters: dict[str, Any] = {"name": name, "version": version}
    outcome, text = AuditEntry.Outcome.MOVED, ""
    try:
        if press.action == "schedule_pause":
            change = pause_schedule(mq, q, name, expected_version=version)
            text = f"schedule {name} of {q} paused" if not change.already else f"schedule {name} was paused already"
        elif press.action == "schedule_resume":
            change = resume_schedule(mq, q, name, expected_version=version)
            text = (f"schedule {name} of {q} resumed; next tick {_iso(change.next_ms)}" if not change.already
                    else f"schedule {name} was running already")
        elif press.action == "schedule_run":
            assert press.stamp is not None
            parameters["stamp"] = press.stamp
            found = get_schedule(mq, q, name)
            if found.version != version:
                raise ScheduleRefused("schedule", name, "changed", str(found.version), "")
            job_id = run_now(mq, q, name, stamp_ms=press.stamp)
            parameters["job"] = job_id
            text = f"enqueued {job_id} into {q}"
        elif press.action == "schedule_delete":
            found = get_schedule(mq, q, name)
            delete_schedule(mq, q, name, expected_version=version)
            text = f"schedule {name} of {q} deleted (was: {found.when.describe() if found.when else '?'})"
        else:
            assert press.definition is not None
            fields = definition_fields(press.definition)
            fields["payload"] = fields["payload"][:PAYLOAD_KEPT]
            parameters["definition"] = fields
            change = update_schedule(mq, q, name, press.definition, expected_version=version)
            text = f"schedule {name} of {q} is now {press.definition.when.describe()}; next tick {_iso(change.next_ms)}"
    except Duplicate as duplicate:
        outcome, text = AuditEntry.Outcome.REFUSED, f"refused: {duplicate.job_id} was enqueued already (one run)"
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, _words(press, refusal)
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it was done: {error}"
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=q, action=ACTIONS[press.action], scope=AuditEntry.Scope.QUEUE,
        jobs=[], parameters=parameters, outcome=outcome, result=text, finished_at=now, updated_at=now)


def _iso(ms: int | None) -> str:
    from datetime import UTC, datetime
    return "-" if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def schedule_for_edit(queue: str, name: str) -> Schedule:
    return get_schedule(emq(), validate_queue_name(queue), name)


def schedule_add_act(*, user: Any, queue: str, name: str, definition: Definition) -> AuditEntry:
    """Adds a schedule (not destructive: no confirmation), as an audit row; refused when the name is taken."""
    check_access(user, queue)
    fields = definition_fields(definition)
    fields["payload"] = fields["payload"][:PAYLOAD_KEPT]
    parameters: dict[str, Any] = {"name": name, "definition": fields, "paused": definition.paused}
    try:
        change = add_schedule(emq(), queue, name, definition)
    except Refused as refusal:
        outcome = AuditEntry.Outcome.REFUSED
        text = (f"refused: {queue} has a schedule {name} already" if refusal.reason == "exists"
                else f"refused: {queue} has {refusal.state} schedules, the most it may" if refusal.reason == "full"
                else refusal.describe())
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it was added: {error}"
    else:
        outcome = AuditEntry.Outcome.MOVED
        text = f"schedule {name} of {queue} added: {definition.when.describe()}, " + (
            "paused" if definition.paused else f"first tick {_iso(change.next_ms)}")
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=AuditEntry.Action.SCHEDULE_ADD,
        scope=AuditEntry.Scope.QUEUE, jobs=[], parameters=parameters, outcome=outcome, result=text, finished_at=now,
        updated_at=now)
