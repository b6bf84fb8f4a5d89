"""One evaluation round: every enabled rule's condition read once, its state moved, its deliveries made.

A rule that starts to hold fires: its firing number goes up by one, the
firing is a row in the audit log, and one delivery per channel is created
for that number (unique per rule, firing, event and channel, so the same
firing is never delivered twice, even by two evaluators). While it holds it
stays firing and nothing more is sent; when it stops holding it resolves
(audited, and delivered as "resolved"). A silence lets the firing be recorded
but its deliveries are marked silenced instead of sent. Undecided conditions
change nothing. The round then makes the attempts that are due
(:func:`dashboard.alerts.delivery.deliver_due`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from django.db import transaction
from django.utils import timezone

from dashboard.actions.models import AuditEntry
from dashboard.services import emq
from queues import EchoMQ

from .conditions import Observation, Round, observe
from .delivery import audit, deliver_due, silence_of
from .models import AlertDelivery, AlertRule

# Rules evaluated per round, at most (by name); the page says when there are more.
RULES_PER_ROUND: Final = 200


@dataclass
class RoundReport:
    evaluated: int = 0
    fired: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    delivered: int = 0
    failed: int = 0
    finished: bool = True


def _payload(rule: AlertRule, event: str, seen: Observation, now: datetime) -> str:
    return json.dumps({
        "rule": {"id": rule.pk, "name": rule.name, "kind": rule.kind, "queue": rule.queue},
        "event": event, "firing": rule.firings, "since": (rule.firing_since or now).isoformat(),
        "at": now.isoformat(), "summary": seen.text, "details": seen.details,
    }, default=str, separators=(",", ":"))


def _deliveries(rule: AlertRule, event: str, seen: Observation, now: datetime) -> list[AlertDelivery]:
    channels = ([AlertDelivery.Channel.WEBHOOK] if rule.webhook_url else []) + \
               ([AlertDelivery.Channel.EMAIL] if rule.emails else [])
    silence = silence_of(rule, now)
    status = AlertDelivery.Status.SILENCED if silence else AlertDelivery.Status.PENDING
    note = f"silenced until {silence.ends_at:%Y-%m-%d %H:%M:%S} UTC" if silence else ""
    body = _payload(rule, event, seen, now)
    made = []
    for channel in channels:
        delivery, created = AlertDelivery.objects.get_or_create(
            rule=rule, firing=rule.firings, event=event, channel=channel,
            defaults={"body": body, "status": status, "next_attempt_at": now, "last_error": note})
        if created:
            made.append(delivery)
    if silence:
        audit(rule, AuditEntry.Action.ALERT_DELIVER, AuditEntry.Outcome.REFUSED,
              f"not delivered: {rule.name} #{rule.firings} {event}: silenced until "
              f"{silence.ends_at:%Y-%m-%d %H:%M:%S} UTC ({silence.reason or 'no reason given'})",
              firing=rule.firings, event=event, silence=silence.pk)
    return made


def _settle(rule_id: int, seen: Observation, now: datetime, report: RoundReport) -> None:
    with transaction.atomic():
        rule = AlertRule.objects.select_for_update().filter(pk=rule_id, enabled=True).first()
        if rule is None:
            return
        rule.evaluated_at = now
        fields = ["evaluated_at", "observed", "error"]
        if seen.holds is None:
            rule.error = seen.text[:1000]
            report.undecided.append(rule.name)
        else:
            rule.observed, rule.error = seen.text[:1000], ""
        if seen.holds and not rule.firing:
            rule.firing, rule.firings, rule.firing_since = True, rule.firings + 1, now
            fields += ["firing", "firings", "firing_since"]
            rule.save(update_fields=fields)
            audit(rule, AuditEntry.Action.ALERT_FIRE, AuditEntry.Outcome.MOVED,
                  f"{rule.name} fired (#{rule.firings}): {seen.text}", firing=rule.firings, details=seen.details)
            _deliveries(rule, AlertDelivery.Event.FIRING, seen, now)
            report.fired.append(rule.name)
            return
        if seen.holds is False and rule.firing:
            rule.firing = False
            fields.append("firing")
            rule.save(update_fields=fields)
            audit(rule, AuditEntry.Action.ALERT_RESOLVE, AuditEntry.Outcome.MOVED,
                  f"{rule.name} resolved (#{rule.firings}): {seen.text}", firing=rule.firings)
            _deliveries(rule, AlertDelivery.Event.RESOLVED, seen, now)
            report.resolved.append(rule.name)
            return
        rule.save(update_fields=fields)


def evaluate_round(*, mq: EchoMQ | None = None, now: datetime | None = None,
                   still_held: Callable[[], bool] | None = None) -> RoundReport:
    """One round over every enabled rule (at most RULES_PER_ROUND), then the deliveries that are due.

    ``still_held()`` runs after each rule; when it answers False (the lock was lost) the round ends there.
    """
    now = now or timezone.now()
    round_ = Round(mq or emq())
    report = RoundReport()
    for rule in AlertRule.objects.filter(enabled=True).select_related("view").order_by("name")[:RULES_PER_ROUND]:
        _settle(rule.pk, observe(round_, rule), now, report)
        report.evaluated += 1
        if still_held is not None and not still_held():
            report.finished = False
            return report
    for delivery in deliver_due(now=now):
        if delivery.status == AlertDelivery.Status.DELIVERED:
            report.delivered += 1
        elif delivery.status != AlertDelivery.Status.SILENCED:
            report.failed += 1
    return report
