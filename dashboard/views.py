"""The console's pages. Each view parses the request, reads through ``queues``, renders.

A page that cannot reach Redis answers 503 with a banner (never a 500); a bad
queue name, id or cursor answers 400 with what was wrong, in words.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from queues import InvalidInput, Refused, Unavailable, validate_job_id, validate_queue_name
from queues.keys import parse_job_id_token
from queues.moves import removable_key
from queues.reads import QueueStats

from . import presenters, rows as row_html
from .census import census_pass
from .http import HtmxHttpRequest
from .monitoring.charts import live_window_marks, queue_history_context
from .monitoring.latency_chart import queue_latency_context
from .monitoring.overview_latency import overview_latency_context
from .pages.job import read_job_page
from .pages.overview import overview_page_data, overview_window
from .pages.queue import read_queue_page
from .payload_edits import clone_panel, edit_done, edit_panel
from .queue_names import queue_missing
from .redaction import read_masker, reader_for
from .saved_views.services import pinned_views
from .services import emq, live_follower, read
from .sweeper import sweeper_status
from .viewing import viewers_only
from .why_line import overview_reasons, why_context


def _unavailable(request: HttpRequest, template: str, error: Unavailable, context: dict[str, Any]) -> HttpResponse:
    return render(request, template, {**context, "redis_down": True, "redis_error": str(error)}, status=503)


def _bad_input(request: HttpRequest, error: InvalidInput | Refused, context: dict[str, Any]) -> HttpResponse:
    return render(request, "dashboard/bad_input.html", {**context, "message": str(error)}, status=400)


def _wants_fragment(request: HtmxHttpRequest, target: str) -> bool:
    return bool(request.htmx) and not request.htmx.boosted and request.htmx.target == target


@require_GET
@viewers_only
def overview(request: HtmxHttpRequest) -> HttpResponse:
    try:
        query = presenters.OverviewQuery.from_query(request.GET)
    except InvalidInput as error:
        return _bad_input(request, error, {"now_ms": 0})
    background = census_pass()
    background.wanted()
    census = background.census
    context: dict[str, Any] = {"filter": query.filter, "query": query, "rows": [], "now_ms": 0,
                               "sweeper": sweeper_status(), "live_query": query.query()}
    try:
        # The registry's size (SCARD, O(1)) says whether its names must be read again: a queue made a
        # moment ago is on the page the operator opens now.
        read(lambda mq: census.refresh_names(mq, force=False))
        names, total = overview_window(census, query)
        results = read(lambda mq: mq.stats_many(names)) if names else []
        mq = emq()
    except Unavailable as error:
        return _unavailable(request, "dashboard/overview.html", error, context)
    census.absorb_many(names, results)
    follower = live_follower()
    cluster = mq.is_cluster
    now_ms = max((r.now_ms for r in results if isinstance(r, QueueStats)), default=0)
    data = overview_page_data(
        census, query, names, total, results, now_ms=now_ms,
        throughput=follower.throughput if follower else None, reasons=read(lambda mq: overview_reasons(mq, names)),
        cluster=cluster, locations={n: mq.location(n) for n in names} if cluster else {},
        marks=live_window_marks(follower.throughput, now_ms) if follower else [])
    context.update(row_html.overview_table_context(query, data.total, data.rows, cluster=data.cluster))
    if not request.htmx:
        context["pinned"] = pinned_views(request.user)
        shown = context.get("rows") or []
        context.update(overview_latency_context(
            {row.name: row.stats.due for row in shown if row.stats is not None},
            request.GET.get("lsort", "")))
    context.update(queues_stale=data.names_error, odd_registry=data.odd_registry, totals=data.totals,
                   now_ms=data.now_ms)
    if _wants_fragment(request, "overview-rows"):
        return render(request, "dashboard/_overview_rows.html", context)
    if _wants_fragment(request, "overview-table"):
        return render(request, "dashboard/_overview_table.html", context)
    return render(request, "dashboard/overview.html", context)


@require_GET
@viewers_only
def queue_detail(request: HtmxHttpRequest) -> HttpResponse:
    name = request.GET.get("q", "")
    context: dict[str, Any] = {"queue": name, "now_ms": 0}
    try:
        validate_queue_name(name)
        window = presenters.Window.from_query(name, request.GET)
        context["window"] = window
        data = read(lambda mq: read_queue_page(mq, window, reader=reader_for(request.user)))
    except InvalidInput as error:
        return _bad_input(request, error, context)
    except Refused as refused:
        # A key of another type in the queue's slot: the page says which, and offers a state set's repair.
        return render(request, "dashboard/queue.html", {**context, "read_error": str(refused),
                                                        "removable": removable_key(name, refused)})
    except Unavailable as error:
        return _unavailable(request, "dashboard/queue.html", error, context)
    try:
        missing, close = queue_missing(name, data.stats)
    except Unavailable as error:
        return _unavailable(request, "dashboard/queue.html", error, context)
    if missing:
        return render(request, "dashboard/queue.html", {**context, "missing": missing, "close": close}, status=404)
    follower = live_follower()
    context.update(why_context(data.why), queue_workers=data.workers)
    context.update(queue_history_context(name, request.GET.get("range", "1h")))
    context.update(queue_latency_context(name, request.GET.get("range", "1h"), data.stats.due))
    context.update(row_html.queue_page_context(window, data.stats, data.page, follower.throughput if follower else None,
                                               csrf_token=get_token(request), elsewhere=data.elsewhere))
    if _wants_fragment(request, "queue-jobs"):
        return render(request, "dashboard/_queue_jobs.html", context)
    return render(request, "dashboard/queue.html", context)


def _job_params(request: HttpRequest) -> tuple[str, str]:
    """The queue and the job: an id that is not UTF-8 comes as ``{HEX}`` of its bytes (``id_token``)."""
    return validate_queue_name(request.GET.get("q", "")), validate_job_id(parse_job_id_token(request.GET.get("id", "")))


@require_GET
@viewers_only
def job_detail(request: HtmxHttpRequest) -> HttpResponse:
    context: dict[str, Any] = {"queue": request.GET.get("q", ""), "job_id": parse_job_id_token(request.GET.get("id", "")),
                               "now_ms": 0}
    try:
        name, job_id = _job_params(request)
        full = request.GET.get("full") == "1"
        shown = presenters.PAYLOAD_ALL if full else presenters.PAYLOAD_SHOWN
        reader = reader_for(request.user)
        data = read(lambda mq: read_job_page(mq, name, job_id, reader=reader, payload_bytes=shown))
    except InvalidInput as error:
        return _bad_input(request, error, context)
    except Refused as refused:
        return render(request, "dashboard/job.html", {**context, "read_error": str(refused),
                                                      "removable": removable_key(name, refused)})
    except Unavailable as error:
        return _unavailable(request, "dashboard/job.html", error, context)
    context.update(detail=presenters.job_detail(data, full_payload=full), now_ms=data.view.now_ms,
                   **why_context(data.why))
    if data.view.exists:
        context.update(edit=edit_panel(data.view, request.GET.get("v", ""), masker=data.masker),
                       done=edit_done(request.user, name, job_id, request.GET.get("done", "")),
                       clone=clone_panel(data.view, masker=data.masker))
    status = 200 if data.view.exists else 404
    if _wants_fragment(request, "job-core"):
        return render(request, "dashboard/_job_core.html", context, status=status)
    return render(request, "dashboard/job.html", context, status=status)


@require_GET
@viewers_only
def job_payload(request: HttpRequest) -> HttpResponse:
    """The whole payload as a download: never rendered by the browser, whatever it holds."""
    try:
        name, job_id = _job_params(request)
        view = read(lambda mq: mq.job(name, job_id, payload_bytes=0))
        payload = read(lambda mq: mq.payload(name, job_id)) if view.exists else b""
        masker = read_masker(reader_for(request.user), name)
    except (InvalidInput, Refused) as error:
        return _bad_input(request, error, {"now_ms": 0})
    except Unavailable as error:
        return _unavailable(request, "dashboard/bad_input.html", error, {"message": "", "now_ms": 0})
    if not view.exists:
        return render(request, "dashboard/bad_input.html", {"message": f"job {job_id} does not exist in {name}",
                                                            "now_ms": view.now_ms}, status=404)
    response = HttpResponse(payload if masker is None else masker.payload(payload), content_type="application/octet-stream")
    response["Content-Disposition"] = f'attachment; filename="{job_id.encode(errors="surrogateescape").hex()[:64]}.payload"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
@viewers_only
def find(request: HttpRequest) -> HttpResponse:
    token = request.GET.get("id", "").strip()
    job_id = parse_job_id_token(token)
    queue = request.GET.get("q", "").strip()
    context: dict[str, Any] = {"job_id": token, "queue": queue, "found": None, "now_ms": 0}
    if not job_id:
        return render(request, "dashboard/find.html", context)
    try:
        validate_job_id(job_id)
        names = [validate_queue_name(queue)] if queue else read(lambda mq: mq.known_queues().names)
        found = read(lambda mq: mq.find_job(job_id, names))
    except InvalidInput as error:
        return render(request, "dashboard/find.html", {**context, "message": str(error)}, status=400)
    except Unavailable as error:
        return _unavailable(request, "dashboard/find.html", error, context)
    if len(found) == 1:
        return redirect(f"{reverse('job')}?{urlencode({'q': found[0], 'id': token})}")
    context["found"] = found
    return render(request, "dashboard/find.html", context, status=200 if found else 404)
