"""What guards every request before a view sees it: body limits, the debug guard, WebSocket origins, headers.

ASGI layer (wrapped around the whole application in ``dashboard.asgi``):

- ``BodyLimit``: a body over its limit is answered 413 before it is read (by
  its Content-Length, or by counting the bytes as they arrive); a body that
  pauses longer than ``EMQ_BODY_TIMEOUT_S`` is answered 408.
- ``bound_daphne_requests``: daphne reads a whole body into a file before it
  calls the application, and then queues all of it in memory at once, so
  under daphne the same limits are applied while the bytes come off the
  socket; nothing over the limit is ever stored. A request whose headers and
  body have not arrived whole within ``EMQ_REQUEST_DEADLINE_S`` is answered
  408 however steadily it trickles, and a connection idle for
  ``EMQ_IDLE_TIMEOUT_S`` between requests is closed (Twisted's own is 60 s).
- ``LoopbackOnlyWhileDebug``: with DEBUG on, only connections made to a
  loopback address are answered, wherever the server is bound.
- ``websocket_origin_trusted``: a WebSocket is accepted from exactly the
  origins Django's CSRF check trusts for a POST (its own scheme, host and
  port, or ``CSRF_TRUSTED_ORIGINS``), by running that very check.

Django layer (``MIDDLEWARE``): ``Cache-Control: no-store`` on every page and
HEAD answered wherever GET is.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from io import BytesIO
from typing import Any, Final

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils.cache import patch_cache_control

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
# After refusing a body, keep reading (and dropping) what the client still
# sends for this long, so that it reads the answer instead of a reset.
LINGER_S: Final = 2.0


def body_limit(path: str) -> int:
    """The most bytes a request body to ``path`` may have."""
    general = int(settings.EMQ_MAX_BODY_BYTES)
    return min(PATH_BODY_BYTES.get(path, general), general)


def _too_large(limit: int) -> tuple[int, str]:
    return 413, f"The request body is larger than {limit} bytes, the most this page takes.\n"


def _stalled() -> tuple[int, str]:
    return 408, f"The request body stalled for more than {settings.EMQ_BODY_TIMEOUT_S:g} s and was cut off.\n"


def _overdue() -> tuple[int, str]:
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
            await _answer(send, *_too_large(limit))
            return
        chunks: list[bytes] = []
        size = 0
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=float(settings.EMQ_BODY_TIMEOUT_S))
            except TimeoutError:
                await _answer(send, *_stalled())
                return
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _answer(send, *_too_large(limit))
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


def bound_daphne_requests() -> None:
    """Applies the body limit and timeout inside daphne, as the bytes arrive (only when daphne serves)."""
    if "daphne.server" not in sys.modules:
        return  # not under daphne; importing Twisted here would install the wrong reactor
    from daphne import http_protocol

    if getattr(http_protocol.WebRequest, "bounded_by_console", False):
        return
    http_protocol.WebRequest = _bounded_web_request(http_protocol.WebRequest)
    build_protocol = http_protocol.HTTPFactory.buildProtocol

    def build_with_idle_timeout(factory: Any, addr: Any) -> Any:
        # The channel's timeout runs while no request is being read or answered (Twisted pauses it meanwhile,
        # and for good once a request became a WebSocket), so it bounds idle keep-alive connections only.
        protocol = build_protocol(factory, addr)
        protocol.timeOut = float(settings.EMQ_IDLE_TIMEOUT_S)
        return protocol

    http_protocol.HTTPFactory.buildProtocol = build_with_idle_timeout


def _bounded_web_request(base: type) -> type:
    # (twisted declares its interfaces' methods without self, so mypy misreads callLater's arguments)
    from twisted.internet import reactor

    class BoundedWebRequest(base):
        """daphne's request, refusing a body over the general limit or one that stalls, as it arrives."""

        bounded_by_console = True
        received = 0
        refused = False
        timer: Any = None
        deadline: Any = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Made when the request line arrives: from then on the headers and the body have a deadline.
            super().__init__(*args, **kwargs)
            self.deadline = reactor.callLater(float(settings.EMQ_REQUEST_DEADLINE_S), self.overdue)  # type: ignore[arg-type]

        def gotLength(self, length: int | None) -> None:
            limit = int(settings.EMQ_MAX_BODY_BYTES)
            if length is not None and length > limit:
                super().gotLength(0)  # an empty body for Twisted to close later; nothing is stored
                self.refuse(*_too_large(limit))
                return
            super().gotLength(length)
            self.rearm()

        def handleContentChunk(self, data: bytes) -> None:
            if self.refused:
                return
            self.received += len(data)
            limit = int(settings.EMQ_MAX_BODY_BYTES)
            if self.received > limit:
                self.refuse(*_too_large(limit))
                return
            super().handleContentChunk(data)
            self.rearm()

        def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
            self.disarm()
            self.disarm_deadline()
            if not self.refused:
                super().requestReceived(command, path, version)

        def connectionLost(self, reason: Any) -> None:
            self.disarm()
            self.disarm_deadline()
            super().connectionLost(reason)

        def rearm(self) -> None:
            self.disarm()
            self.timer = reactor.callLater(float(settings.EMQ_BODY_TIMEOUT_S), self.stalled)  # type: ignore[arg-type]

        def disarm(self) -> None:
            if self.timer is not None and self.timer.active():
                self.timer.cancel()
            self.timer = None

        def disarm_deadline(self) -> None:
            if self.deadline is not None and self.deadline.active():
                self.deadline.cancel()
            self.deadline = None

        def stalled(self) -> None:
            self.timer = None
            if not self.refused:
                self.refuse(*_stalled())

        def overdue(self) -> None:
            self.deadline = None
            if not self.refused:
                self.refuse(*_overdue())

        def refuse(self, status: int, text: str) -> None:
            self.refused = True
            self.disarm()
            self.disarm_deadline()
            # No "100 Continue" after the refusal: the client must not send the body.
            self.requestHeaders.removeHeader(b"Expect")
            transport = self.channel.transport if self.channel is not None else None
            if transport is None:
                return
            body = text.encode()
            reason = {408: b"Request Timeout", 413: b"Content Too Large"}[status]
            transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
                            b"Cache-Control: no-store\r\nConnection: close\r\n\r\n%s" % (status, reason, len(body), body))
            reactor.callLater(LINGER_S, transport.loseConnection)  # type: ignore[arg-type]

    return BoundedWebRequest


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


def login_username(request: HttpRequest, credentials: dict[str, Any] | None = None) -> str | None:
    """The user name a login attempt named, as django-axes records it: at most 150 characters."""
    name = (credentials or {}).get("username")
    if not name and request is not None:
        name = request.POST.get("username")
    return str(name)[:150] if name else None
