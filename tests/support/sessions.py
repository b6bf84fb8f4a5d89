"""A logged-in session as a WebSocket handshake carries it."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client


def session_cookie(user: User) -> bytes:
    """The Cookie header of a logged-in session of ``user``, as a socket's handshake carries it."""
    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}".encode()
