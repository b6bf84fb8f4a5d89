"""What the console's views need from a request, given by the console itself: mounted in a host project it cannot
count on the host's middleware (README, "Mounting in your project")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import wraps
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, URLResolver
from django.utils.cache import patch_cache_control
from django_htmx.middleware import HtmxDetails

View = Callable[..., Any]


def console_request(view: View) -> View:
    """``request.htmx`` whether or not django-htmx's middleware ran, and ``Cache-Control: no-store`` on the answer
    (a page shows what a login may see)."""
    if getattr(view, "console_request", False):
        return view

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not hasattr(request, "htmx"):
            request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
        response: HttpResponse = view(request, *args, **kwargs)
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
