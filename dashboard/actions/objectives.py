"""Setting and removing latency objectives: an operator's act, checked, made with one script, audited."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from dashboard.services import emq
from queues import Refused, Unavailable, slo

from . import access
from .models import AuditEntry


def _check(user: Any, name: str) -> None:
    reason = access.refusal(user, "manage_slos", name)
    if reason is not None:
        raise PermissionDenied(reason)


def _refused(name: str, refusal: Refused) -> str:
    if refusal.reason == "missing":
        return f"refused: no objective is set for {name}"
    if refusal.reason == "full":
        return f"refused: {refusal.state} objectives are set already; delete one first"
    return refusal.describe()


def _entry(user: Any, name: str, action: str, parameters: dict[str, Any], outcome: str, text: str) -> AuditEntry:
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=name[:128], action=action, scope=AuditEntry.Scope.QUEUE,
        jobs=[], parameters=parameters, outcome=outcome, result=text, finished_at=now, updated_at=now)


def slo_change(*, user: Any, name: str, metric: str, under_ms: int, target: float | str,
               window_days: int) -> tuple[AuditEntry, slo.SloChange | None]:
    """Sets the objective of ``name`` (a queue or a pattern), replacing any; the audit row says what it was."""
    _check(user, name)
    call = slo.slo_set(name, metric=metric, under_ms=under_ms, target=target, window_days=window_days,
                       actor=f"console:{user.get_username()}")
    parameters: dict[str, Any] = {"metric": metric, "under_ms": under_ms, "target": str(target),
                                  "window_days": window_days}
    try:
        change = emq().run(call)
    except Refused as refusal:
        return _entry(user, name, AuditEntry.Action.SLO_SET, parameters, AuditEntry.Outcome.REFUSED,
                      _refused(name, refusal)), None
    except Unavailable as error:
        return _entry(user, name, AuditEntry.Action.SLO_SET, parameters, AuditEntry.Outcome.ERROR,
                      f"not known whether it was set: {error}"), None
    was = change.previous.describe() if change.previous else "none"
    parameters["previous"] = change.previous.as_dict() if change.previous else None
    now = slo.Slo(name, metric, under_ms, call.args[3], window_days)
    return _entry(user, name, AuditEntry.Action.SLO_SET, parameters, AuditEntry.Outcome.MOVED,
                  f"objective of {name}: {now.describe()} (was: {was})"), change


def slo_remove(*, user: Any, name: str) -> tuple[AuditEntry, slo.SloChange | None]:
    """Removes the objective set for ``name``; refused when there is none."""
    _check(user, name)
    try:
        change = emq().run(slo.slo_delete(name))
    except Refused as refusal:
        return _entry(user, name, AuditEntry.Action.SLO_DELETE, {}, AuditEntry.Outcome.REFUSED,
                      _refused(name, refusal)), None
    except Unavailable as error:
        return _entry(user, name, AuditEntry.Action.SLO_DELETE, {}, AuditEntry.Outcome.ERROR,
                      f"not known whether it was removed: {error}"), None
    previous = change.previous
    return _entry(user, name, AuditEntry.Action.SLO_DELETE, {"previous": previous.as_dict() if previous else None},
                  AuditEntry.Outcome.MOVED,
                  f"objective of {name} removed (was: {previous.describe() if previous else '?'})"), change
