"""Rows for what was refused: bounded to what validates, whatever the request held, and folded when repeated.

A refusal is a row, but the log cannot be flooded by pressing (or posting)
again and again: the same refusal of the same user (action, queue, scope and
reason) within FOLD_WINDOW is counted on the row already written
(``parameters["repeats"]``), and once a user has REFUSALS_PER_WINDOW refused
rows within the window, every further refusal of theirs is counted on the
latest one. Refused logins fold the same way, per address. So a user adds at
most REFUSALS_PER_WINDOW small rows a minute, however fast they post.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from queues import InvalidInput, validate_job_id, validate_queue_name

from .models import AuditEntry, audit_actions, bounded

# A refused selection keeps this many of its ticked jobs (and how many there were).
FORBIDDEN_JOBS_KEPT: Final = 5
FOLD_WINDOW: Final = timedelta(minutes=1)
REFUSALS_PER_WINDOW: Final = 10


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
    return _fold_or_create(Q(user=user), {
        "user": user, "username": user.get_username(), "queue": queue, "action": action, "scope": scope,
        "jobs": jobs, "parameters": parameters, "result": result}, same=("queue", "action", "scope", "result"))


def _fold_or_create(who: Q, fields: dict[str, Any], *, same: tuple[str, ...]) -> AuditEntry:
    """One more refusal by ``who``: counted on the row of the same refusal within FOLD_WINDOW, or on their
    latest row once they have REFUSALS_PER_WINDOW rows in it; otherwise a new row."""
    now = timezone.now()
    fields = {**fields, "result": bounded(fields["result"])}
    with transaction.atomic():
        recent = AuditEntry.objects.filter(who, outcome=AuditEntry.Outcome.REFUSED, created_at__gte=now - FOLD_WINDOW)
        row = recent.filter(**{name: fields[name] for name in same}).select_for_update().order_by("-id").first()
        if row is None and recent.count() >= REFUSALS_PER_WINDOW:
            row = recent.select_for_update().order_by("-id").first()
        if row is None:
            return AuditEntry.objects.create(**fields, outcome=AuditEntry.Outcome.REFUSED, finished_at=now,
                                             updated_at=now)
        parameters = dict(row.parameters) if isinstance(row.parameters, dict) else {}
        parameters["repeats"] = int(parameters.get("repeats") or 0) + 1
        row.parameters, row.finished_at, row.updated_at = parameters, now, now
        row.save(update_fields=["parameters", "finished_at", "updated_at"])
        return row



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
    address = str(ip_address or "")[:64]
    return _fold_or_create(Q(action=AuditEntry.Action.LOGIN, parameters__address=address), {
        "username": (username or "")[:150], "queue": "", "action": AuditEntry.Action.LOGIN,
        "scope": AuditEntry.Scope.ACCOUNT, "jobs": [], "parameters": {"address": address},
        "result": (f"locked out: {settings.AXES_FAILURE_LIMIT} failed logins for this user name from "
                   f"{ip_address or 'this address'}, or for any names from it; logins are refused until "
                   f"{minutes:g} minutes pass without one")}, same=("username", "result"))
