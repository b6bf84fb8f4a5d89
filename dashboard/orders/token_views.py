"""``/tokens/``: a signed-in user's own API tokens (name, scope, created, expiry; never the secret), each revocable;
with ``manage_tokens``, every user's too."""

from __future__ import annotations

from typing import Any, Final

from django.http import HttpRequest, HttpResponse, HttpResponseForbidden, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from dashboard.actions import access
from dashboard.actions.models import AuditEntry
from dashboard.permissions import performs
from dashboard.viewing import viewers_only

from .models import ApiToken

# The most of other users' tokens the page lists (``manage.py api_token --list`` lists every one).
OTHERS_SHOWN: Final = 500


def _own(request: HttpRequest) -> int:
    """The signed-in user's id (viewers_only let only a signed-in user through)."""
    assert request.user.pk is not None
    return int(request.user.pk)


@require_GET
@viewers_only
def tokens_page(request: HttpRequest) -> HttpResponse:
    tokens = ApiToken.objects.filter(user_id=_own(request)).order_by("name", "created_at")
    others = None
    if access.may(request.user, "manage_tokens"):
        others = list(ApiToken.objects.exclude(user_id=_own(request)).select_related("user")
                      .order_by("user__username", "name", "created_at")[:OTHERS_SHOWN + 1])
    return render(request, "dashboard/tokens.html", {
        "tokens": tokens, "others": others[:OTHERS_SHOWN] if others is not None else None,
        "others_cut": others is not None and len(others) > OTHERS_SHOWN, "others_shown": OTHERS_SHOWN, "now_ms": 0})


@performs("token_revoke", on_queue=False)
@require_POST
@viewers_only
def token_revoke(request: HttpRequest) -> HttpResponse:
    """Deletes one of the caller's own tokens, or with ``manage_tokens`` anyone's (audited); another user's
    without it is refused (403), an id of no token deletes nothing."""
    text = request.POST.get("id", "")
    user: Any = request.user  # signed in: viewers_only let no one else through
    if text.isascii() and text.isdigit() and len(text) < 19:
        token = ApiToken.objects.filter(pk=int(text)).select_related("user").first()
        if token is not None and token.user_id == _own(request):
            token.delete()
        elif token is not None:
            reason = access.refusal(user, "token_revoke")
            if reason is not None:
                return HttpResponseForbidden(reason)
            owner = token.user.get_username()
            token.delete()
            now = timezone.now()
            AuditEntry.objects.create(
                user=user, username=user.get_username(), queue="",
                action=AuditEntry.Action.TOKEN_REVOKE, scope=AuditEntry.Scope.ACCOUNT, jobs=[],
                parameters={"owner": owner, "name": token.name}, outcome=AuditEntry.Outcome.MOVED,
                result=f"revoked {owner}'s API token {token.name}", finished_at=now, updated_at=now)
    return HttpResponseRedirect(reverse("tokens"))
