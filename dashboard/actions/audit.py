"""Rows for what was refused: bounded to what validates, whatever the request held."""

from __future__ import annotations

from typing import Any, Final

from django.utils import timezone

from queues import InvalidInput, validate_job_id, validate_queue_name

from .models import AuditEntry, audit_actions

# A refused selection keeps this many of its ticked jobs (and how many there were).
FORBIDDEN_JOBS_KEPT: Final = 100


def record_refused(*, user: Any, data: Any, result: str, run_id: int | None = None) -> AuditEntry | None:
    """Writes a refused request into the log (by role, or for a confirmation that does not hold).

    Every refused request of a signed-in user is a row, but only what passes
    validation is kept, bounded: a known action (else "unknown"), a valid
    queue name (else none), valid job ids with the state and attempts shown,
    at most FORBIDDEN_JOBS_KEPT of them (and how many were ticked). ``run_id``
    names the bulk run a refused cancel aimed at.
    """
    if not user.is_authenticated:
        return None
    parameters: dict[str, object] = {}
    action: str
    jobs: list[dict[str, str]]
    if run_id is not None:
        run = AuditEntry.objects.filter(pk=run_id).only("queue", "scope").first()
        action, queue, jobs = AuditEntry.Action.CANCEL_RUN, run.queue if run else "", []
        scope = run.scope if run else AuditEntry.Scope.QUEUE
        parameters["run"] = run_id
    else:
        action = _known_action(data.get("move") or data.get("action") or "")
        queue = _valid_queue(data.get("q", ""))
        scope, jobs, parameters = _refused_jobs(data)
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=action, scope=scope, jobs=jobs,
        parameters=parameters, outcome=AuditEntry.Outcome.REFUSED, result=result, finished_at=now, updated_at=now)



def _known_action(text: object) -> str:
    if isinstance(text, str) and any(text == value for value, _ in audit_actions()):
        return text
    return AuditEntry.Action.UNKNOWN


def _valid_queue(text: object) -> str:
    try:
        return validate_queue_name(text)
    except InvalidInput:
        return ""


def _seen(job_id: object, state: object, attempts: object) -> dict[str, str] | None:
    """A job as a refused request named it, or None when its id is not a valid one."""
    try:
        valid_id = validate_job_id(job_id)
    except InvalidInput:
        return None
    shown = state if isinstance(state, str) and 0 < len(state) <= 64 else ""
    tries = attempts if isinstance(attempts, str) and attempts.isdigit() and len(attempts) <= 19 else ""
    return {"id": valid_id, "state": shown, "attempts": tries}


def _refused_jobs(data: Any) -> tuple[str, list[dict[str, str]], dict[str, object]]:
    ticked = data.getlist("job") if hasattr(data, "getlist") else []
    if data.get("id"):
        seen = _seen(data.get("id"), data.get("state", ""), data.get("attempts", ""))
        return AuditEntry.Scope.JOB, [seen] if seen else [], {} if seen else {"invalid_ids": 1}
    if not ticked:
        return AuditEntry.Scope.QUEUE, [], {}
    jobs: list[dict[str, str]] = []
    for text in ticked:
        state, _, rest = str(text).partition(":")
        attempts, _, job_id = rest.partition(":")
        seen = _seen(job_id, state, attempts)
        if seen is not None and len(jobs) < FORBIDDEN_JOBS_KEPT:
            jobs.append(seen)
    return AuditEntry.Scope.SELECTION, jobs, {"ticked": len(ticked)}


def record_lockout(sender: object, *, request: Any = None, username: str | None = None,
                   ip_address: str | None = None, **kwargs: Any) -> AuditEntry:
    """django-axes refused a login (too many failures for this name or address): a row, as refused."""
    from django.conf import settings

    minutes = settings.AXES_COOLOFF_TIME.total_seconds() / 60
    now = timezone.now()
    return AuditEntry.objects.create(
        username=(username or "")[:150], queue="", action=AuditEntry.Action.LOGIN, scope=AuditEntry.Scope.ACCOUNT,
        parameters={"address": str(ip_address or "")[:64]}, outcome=AuditEntry.Outcome.REFUSED,
        result=(f"locked out: {settings.AXES_FAILURE_LIMIT} failed logins for this user name from "
                f"{ip_address or 'this address'}, or for any names from it; logins are refused until {minutes:g} minutes "
                "pass without one"),
        finished_at=now, updated_at=now)
