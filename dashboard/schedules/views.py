"""The schedules page (every schedule, a bounded page at a time) and its presses: pause, resume, run now, edit,
delete; each confirmed by the server and audited, operators only (viewers see no buttons, and get 403)."""

from __future__ import annotations

import time
from typing import Any, Final

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from dashboard.actions import access
from dashboard.actions.views import _confirmed, _page_or_fragment, operators_only
from dashboard.http import HtmxHttpRequest
from dashboard.permissions import performs
from dashboard.services import read
from dashboard.viewing import viewers_only
from queues import InvalidInput, Refused, Unavailable, validate_queue_name
from queues.schedules import Schedule, schedule_statuses

from .services import ACTIONS, SchedulePress, check_access, definition_fields, schedule_act, schedule_for_edit, schedule_preview

PAGE_SIZE: Final = 50
SPARK_WIDTH: Final = 8  # px per recent job


def _after(data: Any) -> tuple[str, int, str] | None:
    queue, score, name = data.get("aq", ""), data.get("as", ""), data.get("an", "")
    if not queue:
        return None
    if not score.lstrip("-").isdigit() or not score.isascii() or len(score) > 15:
        raise InvalidInput(f"the page cursor's score must be a number, not {score!r}")
    return validate_queue_name(queue), int(score), name


def _row(s: Schedule, now_ms: int, may_act: bool) -> dict[str, Any]:
    spark = [{"x": i * SPARK_WIDTH, "outcome": r.outcome, "job": s.job_id(r.suffix)} for i, r in enumerate(s.recent)]
    return {"s": s, "may_act": may_act, "spark": spark, "spark_width": max(1, len(spark)) * SPARK_WIDTH,
            "overdue_ms": s.overdue_ms(now_ms),
            "counts": {k: sum(1 for r in s.recent if r.outcome == k) for k in ("done", "failed", "pending", "active")}}


@require_GET
@viewers_only
def schedules_page(request: HtmxHttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"rows": [], "queue": request.GET.get("q", "").strip(), "now_ms": 0, "next": None}
    try:
        after = _after(request.GET)
        queue = validate_queue_name(context["queue"]) if context["queue"] else None
        found = read(lambda mq: schedule_statuses(mq, queue=queue, limit=PAGE_SIZE, after=after))
    except InvalidInput as error:
        return render(request, "dashboard/bad_input.html", {**context, "message": str(error)}, status=400)
    except Unavailable as error:
        return render(request, "dashboard/schedules/page.html", {**context, "redis_down": True,
                                                                  "redis_error": str(error)}, status=503)
    allowed: dict[str, bool] = {}
    rows = []
    for s in found.schedules:
        if s.queue not in allowed:
            allowed[s.queue] = access.may(request.user, "manage_schedules", s.queue)
        rows.append(_row(s, found.now_ms, allowed[s.queue]))
    context.update(rows=rows, now_ms=found.now_ms, unreadable=found.unreadable,
                   next={"aq": found.after[0], "as": found.after[1], "an": found.after[2]} if found.after else None)
    return render(request, "dashboard/schedules/page.html", context)


@performs(*ACTIONS, field="action")
@require_POST
@operators_only
def schedule_action(request: HtmxHttpRequest) -> HttpResponse:
    """Every press asks first (server-checked, once, by this user), naming the schedule's version as shown."""
    press = SchedulePress.parse(request.POST, stamp_now=int(time.time() * 1000))
    check_access(request.user, press.queue)
    answer = _confirmed(request, lambda: schedule_preview(press), press.proposal, press.hidden(), "#action-results")
    if isinstance(answer, HttpResponse):
        return answer
    entry = schedule_act(user=request.user, press=press)
    return _page_or_fragment(request, "dashboard/actions/result.html",
                             {"kind": entry.outcome, "text": entry.result, "entry": entry})


@performs("schedule_edit")
@require_GET
@operators_only
def schedule_edit(request: HtmxHttpRequest) -> HttpResponse:
    queue, name = request.GET.get("q", ""), request.GET.get("name", "")
    check_access(request.user, queue)
    try:
        found = schedule_for_edit(queue, name)
    except Refused as refusal:
        return render(request, "dashboard/bad_input.html", {"message": str(refusal)}, status=404)
    fields = definition_fields_of(found)
    return render(request, "dashboard/schedules/edit.html", {"s": found, "fields": fields, "now_ms": 0})


def definition_fields_of(found: Schedule) -> dict[str, Any]:
    when = found.when
    return {"cron": when.cron if when else "", "tz": when.tz if when and when.cron else "UTC",
            "every_ms": when.every_ms if when and when.every_ms else "", "max_attempts": found.max_attempts or 3,
            "missed": found.missed or "once", "payload": found.payload_head,
            "payload_whole": found.payload_length <= 256}


__all__ = ["definition_fields", "schedule_action", "schedule_edit", "schedules_page"]
