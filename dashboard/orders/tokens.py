"""API tokens: created once and shown once; a request presents one as ``Authorization: Bearer <token>``."""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime
from typing import Any, Final

from django.contrib.auth.models import User
from django.db.models import Q
from django.utils import timezone

from .models import ApiToken

PREFIX: Final = "emq_"
PLACE_PERMISSION: Final = "orders.place_orders"
READ_ONLY: Final = "this API token may only read (its scope is read): make one with --scope act to act"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(*, user: User, name: str, scope: str = ApiToken.Scope.ACT,
                     expires_at: datetime | None = None) -> str:
    """Returns the secret; it cannot be read back later."""
    secret = PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name, digest=_digest(secret), scope=ApiToken.Scope(scope),
                            expires_at=expires_at)
    return secret


def api_token_find(secret: str) -> ApiToken | None:
    """The token a secret names, when it has not expired and its user is active; None otherwise."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    token = (ApiToken.objects.select_related("user").filter(digest=_digest(secret))
             .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=timezone.now())).first())
    if token is None or not token.user.is_active:
        return None
    return token


def api_token_user(secret: str) -> User | None:
    """The active user a token belongs to, or None for an unknown or expired token."""
    token = api_token_find(secret)
    return token.user if token is not None else None


def api_tokens_revoke(*, name: str, user: User | None = None) -> int:
    """Deletes the tokens of that name (of ``user`` only, when given); how many there were."""
    tokens = ApiToken.objects.filter(name=name)
    if user is not None:
        tokens = tokens.filter(user=user)
    deleted, _ = tokens.delete()
    return deleted


def api_tokens_delete_all(user: Any) -> None:
    """Deletes every token of ``user``: a role lost or an account deactivated ends what its programs may do."""
    ApiToken.objects.filter(user=user).delete()
