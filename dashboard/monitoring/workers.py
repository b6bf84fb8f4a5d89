"""The Workers page (its data read by :mod:`dashboard.pages.workers`, bounded)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.pages.workers import read_workers_page
from dashboard.services import read
from dashboard.viewing import viewers_only
from queues import Unavailable


@require_GET
@viewers_only
def workers_page(request: HttpRequest) -> HttpResponse:
    """Every live worker of the registered queues, ``QUEUES_PER_PAGE`` queues at a time (``after``: a name), in
    one table; ``q`` filters by the queue's name, or the worker's id or host."""
    after, text = request.GET.get("after", ""), request.GET.get("q", "")
    try:
        data = read(lambda mq: read_workers_page(mq, after=after, text=text))
    except Unavailable as error:
        return render(request, "dashboard/workers.html", {"groups": [], "now_ms": 0, "redis_down": True,
                                                          "redis_error": str(error), "text": text}, status=503)
    return render(request, "dashboard/workers.html", {"groups": data.groups, "now_ms": data.now_ms,
                                                      "total": data.total, "after": data.after,
                                                      "next_after": data.next_after, "text": data.text})
