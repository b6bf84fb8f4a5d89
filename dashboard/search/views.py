"""The search page: a form, and a results region that a WebSocket fills as the search runs.

The view only checks the query (a bad filter answers 400 with the reason)
and resolves ages into server times; the search itself runs behind the
socket, in bounded steps, and stops when the page goes away.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from dashboard.viewing import viewers_only
from queues import STATES, InvalidInput, Unavailable, validate_queue_name
from queues.failure_explain import explain_failures

from ..http import HtmxHttpRequest
from ..pages.failures import read_failures_everywhere
from ..redaction import read_masker, reader_for
from ..services import read
from .requests import FORM_FIELDS, SearchRequest, new_run_token, search_form

RESULTS_TARGET = "search-results"


def _asked(request: HttpRequest) -> bool:
    """A filter typed, or the form sent with none (which the query then refuses in words); a link that only
    names a queue and a state opens the form."""
    return any(name in request.GET for name in FORM_FIELDS if name not in ("state", "order"))


def search_context(request: HttpRequest) -> tuple[dict[str, Any], int]:
    """What the results region shows for this request, and the status to answer with."""
    form = search_form(request.GET)
    context: dict[str, Any] = {"form": form, "states": STATES, "now_ms": 0}
    # A link that names a state (a reload, "more filters", a shared URL) is searched in that state, or refused.
    if form["state"] not in STATES:
        return {**context, "message": f"not searched: unknown state {form['state']!r}: choose {', '.join(STATES)}"}, 400
    if form["order"] not in ("", "asc", "desc"):
        return {**context, "message": f"not searched: unknown order {form['order']!r}: asc or desc"}, 400
    if not _asked(request):
        return context, 200
    try:
        clock_queue = form["q"].strip() or "emq"
        now_ms = read(lambda mq: mq.server_time_ms(clock_queue))
        search = SearchRequest.parse(form, now_ms=now_ms)
    except InvalidInput as error:
        return {**context, "message": f"not searched: {error}"}, 400
    except Unavailable as error:
        return {**context, "message": f"not searched: {error}", "redis_down": True, "redis_error": str(error)}, 503
    token = new_run_token()
    context.update(now_ms=now_ms, run={"token": token, "search": search, "describe": search.query.describe(),
                                       "ws_query": f"{search.urlencoded()}&run={token}"})
    return context, 200


@require_GET
@viewers_only
def search_page(request: HtmxHttpRequest) -> HttpResponse:
    context, status = search_context(request)
    if request.htmx and request.htmx.target == RESULTS_TARGET:
        return render(request, "dashboard/search/_results.html", context, status=status)
    return render(request, "dashboard/search/page.html", context, status=status)


@require_GET
@viewers_only
def failures_page(request: HttpRequest) -> HttpResponse:
    """A queue's failed jobs grouped by cause, with what explains each group (queues.failure_explain): a fixed
    number of bounded reads, whatever the failed count. ``release`` and ``host`` keep the groups that ran there,
    ``sort=new`` puts the groups that began after the newest deploy mark first. Without a queue: the largest
    groups of every queue, a bounded number of queues a page."""
    name = request.GET.get("q", "")
    if "q" not in request.GET:
        return _failures_everywhere(request)
    release, host, sort = (request.GET.get(k, "").strip() for k in ("release", "host", "sort"))
    context: dict[str, Any] = {"queue": name, "now_ms": 0, "release": release, "host": host, "sort": sort or "count"}
    try:
        validate_queue_name(name)
        if sort not in ("", "count", "new"):
            raise InvalidInput(f"sort must be count or new, not {sort!r}")
        masker = read_masker(reader_for(request.user), name)
        explained = read(lambda mq: explain_failures(mq, name, release=release, host=host,
                                                     sort="new" if sort == "new" else "count", masker=masker))
    except InvalidInput as error:
        return render(request, "dashboard/bad_input.html", {**context, "message": str(error)}, status=400)
    except Unavailable as error:
        return render(request, "dashboard/search/failures.html",
                      {**context, "redis_down": True, "redis_error": str(error)}, status=503)
    context.update(read=explained, now_ms=explained.now_ms)
    return render(request, "dashboard/search/failures.html", context)


def _failures_everywhere(request: HttpRequest) -> HttpResponse:
    after = request.GET.get("after", "")
    try:
        data = read(lambda mq: read_failures_everywhere(mq, after=after))
    except Unavailable as error:
        return render(request, "dashboard/search/failures_everywhere.html",
                      {"now_ms": 0, "redis_down": True, "redis_error": str(error)}, status=503)
    return render(request, "dashboard/search/failures_everywhere.html", {"data": data, "now_ms": data.now_ms})
