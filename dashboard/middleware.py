"""The console's own Django middleware (``MIDDLEWARE``): no-store on every page, HEAD answered wherever GET is."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_cache_control


class NoStoreMiddleware:
    """``Cache-Control: no-store`` on every response that passes here: pages show what a login may see.

    Static files never get here (whitenoise answers them above) and keep their caching.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        patch_cache_control(response, no_store=True, private=True)
        return response


class HeadAsGetMiddleware:
    """HEAD runs the GET view (the server sends no body for HEAD): every page that answers GET answers HEAD."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "HEAD":
            request.method = "GET"
            response = self.get_response(request)
            request.method = "HEAD"
            return response
        return self.get_response(request)


class MethodNotAllowedPageMiddleware:
    """A 405 with no body (Django's ``require_POST``, ``require_GET``) becomes a page a person can read.

    ``GET /actions/job/`` is what a bookmark, a pasted link or a reload after a
    plain form post sends; it is told what the URL is for. The API answers its own JSON.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.status_code != 405 or response.content or request.path.startswith("/api/"):
            return response
        allowed = response.get("Allow", "")
        page = render(request, "dashboard/not_allowed.html", {"method": request.method, "allowed": allowed,
                                                             "now_ms": 0}, status=405)
        page["Allow"] = allowed
        return page
