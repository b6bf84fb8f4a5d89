"""Who may read the console: an account holding the view permission (viewers and operators).

Every page, fragment and download asks here, as the API and ``/metrics`` do;
an account made by the admin's "Add user", or one whose role was taken away,
is signed in but sees nothing: it gets a page that says why, never a queue.
The sockets ask the same question at connect and each time they re-read
their user (``dashboard.consumers``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, Final

from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponse
from django.shortcuts import render

from .deployments import current, deployment_refusal
from .http import HtmxHttpRequest
from .roles import can_view

View = Callable[..., HttpResponse]

NO_ROLE_REFUSAL: Final = ("Your account has no console role: it may see no queue, job or payload. "
                          "Ask an admin for the viewers or the operators role.")


def no_role_answer(request: HtmxHttpRequest, reason: str = NO_ROLE_REFUSAL) -> HttpResponse:
    """The 403 a signed-in account without the view permission (or without a grant on the deployment) gets,
    as a page or as the fragment htmx swaps in."""
    template = "dashboard/_no_role.html" if request.htmx else "dashboard/no_role.html"
    return render(request, template, {"reason": reason, "now_ms": 0}, status=403)


def viewers_only(view: View) -> View:
    """Anonymous: to the login page (as ``login_required``). Signed in without the view permission, or without a
    grant on the current deployment: a 403."""

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not can_view(request.user):
            return no_role_answer(request)
        refused = deployment_refusal(request.user, current(), acting=False)
        if refused is not None:
            return no_role_answer(request, refused)
        return view(request, *args, **kwargs)

    return wrapper
