"""``/alerts/``: the rules with their state and deliveries, the silences, and the forms that change them.

Everyone who may view the console sees the rules (never a secret);
operators make, delete and silence them within their queue grants. A new
rule's page shows its webhook secret once; no page shows it again.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from dashboard.permissions import performs
from dashboard.saved_views.services import views_visible
from dashboard.viewing import viewers_only
from queues import InvalidInput

from .conditions import BURN_WINDOWS, NOT_DRAINING_CODES
from .models import AlertRule, AlertSilence
from .services import AlertRefused, parse_silence_end, rule_create, rule_delete, silence_create, silence_end, silences_active

FORM_FIELDS = ("name", "kind", "q", "view", "codes", "group", "at_least", "threshold", "windows", "schedule",
               "grace_s", "webhook_url", "secret", "emails")


def _page(request: HttpRequest, *, message: str = "", status: int = 200) -> HttpResponse:
    rules = list(AlertRule.objects.select_related("view").order_by("name")[:200])
    silences = silences_active()
    silenced = {s.rule_id: s for s in reversed(silences)}
    rows = [{"rule": rule, "silence": silenced.get(rule.pk) or silenced.get(None),
             "latest": rule.deliveries.order_by("-id").first()} for rule in rules]
    return render(request, "dashboard/alerts/page.html", {"rows": rows, "silences": silences, "message": message,
                                                           "now_ms": 0}, status=status)


@require_GET
@viewers_only
def alerts_page(request: HttpRequest) -> HttpResponse:
    return _page(request)


def _form(request: HttpRequest, values: dict[str, str], *, message: str = "", status: int = 200) -> HttpResponse:
    return render(request, "dashboard/alerts/new.html", {
        "form": values, "kinds": AlertRule.Kind.choices, "codes": NOT_DRAINING_CODES, "windows": BURN_WINDOWS,
        "views": views_visible(request.user), "message": message, "now_ms": 0}, status=status)


@performs("alert_add")
@require_http_methods(["GET", "HEAD", "POST"])
@viewers_only
def alert_new(request: HttpRequest) -> HttpResponse:
    """GET: the form, filled from the link that led here (a queue's why, a failure group, a saved view).
    POST: makes the rule and shows its secret, once."""
    source = request.POST if request.method == "POST" else request.GET
    values = {name: source.get(name, "") for name in FORM_FIELDS}
    if request.method != "POST":
        values["secret"] = ""
        return _form(request, values)
    view_text = values["view"]
    try:
        made = rule_create(
            user=request.user, name=values["name"], kind=values["kind"], queue=values["q"],
            view_id=int(view_text) if view_text.isascii() and view_text.isdigit() and len(view_text) < 19 else None,
            parameters={k: values[k] for k in ("codes", "group", "at_least", "threshold", "windows", "schedule",
                                               "grace_s")},
            webhook_url=values["webhook_url"], secret=values["secret"], emails=values["emails"])
    except AlertRefused as refused:
        return _form(request, {**values, "secret": ""}, message=f"not made: {refused}", status=403)
    except InvalidInput as error:
        return _form(request, {**values, "secret": ""}, message=f"not made: {error}", status=400)
    return render(request, "dashboard/alerts/made.html", {"rule": made.rule, "secret": made.secret, "now_ms": 0},
                  status=201)


@performs("alert_delete")
@require_POST
@viewers_only
def alert_delete(request: HttpRequest, pk: int) -> HttpResponse:
    rule = AlertRule.objects.filter(pk=pk).first()
    if rule is None:
        return _page(request, message=f"not deleted: there is no alert rule {pk}", status=404)
    try:
        rule_delete(user=request.user, rule=rule)
    except AlertRefused as refused:
        return _page(request, message=f"not deleted: {refused}", status=403)
    return HttpResponseRedirect(reverse("alerts"))


@performs("alert_silence")
@require_POST
@viewers_only
def alert_silence(request: HttpRequest) -> HttpResponse:
    text = request.POST.get("rule", "")
    rule: Any = None
    if text:
        rule = AlertRule.objects.filter(pk=int(text)).first() if text.isascii() and text.isdigit() and len(text) < 19 \
            else None
        if rule is None:
            return _page(request, message=f"not silenced: there is no alert rule {text[:40]!r}", status=404)
    try:
        ends_at = parse_silence_end(duration=request.POST.get("duration", ""), until=request.POST.get("until", ""))
        silence_create(user=request.user, rule=rule, ends_at=ends_at, reason=request.POST.get("reason", ""))
    except AlertRefused as refused:
        return _page(request, message=f"not silenced: {refused}", status=403)
    except InvalidInput as error:
        return _page(request, message=f"not silenced: {error}", status=400)
    return HttpResponseRedirect(reverse("alerts"))


@performs("alert_unsilence")
@require_POST
@viewers_only
def alert_unsilence(request: HttpRequest, pk: int) -> HttpResponse:
    silence = AlertSilence.objects.select_related("rule").filter(pk=pk).first()
    if silence is None:
        return _page(request, message=f"there is no silence {pk}", status=404)
    try:
        silence_end(user=request.user, silence=silence)
    except AlertRefused as refused:
        return _page(request, message=f"not ended: {refused}", status=403)
    return HttpResponseRedirect(reverse("alerts"))
