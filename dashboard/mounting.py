"""What the console's views need from a request, given by the console itself: mounted in a host project it cannot
count on the host's middleware (README, "Mounting in your project")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import URLPattern, URLResolver
from django.utils.cache import patch_cache_control
from django_htmx.middleware import HtmxDetails

from .deployments import (
    HEADER,
    QUERY,
    SESSION_KEY,
    UnknownDeployment,
    chosen_name,
    deployment_named,
    first_visible,
    use,
)

View = Callable[..., Any]


def deployment_chosen(request: HttpRequest) -> HttpResponse | None:
    """Makes the deployment the request names the current one (``dashboard.deployments``); a 400 when it names
    none the console has. A page opened with ``?d=`` also makes it the one the session shows next."""
    session = getattr(request, "session", None)
    header, query = request.headers.get(HEADER, ""), request.GET.get(QUERY, "")
    name = chosen_name(header=header, query=query, session=session)
    if not name:
        use(first_visible(getattr(request, "user", None)))
        return None
    try:
        deployment = deployment_named(name)
    except UnknownDeployment as error:
        if session is not None and not header and not query:
            session.pop(SESSION_KEY, None)
            use(first_visible(getattr(request, "user", None)))
            return None
        if "/api/" in request.path:
            return JsonResponse({"error": str(error)}, status=400)
        return render(request, "dashboard/bad_input.html", {"message": str(error), "now_ms": 0}, status=400)
    use(deployment)
    if query and not header and session is not None and session.get(SESSION_KEY) != deployment.name:
        session[SESSION_KEY] = deployment.name
    return None


def console_request(view: View) -> View:
    """``request.htmx`` whether or not django-htmx's middleware ran, the deployment it names made the current
    one, and ``Cache-Control: no-store`` on the answer (a page shows what a login may see)."""
    if getattr(view, "console_request", False):
        return view

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not hasattr(request, "htmx"):
            request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
        refused = deployment_chosen(request)
        response: HttpResponse = refused if refused is not None else view(request, *args, **kwargs)
        patch_cache_control(response, no_store=True, private=True)
        return response

    wrapper.console_request = True  # type: ignore[attr-defined]
    return wrapper


def console_requests(patterns: Sequence[URLPattern | URLResolver]) -> None:
    """Every view under ``patterns`` (included URL modules too) wrapped by ``console_request``, in place."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            console_requests(pattern.url_patterns)
        else:
            pattern.callback = console_request(pattern.callback)
