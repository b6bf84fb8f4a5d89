"""``/tokens/``: a signed-in user's own API tokens (name, scope, created, expiry; never the secret), each revocable."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.viewing import viewers_only

from .models import ApiToken


def _own(request: HttpRequest) -> int:
    """The signed-in user's id (viewers_only let only a signed-in user through)."""
    assert request.user.pk is not None
    return int(request.user.pk)


@require_GET
@viewers_only
def tokens_page(request: HttpRequest) -> HttpResponse:
    tokens = ApiToken.objects.filter(user_id=_own(request)).order_by("name", "created_at")
    return render(request, "dashboard/tokens.html", {"tokens": tokens, "now_ms": 0})


@require_POST
@viewers_only
def token_revoke(request: HttpRequest) -> HttpResponse:
    """Deletes one of the caller's own tokens; another user's id (or none) deletes nothing."""
    text = request.POST.get("id", "")
    if text.isascii() and text.isdigit() and len(text) < 19:
        ApiToken.objects.filter(user_id=_own(request), pk=int(text)).delete()
    return HttpResponseRedirect(reverse("tokens"))
