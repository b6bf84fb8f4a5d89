"""The Workers page, and who is alive for the queue and job pages (read through ``queues``, bounded)."""

from __future__ import annotations

from typing import Any, Final

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.services import read
from dashboard.viewing import viewers_only
from queues import InvalidInput, Refused, Unavailable, reads, validate_queue_name

QUEUES_PER_PAGE: Final = 200
WORKERS_PER_QUEUE: Final = 100


def live_workers(queue: str) -> reads.Workers | None:
    """The queue's live workers, or None when Redis cannot tell now (or the registry key holds another type)."""
    try:
        return read(lambda mq: mq.run(reads.workers(queue, limit=WORKERS_PER_QUEUE)))
    except (Unavailable, InvalidInput, Refused):
        return None


@require_GET
@viewers_only
def workers_page(request: HttpRequest) -> HttpResponse:
    """Every live worker of the registered queues, ``QUEUES_PER_PAGE`` queues at a time (``after``: a name)."""
    after = request.GET.get("after", "")
    context: dict[str, Any] = {"groups": [], "next_after": None, "now_ms": 0}
    try:
        names = [n for n in read(lambda mq: mq.known_queues()).names if n > after][:QUEUES_PER_PAGE + 1]
        page = names[:QUEUES_PER_PAGE]
        results = read(lambda mq: mq.run_many([reads.workers(q, limit=WORKERS_PER_QUEUE) for q in page]))
    except Unavailable as error:
        return render(request, "dashboard/workers.html", {**context, "redis_down": True, "redis_error": str(error)},
                      status=503)
    groups: list[dict[str, Any]] = [{"queue": name, "found": None if isinstance(result, Exception) else result,
               "error": str(result) if isinstance(result, Exception) else ""}
              for name, result in zip(page, results) if isinstance(result, Exception) or result.live]
    live = [g["found"] for g in groups if g["found"] is not None]
    context.update(groups=groups, now_ms=max((f.now_ms for f in live), default=0), total=sum(f.live for f in live),
                   next_after=page[-1] if len(names) > QUEUES_PER_PAGE else None, after=after)
    return render(request, "dashboard/workers.html", context)


def queue_workers_context(queue: str) -> dict[str, Any]:
    try:
        validate_queue_name(queue)
    except InvalidInput:
        return {}
    return {"queue_workers": live_workers(queue)}
