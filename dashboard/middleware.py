"""The console's own Django middleware (``MIDDLEWARE``): no-store on every page, HEAD answered wherever GET is."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
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
