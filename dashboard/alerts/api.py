"""``/api/alerts`` and ``/api/silences``: alert rules and silences as JSON (what ``emq alert`` calls).

Everyone who may view the console reads the rules (never their secrets);
operators make, delete and silence them, within their queue grants, each
change in the audit log. A rule's webhook secret is in the answer that made
it, once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from ninja import Path, Router, Schema, Status
from pydantic import Field

from dashboard.api.schemas import ErrorOut
from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import READ_ONLY
from dashboard.permissions import performs
from dashboard.roles import VIEW_PERMISSION, can_view

from .models import NAME_LIMIT, AlertDelivery, AlertRule, AlertSilence
from .services import (
    AlertRefused,
    parse_silence_end,
    rule_create,
    rule_delete,
    rule_find,
    silence_create,
    silence_end,
    silences_active,
)

rules_router = Router(tags=["alerts"])
silences_router = Router(tags=["alerts"])
ERRORS: Final = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 503: ErrorOut}
MAX_ID: Final = 2**63 - 1


class RuleIn(Schema):
    name: str = Field(min_length=1, max_length=NAME_LIMIT)
    kind: Literal["why", "failure_group", "slo_burn", "view", "schedule"]
    queue: str = Field("", max_length=128, description="The queue watched (not for a saved view's rule)")
    view: int | None = Field(None, ge=1, le=MAX_ID, description="The saved view a view rule watches")
    codes: str = Field("", max_length=500, description="why: not_draining (default), no_consumer, or why codes, "
                                                       "comma separated")
    group: str = Field("", max_length=12, description="failure_group: the group (12 hex digits)")
    at_least: int = Field(1, ge=1, le=10_000, description="failure_group, view: fire at this many jobs")
    threshold: float = Field(14.4, gt=0, le=1000, description="slo_burn: fire when every window burns this fast")
    windows: str = Field("1h,5m", max_length=40, description="slo_burn: windows among 5m, 30m, 1h, 6h")
    schedule: str = Field("", max_length=200, description="schedule: the schedule's name (in queue)")
    grace_s: float | None = Field(None, ge=0, le=86_400, description="schedule: how late a tick may be before it "
                                                                      "fires (default 60 s, or half its period)")
    webhook_url: str = Field("", max_length=500)
    secret: str = Field("", max_length=128, description="The webhook's HMAC key (16 to 128 characters); "
                                                        "generated when left out, and answered once")
    emails: list[str] = Field(default_factory=list, max_length=20)


class DeliveryOut(Schema):
    firing: int
    event: str
    channel: str
    status: str
    attempts: int
    last_error: str
    delivered_at: datetime | None
    next_attempt_at: datetime


class RuleOut(Schema):
    id: int
    name: str
    kind: str
    queue: str
    view: int | None
    parameters: dict[str, Any]
    webhook_url: str
    emails: list[str]
    enabled: bool
    firing: bool
    firings: int = Field(description="How many times it fired (the number of the current or last firing)")
    firing_since: datetime | None
    evaluated_at: datetime | None
    observed: str = Field(description="What the last evaluation saw, in words")
    error: str = Field(description="Why the last evaluation could not decide (empty when it could)")
    silenced_until: datetime | None
    deliveries: list[DeliveryOut] = Field(description="The latest deliveries, newest first (at most 10)")


class MadeRuleOut(RuleOut):
    secret: str = Field(description="The webhook's HMAC-SHA256 key: shown in this answer only")
    audit_id: int


class RuleListOut(Schema):
    rules: list[RuleOut]


class SilenceIn(Schema):
    rule: str = Field("", max_length=NAME_LIMIT, description="The rule's id or name; empty: every rule")
    duration: str = Field("", max_length=16, description="How long: 30m, 2h, 1d (or give until)")
    until: str = Field("", max_length=40, description="Until when, ISO 8601 (UTC unless it says)")
    reason: str = Field("", max_length=500)


class SilenceOut(Schema):
    id: int
    rule: int | None
    rule_name: str | None
    ends_at: datetime
    reason: str
    created_by: str
    created_at: datetime


class SilenceListOut(Schema):
    silences: list[SilenceOut]


class DeletedOut(Schema):
    deleted: int
    audit_id: int


def _reader(request: HttpRequest) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    if not can_view(user):
        raise PermissionDenied(f"{user} may not view the console (needs {VIEW_PERMISSION})")
    return user


def _writer(request: HttpRequest) -> Any:
    user = _reader(request)
    if getattr(request, "emq_token_scope", ApiToken.Scope.ACT) != ApiToken.Scope.ACT:
        raise PermissionDenied(READ_ONLY)
    return user


def rule_out(rule: AlertRule) -> dict[str, Any]:
    silence = next(iter(s for s in silences_active() if s.rule_id in (None, rule.pk)), None)
    deliveries: list[AlertDelivery] = list(rule.deliveries.order_by("-id")[:10])
    return {"id": rule.pk, "name": rule.name, "kind": rule.kind, "queue": rule.queue, "view": rule.view_id,
            "parameters": rule.parameters, "webhook_url": rule.webhook_url, "emails": list(rule.emails),
            "enabled": rule.enabled, "firing": rule.firing, "firings": rule.firings, "firing_since": rule.firing_since,
            "evaluated_at": rule.evaluated_at, "observed": rule.observed, "error": rule.error,
            "silenced_until": silence.ends_at if silence else None,
            "deliveries": [{"firing": d.firing, "event": d.event, "channel": d.channel, "status": d.status,
                            "attempts": d.attempts, "last_error": d.last_error, "delivered_at": d.delivered_at,
                            "next_attempt_at": d.next_attempt_at} for d in deliveries]}


def silence_out(silence: AlertSilence) -> dict[str, Any]:
    return {"id": silence.pk, "rule": silence.rule_id, "rule_name": silence.rule.name if silence.rule else None,
            "ends_at": silence.ends_at, "reason": silence.reason, "created_by": silence.created_by,
            "created_at": silence.created_at}


def _rule(name_or_id: str) -> AlertRule:
    try:
        return rule_find(name_or_id)
    except LookupError as missing:
        raise Http404(str(missing)) from None


@rules_router.get("", response={200: RuleListOut, **ERRORS}, summary="Every alert rule, its state and latest deliveries")
def alerts_list(request: HttpRequest) -> Any:
    _reader(request)
    return {"rules": [rule_out(rule) for rule in AlertRule.objects.order_by("name")[:200]]}


@performs("alert_add")
@rules_router.post("", response={201: MadeRuleOut, **ERRORS},
                   summary="Make an alert rule (operators, within their grants; audited); its secret is answered once")
def alerts_add(request: HttpRequest, body: RuleIn) -> Any:
    user = _writer(request)
    try:
        made = rule_create(user=user, name=body.name, kind=body.kind, queue=body.queue, view_id=body.view,
                           parameters={"codes": body.codes, "group": body.group, "at_least": body.at_least,
                                       "threshold": body.threshold, "windows": body.windows,
                                       "schedule": body.schedule, "grace_s": body.grace_s},
                           webhook_url=body.webhook_url, secret=body.secret, emails=body.emails)
    except AlertRefused as refused:
        raise PermissionDenied(str(refused)) from None
    return Status(201, {**rule_out(made.rule), "secret": made.secret, "audit_id": made.audit_id})


@rules_router.get("/{rule}", response={200: RuleOut, **ERRORS}, summary="One alert rule (by id or name)")
def alerts_detail(request: HttpRequest, rule: str = Path(..., min_length=1, max_length=NAME_LIMIT)) -> Any:
    _reader(request)
    return rule_out(_rule(rule))


@performs("alert_delete")
@rules_router.delete("/{rule}", response={200: DeletedOut, **ERRORS}, summary="Delete an alert rule (operators; audited)")
def alerts_delete(request: HttpRequest, rule: str = Path(..., min_length=1, max_length=NAME_LIMIT)) -> Any:
    user = _writer(request)
    found = _rule(rule)
    rule_id = found.pk
    try:
        audit_id = rule_delete(user=user, rule=found)
    except AlertRefused as refused:
        raise PermissionDenied(str(refused)) from None
    return {"deleted": rule_id, "audit_id": audit_id}


@silences_router.get("", response={200: SilenceListOut, **ERRORS}, summary="The silences in force")
def silences_list(request: HttpRequest) -> Any:
    _reader(request)
    return {"silences": [silence_out(s) for s in silences_active()]}


@performs("alert_silence")
@silences_router.post("", response={201: SilenceOut, **ERRORS},
                      summary="Silence one rule (or every rule) until a time: its firings are recorded, not delivered")
def silences_add(request: HttpRequest, body: SilenceIn) -> Any:
    user = _writer(request)
    rule = _rule(body.rule) if body.rule else None
    ends_at = parse_silence_end(until=body.until, duration=body.duration)
    try:
        silence = silence_create(user=user, rule=rule, ends_at=ends_at, reason=body.reason)
    except AlertRefused as refused:
        raise PermissionDenied(str(refused)) from None
    return Status(201, silence_out(silence))


@performs("alert_unsilence")
@silences_router.delete("/{silence_id}", response={200: SilenceOut, **ERRORS},
                        summary="End a silence now (operators; audited)")
def silences_end(request: HttpRequest, silence_id: int = Path(..., ge=1, le=MAX_ID)) -> Any:
    user = _writer(request)
    silence = AlertSilence.objects.select_related("rule").filter(pk=silence_id).first()
    if silence is None:
        raise Http404(f"there is no silence {silence_id}")
    try:
        return silence_out(silence_end(user=user, silence=silence))
    except AlertRefused as refused:
        raise PermissionDenied(str(refused)) from None
