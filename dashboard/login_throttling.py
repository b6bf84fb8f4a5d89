"""What django-axes needs from the console to throttle logins (``AXES_USERNAME_CALLABLE``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def login_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The user name a login attempt named, as django-axes records it: at most 150 characters."""
    name = (credentials or {}).get("username")
    if not name and request is not None:
        name = request.POST.get("username")
    return str(name)[:150] if name else None
