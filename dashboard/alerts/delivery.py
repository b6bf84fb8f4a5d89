"""Delivering a firing: a signed webhook POST and an e-mail, retried with backoff, each attempt's end audited.

The webhook's body is JSON; its headers say which delivery it is
(``X-EMQ-Delivery``: the same on every retry, for the receiver to deduplicate
on), the event and when it was signed, and carry the signature:

    X-EMQ-Timestamp: 1796140800
    X-EMQ-Signature: v1=<hex HMAC-SHA256 of "<timestamp>." + body, keyed with the rule's secret>

A receiver recomputes the HMAC over the timestamp, a dot and the raw body,
compares in constant time, and refuses a timestamp far from its clock (a
replayed request). Each retry is signed afresh. A 2xx answer delivers; any
other answer, a timeout or a refused connection is retried after
``backoff_s(attempts)`` until ``MAX_ATTEMPTS``; redirects are not followed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from typing import Any, Final

from django.conf import settings
from django.core.mail import send_mail
from django.utils import timezone

from dashboard.actions.models import AuditEntry

from .models import AlertDelivery, AlertRule, AlertSilence

log = logging.getLogger(__name__)

MAX_ATTEMPTS: Final = 8
BACKOFF_FIRST_S: Final = 5
BACKOFF_MAX_S: Final = 600
WEBHOOK_TIMEOUT_S: Final = 5.0
# Deliveries sent per round, at most (the rest wait for the next round, oldest first).
DELIVERIES_PER_ROUND: Final = 50
ACTOR: Final = "alerts"
# An attempt in progress holds its delivery this long (longer than the webhook's timeout).
ATTEMPT_HELD_S: Final = 60


def backoff_s(attempts: int) -> int:
    """How long after its ``attempts``-th failed attempt a delivery is tried again: 5 s, 10 s, 20 s, ... 10 min."""
    return int(min(BACKOFF_FIRST_S * 2 ** max(attempts - 1, 0), BACKOFF_MAX_S))


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """``v1=`` and the hex HMAC-SHA256 of ``timestamp.body`` under ``secret``: what a receiver recomputes."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def silence_of(rule: AlertRule, now: datetime) -> AlertSilence | None:
    """The silence covering ``rule`` at ``now`` (its own or every rule's), the one lasting longest."""
    from django.db.models import Q

    return AlertSilence.objects.filter(Q(rule=rule) | Q(rule__isnull=True), ends_at__gt=now).order_by("-ends_at").first()


def audit(rule: AlertRule, action: str, outcome: str, result: str, **parameters: Any) -> AuditEntry:
    now = timezone.now()
    return AuditEntry.objects.create(
        username=ACTOR, queue=rule.queue, action=action, scope=AuditEntry.Scope.QUEUE, outcome=outcome,
        result=result, parameters={"rule": rule.pk, "rule_name": rule.name, **parameters}, finished_at=now,
        updated_at=now)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_opener = urllib.request.build_opener(_NoRedirects())


def _post_webhook(rule: AlertRule, delivery: AlertDelivery) -> None:
    """Sends it once; raises OSError (urllib's errors are) with what went wrong when not answered 2xx."""
    body = delivery.body.encode()
    timestamp = str(int(time.time()))
    request = urllib.request.Request(rule.webhook_url, data=body, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "EchoMQ-console-alerts",
        "X-EMQ-Event": delivery.event, "X-EMQ-Delivery": delivery.delivery_id,
        "X-EMQ-Timestamp": timestamp, "X-EMQ-Signature": signature(rule.secret, timestamp, body)})
    try:
        with _opener.open(request, timeout=WEBHOOK_TIMEOUT_S) as answer:
            status = answer.status
    except urllib.error.HTTPError as error:
        raise OSError(f"the receiver answered {error.code} {error.reason}") from None
    if not 200 <= status < 300:
        raise OSError(f"the receiver answered {status}")


def _send_mail(rule: AlertRule, delivery: AlertDelivery) -> None:
    data = json.loads(delivery.body)
    subject = f"[EchoMQ] {delivery.event.upper()}: {rule.name}"
    text = (f"{data.get('summary', '')}\n\nRule: {rule.name} ({rule.get_kind_display()})\nQueue: {rule.queue or '-'}\n"
            f"Firing #{delivery.firing} since {data.get('since', '')}\nEvent: {delivery.event}\n")
    sender = getattr(settings, "EMQ_ALERT_FROM_EMAIL", "") or settings.DEFAULT_FROM_EMAIL
    send_mail(subject, text, sender, list(rule.emails), fail_silently=False)


def deliver_one(delivery: AlertDelivery, *, now: datetime) -> AlertDelivery:
    """One attempt of ``delivery`` (unless a silence now covers its rule): delivered, retried later, or given up."""
    rule = delivery.rule
    silence = silence_of(rule, now)
    if silence is not None:
        delivery.status, delivery.last_error = AlertDelivery.Status.SILENCED, f"silenced until {silence.ends_at:%H:%M:%S}"
        delivery.save(update_fields=["status", "last_error"])
        audit(rule, AuditEntry.Action.ALERT_DELIVER, AuditEntry.Outcome.REFUSED,
              f"not delivered: {rule.name} #{delivery.firing} {delivery.event} by {delivery.channel}: silenced "
              f"until {silence.ends_at:%Y-%m-%d %H:%M:%S} UTC ({silence.reason or 'no reason given'})",
              firing=delivery.firing, event=delivery.event, channel=delivery.channel, silence=silence.pk)
        return delivery
    delivery.attempts += 1
    try:
        if delivery.channel == AlertDelivery.Channel.WEBHOOK:
            _post_webhook(rule, delivery)
        else:
            _send_mail(rule, delivery)
    except Exception as error:  # any failure to deliver is retried: the receiver's, the network's, the mail server's
        delivery.last_error = (str(error) or type(error).__name__)[:1000]
        given_up = delivery.attempts >= MAX_ATTEMPTS
        delivery.status = AlertDelivery.Status.FAILED if given_up else AlertDelivery.Status.PENDING
        delivery.next_attempt_at = now + timedelta(seconds=backoff_s(delivery.attempts))
        delivery.save(update_fields=["attempts", "last_error", "status", "next_attempt_at"])
        audit(rule, AuditEntry.Action.ALERT_DELIVER, AuditEntry.Outcome.ERROR,
              f"{'gave up on' if given_up else 'will retry'} {rule.name} #{delivery.firing} {delivery.event} by "
              f"{delivery.channel} after attempt {delivery.attempts}: {delivery.last_error}",
              firing=delivery.firing, event=delivery.event, channel=delivery.channel, attempts=delivery.attempts)
        return delivery
    delivery.status, delivery.delivered_at, delivery.last_error = AlertDelivery.Status.DELIVERED, now, ""
    delivery.save(update_fields=["attempts", "status", "delivered_at", "last_error"])
    audit(rule, AuditEntry.Action.ALERT_DELIVER, AuditEntry.Outcome.MOVED,
          f"delivered {rule.name} #{delivery.firing} {delivery.event} by {delivery.channel} "
          f"(attempt {delivery.attempts})", firing=delivery.firing, event=delivery.event, channel=delivery.channel,
          attempts=delivery.attempts)
    return delivery


def deliver_due(*, now: datetime | None = None, limit: int = DELIVERIES_PER_ROUND) -> list[AlertDelivery]:
    """Every delivery whose time has come (at most ``limit``, oldest first), one attempt each."""
    now = now or timezone.now()
    due = list(AlertDelivery.objects.select_related("rule").filter(
        status=AlertDelivery.Status.PENDING, next_attempt_at__lte=now).order_by("next_attempt_at", "id")[:limit])
    sent = []
    for delivery in due:
        # Taken for this attempt first: an evaluator that still believes it holds the lock finds it taken.
        taken = AlertDelivery.objects.filter(pk=delivery.pk, status=AlertDelivery.Status.PENDING,
                                             next_attempt_at=delivery.next_attempt_at).update(
            next_attempt_at=now + timedelta(seconds=ATTEMPT_HELD_S))
        if taken:
            sent.append(deliver_one(delivery, now=now))
    return sent
