"""The ASGI guards wrapped around the whole application in ``dashboard.asgi``.

- ``BodyLimit``: a body over its limit is answered 413 before it is read (by
  its Content-Length, or by counting the bytes as they arrive); a body that
  pauses longer than ``EMQ_BODY_TIMEOUT_S`` is answered 408. Under daphne the
  same limits are applied earlier still, as the bytes come off the socket
  (``dashboard.daphne_requests``); the refusals both send are spelled here.
- ``LoopbackOnlyWhileDebug``: with DEBUG on, only connections made to a
  loopback address are answered, wherever the server is bound.
- ``websocket_origin_trusted``: a WebSocket is accepted from exactly the
  origins Django's CSRF check trusts for a POST (its own scheme, host and
  port, or ``CSRF_TRUSTED_ORIGINS``), by running that very check.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from io import BytesIO
from typing import Any, Final

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware

from exchange.gateway import MAX_BODY_BYTES as ORDER_BODY_BYTES

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Loose on purpose: Django's and Channels' applications each type scope and messages their own way.
ASGIApp = Callable[..., Awaitable[None]]

# A login form is a few hundred bytes; a small limit there also bounds what
# django-axes copies of a failed attempt's form into its table.
LOGIN_BODY_BYTES: Final = 8 * 1024
# Paths with a limit of their own (below the general one); the rest get EMQ_MAX_BODY_BYTES.
PATH_BODY_BYTES: Final[dict[str, int]] = {
    "/api/orders": ORDER_BODY_BYTES,
    "/login/": LOGIN_BODY_BYTES,
    "/admin/login/": LOGIN_BODY_BYTES,
}

def body_limit(path: str) -> int:
    """The most bytes a request body to ``path`` may have."""
    general = int(settings.EMQ_MAX_BODY_BYTES)
    return min(PATH_BODY_BYTES.get(path, general), general)


def too_large_answer(limit: int) -> tuple[int, str]:
    return 413, f"The request body is larger than {limit} bytes, the most this page takes.\n"


def stalled_answer() -> tuple[int, str]:
    return 408, f"The request body stalled for more than {settings.EMQ_BODY_TIMEOUT_S:g} s and was cut off.\n"


def overdue_answer() -> tuple[int, str]:
    return 408, f"The request did not arrive whole within {settings.EMQ_REQUEST_DEADLINE_S:g} s and was cut off.\n"


async def _answer(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close"), (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"content-length":
            return int(value) if value.strip().isdigit() else -1
    return None


class BodyLimit:
    """Answers 413 to a body over its path's limit and 408 to one that stalls, before the app reads it.

    The body (at most the limit) is collected here and handed on whole:
    Django reads all of it before a view runs anyway.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = body_limit(scope.get("path", ""))
        declared = _declared_length(scope)
        if declared == -1:
            await _answer(send, 400, "The Content-Length header is not a number.\n")
            return
        if declared is not None and declared > limit:
            await _answer(send, *too_large_answer(limit))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=float(settings.EMQ_BODY_TIMEOUT_S))
            except TimeoutError:
                await _answer(send, *stalled_answer())
                return
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _answer(send, *too_large_answer(limit))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> Message:
            # The body once, then whatever the server says next (a disconnect).
            return pending.pop() if pending else await receive()

        await self.app(scope, replay, send)


def is_loopback(address: object) -> bool:
    if not isinstance(address, (list, tuple)) or not address:
        return address is None  # a Unix socket: only this machine can connect
    host = str(address[0]).strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class LoopbackOnlyWhileDebug:
    """While DEBUG is on, refuses every connection that did not come in on a loopback address.

    DEBUG's error pages show settings and tracebacks; a server bound to
    0.0.0.0 with DEBUG on would show them to anyone who can reach it, whatever
    ALLOWED_HOSTS says. The address a connection was made to (the ASGI
    ``server``) is the fact that decides, checked on every connection.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.warned = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not settings.DEBUG or scope["type"] not in {"http", "websocket"} or is_loopback(scope.get("server")):
            await self.app(scope, receive, send)
            return
        if not self.warned:
            self.warned = True
            log.error("DEBUG is on: refusing connections to %s, which is not a loopback address", scope.get("server"))
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await _answer(send, 403, "This console runs with DEBUG on, so it answers only on a loopback address.\n")


def _no_view(request: HttpRequest) -> HttpResponse:
    raise AssertionError("the origin check never calls a view")


def websocket_origin_trusted(scope: Scope) -> bool:
    """True when the socket's Host is allowed and its Origin is one a CSRF-checked POST could come from."""
    headers = {name.lower(): value for name, value in scope.get("headers", ())}
    if b"origin" not in headers:
        return False
    http_scope = {**scope, "type": "http", "method": "GET",
                  "scheme": {"ws": "http", "wss": "https"}.get(scope.get("scheme", "ws"), "http")}
    request = ASGIRequest(http_scope, BytesIO())
    try:
        request.get_host()
    except DisallowedHost:
        return False
    # Django's own origin check, unchanged: the page's scheme://host:port, or a trusted origin.
    return bool(CsrfViewMiddleware(_no_view)._origin_verified(request))  # type: ignore[attr-defined]


class WebsocketOriginValidator:
    """Closes the handshake (403) of a WebSocket whose Origin CSRF would not trust."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket" and not websocket_origin_trusted(scope):
            await receive()  # the websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)
