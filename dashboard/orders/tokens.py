"""API tokens: created once and shown once; a request presents one as ``Authorization: Bearer <token>``."""

from __future__ import annotations

import hashlib
import secrets
from typing import Final

from django.contrib.auth.models import User

from .models import ApiToken

PREFIX: Final = "emq_"
PLACE_PERMISSION: Final = "orders.place_orders"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def api_token_create(*, user: User, name: str) -> str:
    """Returns the secret; it cannot be read back later."""
    secret = PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name, digest=_digest(secret))
    return secret


def api_token_find(secret: str) -> ApiToken | None:
    """The token a secret names, when its user is active; None for an unknown token."""
    if not secret.startswith(PREFIX) or len(secret) > 200:
        return None
    token = ApiToken.objects.select_related("user").filter(digest=_digest(secret)).first()
    if token is None or not token.user.is_active:
        return None
    return token


def api_token_user(secret: str) -> User | None:
    """The active user a token belongs to, or None for an unknown token."""
    token = api_token_find(secret)
    return token.user if token is not None else None
