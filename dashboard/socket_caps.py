"""How many WebSockets a console process keeps open: per session, per user and in all.

Every open socket costs the process a task, a share of its follower and its
renders; without a cap one viewer's script could open hundreds and leave
another user's page waiting. ``SocketCaps`` counts per session cookie (no
database read: the handshakes past the cap cost next to nothing) and in all,
``UserSocketCaps`` per signed-in user (after the session is read, so one
person's many sessions are held too). A socket past a cap is accepted and at
once closed with ``TOO_MANY_SOCKETS``, which the page explains (a refused
handshake reaches the browser as 1006, which its socket would retry for ever).
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Final

from django.conf import settings
from django.http.cookie import parse_cookie

from .asgi_limits import ASGIApp, Receive, Scope, Send

TOO_MANY_SOCKETS: Final = 4429


class _Counts:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: Counter[object] = Counter()

    def take(self, key: object, cap: int, *, total_key: object = None, total_cap: int | None = None) -> bool:
        with self._lock:
            if self._open[key] >= cap or (total_cap is not None and self._open[total_key] >= total_cap):
                return False
            self._open[key] += 1
            if total_cap is not None:
                self._open[total_key] += 1
            return True

    def give(self, key: object, *, total_key: object = None, counted_total: bool = False) -> None:
        with self._lock:
            for name in (key, total_key) if counted_total else (key,):
                self._open[name] -= 1
                if self._open[name] <= 0:
                    del self._open[name]

    def open(self, key: object) -> int:
        with self._lock:
            return self._open[key]


_TOTAL: Final = ("every socket",)
_by_session = _Counts()
_by_user = _Counts()


def open_sockets() -> int:
    """How many sockets this process holds open now."""
    return _by_session.open(_TOTAL)


async def refuse(receive: Receive, send: Send, code: int) -> None:
    await receive()  # the websocket.connect
    await send({"type": "websocket.accept"})
    await send({"type": "websocket.close", "code": code})


def _session_key(scope: Scope) -> str:
    for name, value in scope.get("headers", ()):
        if name == b"cookie":
            return parse_cookie(value.decode("latin-1")).get(settings.SESSION_COOKIE_NAME, "")
    return ""


class SocketCaps:
    """At most ``EMQ_SOCKETS_PER_USER`` sockets per session cookie and ``EMQ_SOCKETS_PER_PROCESS`` in all."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        key = ("session", _session_key(scope))
        if not _by_session.take(key, int(settings.EMQ_SOCKETS_PER_USER), total_key=_TOTAL,
                                total_cap=int(settings.EMQ_SOCKETS_PER_PROCESS)):
            await refuse(receive, send, TOO_MANY_SOCKETS)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            _by_session.give(key, total_key=_TOTAL, counted_total=True)


class UserSocketCaps:
    """At most ``EMQ_SOCKETS_PER_USER`` sockets per signed-in user, whatever their sessions (inside the auth
    middleware, which has read the user)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if scope["type"] != "websocket" or user is None or not user.is_authenticated:
            await self.app(scope, receive, send)
            return
        key = ("user", user.pk)
        if not _by_user.take(key, int(settings.EMQ_SOCKETS_PER_USER)):
            await refuse(receive, send, TOO_MANY_SOCKETS)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            _by_user.give(key)
