"""Making and deleting alert rules and silences: operators only, within their queue grants, every change audited.

A rule carries its queue's data to a webhook or a mailbox, so making one asks
what acting on the queue asks (the operators role and a grant that covers
the queue) and what reading it asks (a saved view the maker may open). The
webhook secret is given by the maker or generated here, and returned once,
by :func:`rule_create`; nothing reads it back to a person afterwards.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from dashboard.actions import access
from dashboard.actions.models import AuditEntry
from dashboard.saved_views.services import ViewForbidden, ViewMissing, view_for
from queues import InvalidInput, validate_queue_name
from queues.failures import validate_group
from queues.keys import validate_schedule_name

from .conditions import BURN_WINDOWS, NO_CONSUMER_CODES, NOT_DRAINING_CODES
from .models import NAME_LIMIT, AlertRule, AlertSilence

SECRET_MIN: Final = 16
SECRET_MAX: Final = 128
EMAILS_MAX: Final = 20
RULES_MAX: Final = 200
SILENCE_MAX: Final = timedelta(days=30)
# Words a person or the CLI may use for a why rule's codes.
WHY_PRESETS: Final[dict[str, tuple[str, ...]]] = {"not_draining": NOT_DRAINING_CODES, "no_consumer": NO_CONSUMER_CODES}
_DURATION: Final = re.compile(r"^(\d+)\s*(m|h|d)$")


class AlertRefused(PermissionError):
    """The caller may not make (or change) this rule or silence: the text says why."""


@dataclass(frozen=True, slots=True)
class MadeRule:
    rule: AlertRule
    secret: str  # shown once, to the maker
    audit_id: int


def _user_refusal(user: Any, queue: str) -> str | None:
    return access.refusal(user, "manage_alerts", queue or None) or (access.see_refusal(user, queue) if queue else None)


def _parameters(kind: str, queue: str, data: Mapping[str, Any]) -> dict[str, Any]:
    def at_least() -> int:
        value = data.get("at_least") or 1
        try:
            number = int(value)
        except (TypeError, ValueError):
            raise InvalidInput(f"at_least is a whole number of jobs, not {value!r}") from None
        if not 1 <= number <= 10_000:
            raise InvalidInput("at_least is between 1 and 10000 jobs")
        return number

    if kind == AlertRule.Kind.WHY:
        given = data.get("codes") or "not_draining"
        names = given.split(",") if isinstance(given, str) else list(given)
        codes: list[str] = []
        for name in (str(n).strip() for n in names if str(n).strip()):
            if name in WHY_PRESETS:
                codes += WHY_PRESETS[name]
            elif name in NOT_DRAINING_CODES:
                codes.append(name)
            else:
                raise InvalidInput(f"a why rule watches not_draining, no_consumer or the codes "
                                   f"{', '.join(NOT_DRAINING_CODES)}, not {name!r}")
        return {"codes": list(dict.fromkeys(codes))}
    if kind == AlertRule.Kind.FAILURE_GROUP:
        return {"group": validate_group(str(data.get("group") or "")), "at_least": at_least()}
    if kind == AlertRule.Kind.SLO_BURN:
        try:
            threshold = float(data.get("threshold") or 14.4)
        except (TypeError, ValueError):
            raise InvalidInput(f"threshold is a burn rate, like 14.4, not {data.get('threshold')!r}") from None
        if not 0 < threshold <= 1000:
            raise InvalidInput("a burn-rate threshold is above 0 and at most 1000")
        given = data.get("windows") or "1h,5m"
        windows = [w.strip() for w in (given.split(",") if isinstance(given, str) else given) if str(w).strip()]
        if not windows or any(w not in BURN_WINDOWS for w in windows):
            raise InvalidInput(f"burn windows are among {', '.join(BURN_WINDOWS)}")
        return {"threshold": threshold, "windows": windows}
    if kind == AlertRule.Kind.VIEW:
        return {"at_least": at_least()}
    if kind == AlertRule.Kind.SCHEDULE:
        out: dict[str, Any] = {"schedule": validate_schedule_name(str(data.get("schedule") or ""))}
        grace = data.get("grace_s")
        if grace not in (None, ""):
            try:
                out["grace_s"] = float(grace)
            except (TypeError, ValueError):
                raise InvalidInput(f"grace_s is a number of seconds, not {grace!r}") from None
            if not 0 <= out["grace_s"] <= 86_400:
                raise InvalidInput("grace_s is between 0 and 86400 seconds")
        return out
    raise InvalidInput(f"an alert rule watches a saved view, a failure group, a queue's why state, a burn rate or a "
                       f"schedule, not {kind!r}")


def _webhook(url: str) -> str:
    url = (url or "").strip()
    if not url:
        return ""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or len(url) > 500:
        raise InvalidInput(f"a webhook is an http or https URL of at most 500 characters, not {url[:80]!r}")
    return url


def _emails(given: str | Sequence[str] | None) -> list[str]:
    names = given.split(",") if isinstance(given, str) else list(given or [])
    found = [str(n).strip() for n in names if str(n).strip()]
    if len(found) > EMAILS_MAX:
        raise InvalidInput(f"at most {EMAILS_MAX} addresses")
    for address in found:
        try:
            validate_email(address)
        except ValidationError:
            raise InvalidInput(f"{address!r} is not an e-mail address") from None
    return list(dict.fromkeys(found))


def rule_create(*, user: Any, name: str, kind: str, queue: str = "", view_id: int | None = None,
                parameters: Mapping[str, Any] | None = None, webhook_url: str = "", secret: str = "",
                emails: str | Sequence[str] | None = None) -> MadeRule:
    """Makes a rule; InvalidInput (400) for what is wrong with it, AlertRefused (403) for who may not."""
    name = (name or "").strip()
    if not name or len(name) > NAME_LIMIT:
        raise InvalidInput(f"a rule's name is 1 to {NAME_LIMIT} characters")
    view = None
    if kind == AlertRule.Kind.VIEW:
        if view_id is None:
            raise InvalidInput("name the saved view the rule watches")
        try:
            view = view_for(user, int(view_id))
        except ViewMissing as missing:
            raise InvalidInput(str(missing)) from None
        except ViewForbidden as forbidden:
            raise AlertRefused(str(forbidden)) from None
        queue = view.queue
    elif kind in AlertRule.Kind.values:
        queue = validate_queue_name(queue)
    refusal = _user_refusal(user, queue)
    if refusal is not None:
        raise AlertRefused(refusal)
    params = _parameters(kind, queue, parameters or {})
    url, addresses = _webhook(webhook_url), _emails(emails)
    if not url and not addresses:
        raise InvalidInput("give a webhook URL or an e-mail address to deliver to")
    secret = secret.strip() if secret else secrets.token_urlsafe(32)
    if not SECRET_MIN <= len(secret) <= SECRET_MAX or not secret.isprintable():
        raise InvalidInput(f"a webhook secret is {SECRET_MIN} to {SECRET_MAX} printable characters")
    with transaction.atomic():
        if AlertRule.objects.count() >= RULES_MAX:
            raise InvalidInput(f"the console holds {RULES_MAX} alert rules: delete one first")
        try:
            rule = AlertRule.objects.create(owner=user, name=name, kind=kind, queue=queue, view=view,
                                            parameters=params, webhook_url=url, secret=secret, emails=addresses)
        except IntegrityError:
            raise InvalidInput(f"an alert rule named {name!r} exists already") from None
        entry = _audit(user, rule, AuditEntry.Action.ALERT_ADD,
                       f"made alert rule {rule.name}: {rule.get_kind_display()}"
                       f"{f' on {queue}' if queue else ''}, to {_targets(rule)}", kind=kind, parameters=params)
    return MadeRule(rule, secret, entry.pk)


def _targets(rule: AlertRule) -> str:
    parts = ([f"webhook {urlsplit(rule.webhook_url).hostname}"] if rule.webhook_url else []) + \
            ([f"{len(rule.emails)} address(es)"] if rule.emails else [])
    return " and ".join(parts)


def _audit(user: Any, rule: AlertRule | None, action: str, result: str, **parameters: Any) -> AuditEntry:
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=rule.queue if rule else "", action=action,
        scope=AuditEntry.Scope.QUEUE, outcome=AuditEntry.Outcome.MOVED, result=result,
        parameters={"rule": rule.pk if rule else None, "rule_name": rule.name if rule else None, **parameters},
        finished_at=now, updated_at=now)


def rule_find(name_or_id: str | int) -> AlertRule:
    text = str(name_or_id)
    found = AlertRule.objects.filter(pk=int(text)).first() if text.isascii() and text.isdigit() and len(text) < 19 \
        else AlertRule.objects.filter(name=text).first()
    if found is None:
        raise LookupError(f"there is no alert rule {text!r}")
    return found


def rule_delete(*, user: Any, rule: AlertRule) -> int:
    refusal = _user_refusal(user, rule.queue)
    if refusal is not None:
        raise AlertRefused(refusal)
    with transaction.atomic():
        entry = _audit(user, rule, AuditEntry.Action.ALERT_DELETE, f"deleted alert rule {rule.name}")
        rule.delete()
    return entry.pk


def parse_silence_end(*, until: str = "", duration: str = "", now: datetime | None = None) -> datetime:
    """When a silence ends: ``duration`` (30m, 2h, 1d) from now, or ``until`` (ISO 8601, UTC unless it says)."""
    now = now or timezone.now()
    if duration:
        match = _DURATION.match(duration.strip())
        if not match:
            raise InvalidInput(f"a silence lasts a number of minutes, hours or days, like 30m, 2h or 1d, not {duration!r}")
        ends = now + timedelta(**{{"m": "minutes", "h": "hours", "d": "days"}[match[2]]: int(match[1])})
    elif until:
        try:
            ends = datetime.fromisoformat(until.strip().replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(f"cannot read the time {until!r}: give an ISO time like 2026-12-02T06:00Z") from None
        if ends.tzinfo is None:
            ends = ends.replace(tzinfo=UTC)
    else:
        raise InvalidInput("say when the silence ends: for how long (2h) or until when (an ISO time)")
    if ends <= now:
        raise InvalidInput("a silence must end in the future")
    if ends - now > SILENCE_MAX:
        raise InvalidInput(f"a silence lasts at most {SILENCE_MAX.days} days")
    return ends


def silence_create(*, user: Any, rule: AlertRule | None, ends_at: datetime, reason: str = "") -> AlertSilence:
    """Silences one rule (or, for an operator without grants, every rule) until ``ends_at``; audited."""
    refusal = _user_refusal(user, rule.queue) if rule else access.refusal(user, "manage_alerts") or access.see_refusal(user, "")
    if refusal is not None:
        raise AlertRefused(refusal)
    reason = (reason or "").strip()[:500]
    with transaction.atomic():
        silence = AlertSilence.objects.create(rule=rule, ends_at=ends_at, reason=reason,
                                              created_by=user.get_username())
        _audit(user, rule, AuditEntry.Action.ALERT_SILENCE,
               f"silenced {rule.name if rule else 'every alert rule'} until {ends_at:%Y-%m-%d %H:%M:%S} UTC"
               + (f": {reason}" if reason else ""), silence=silence.pk, ends_at=ends_at.isoformat())
    return silence


def silence_end(*, user: Any, silence: AlertSilence) -> AlertSilence:
    rule = silence.rule
    refusal = _user_refusal(user, rule.queue) if rule else access.refusal(user, "manage_alerts") or access.see_refusal(user, "")
    if refusal is not None:
        raise AlertRefused(refusal)
    now = timezone.now()
    with transaction.atomic():
        silence.ends_at = min(silence.ends_at, now)
        silence.save(update_fields=["ends_at"])
        _audit(user, rule, AuditEntry.Action.ALERT_UNSILENCE,
               f"ended the silence of {rule.name if rule else 'every alert rule'}", silence=silence.pk)
    return silence


def silences_active(now: datetime | None = None) -> list[AlertSilence]:
    return list(AlertSilence.objects.select_related("rule").filter(ends_at__gt=now or timezone.now())[:200])
