"""daphne's request, bounded as its bytes arrive (only when daphne serves).

daphne reads a whole body into a file before it calls the application, and
then queues all of it in memory at once, so under daphne the body limits of
``dashboard.asgi_limits`` are applied while the bytes come off the socket;
nothing over the limit is ever stored. A request whose headers and body have
not arrived whole within ``EMQ_REQUEST_DEADLINE_S`` is answered 408 however
steadily it trickles, and a connection idle for ``EMQ_IDLE_TIMEOUT_S``
between requests is closed (Twisted's own is 60 s).

Answers are sent at the pace the client reads them: daphne writes every body
message into the connection's buffer at once, so a client that never reads
would make it hold every answer whole. A :class:`SendGate` registered on the
request hears when Twisted's buffer for the connection is full (its producer
is paused, and Twisted stops reading the connection meanwhile) and holds the
application's next body message until the buffer drains; a client that reads
nothing for ``EMQ_WRITE_TIMEOUT_S`` while an answer waits is dropped.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, Final

from django.conf import settings

from dashboard.asgi_limits import overdue_answer, stalled_answer, too_large_answer

# After refusing a body, keep reading (and dropping) what the client still
# sends for this long, so that it reads the answer instead of a reset.
LINGER_S: Final = 2.0


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
    _pace_replies()


class SendGate:
    """A streaming producer on one request: closed while Twisted's send buffer for its connection is full."""

    def __init__(self, request: Any) -> None:
        self.request = request
        self.open = asyncio.Event()
        self.open.set()

    def pauseProducing(self) -> None:  # Twisted's IPushProducer, as the transport calls it
        self.open.clear()

    def resumeProducing(self) -> None:
        self.open.set()

    def stopProducing(self) -> None:
        self.open.set()

    async def writable(self) -> None:
        """Returns once the client has read enough for more to be written; drops a client that reads nothing
        for ``EMQ_WRITE_TIMEOUT_S``."""
        if self.open.is_set():
            return
        try:
            await asyncio.wait_for(self.open.wait(), timeout=float(settings.EMQ_WRITE_TIMEOUT_S))
        except TimeoutError:
            channel = self.request.channel
            if channel is not None and channel.transport is not None:
                channel.transport.abortConnection()
            self.open.set()


def _pace_replies() -> None:
    from daphne import server

    handle_reply = server.Server.handle_reply

    async def handle_reply_at_the_clients_pace(self: Any, protocol: Any, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "http.response.start" and getattr(protocol, "channel", None) is not None \
                and getattr(protocol, "send_gate", None) is None and not protocol.finished:
            # Before the first byte of the body: Twisted tells a producer only of the buffer filling after it came.
            new_gate = SendGate(protocol)
            try:
                protocol.registerProducer(new_gate, True)
                protocol.send_gate = new_gate
            except (ValueError, RuntimeError):  # another producer already paces this request
                pass
        await handle_reply(self, protocol, message)
        gate: SendGate | None = getattr(protocol, "send_gate", None)
        if kind == "http.response.body" and message.get("more_body") and gate is not None:
            await gate.writable()

    server.Server.handle_reply = handle_reply_at_the_clients_pace


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
        send_gate: SendGate | None = None

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # Made when the request line arrives: from then on the headers and the body have a deadline.
            super().__init__(*args, **kwargs)
            self.deadline = reactor.callLater(float(settings.EMQ_REQUEST_DEADLINE_S), self.overdue)  # type: ignore[arg-type]

        def gotLength(self, length: int | None) -> None:
            limit = int(settings.EMQ_MAX_BODY_BYTES)
            if length is not None and length > limit:
                super().gotLength(0)  # an empty body for Twisted to close later; nothing is stored
                self.refuse(*too_large_answer(limit))
                return
            super().gotLength(length)
            self.rearm()

        def handleContentChunk(self, data: bytes) -> None:
            if self.refused:
                return
            self.received += len(data)
            limit = int(settings.EMQ_MAX_BODY_BYTES)
            if self.received > limit:
                self.refuse(*too_large_answer(limit))
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
            if self.send_gate is not None:
                self.send_gate.stopProducing()
            super().connectionLost(reason)

        def finish(self) -> Any:
            # The answer is whole: the gate has nothing more to hold, and the next request may pace its own.
            if self.send_gate is not None and self.producer is self.send_gate and self.channel is not None:
                self.unregisterProducer()
            return super().finish()

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
                self.refuse(*stalled_answer())

        def overdue(self) -> None:
            self.deadline = None
            if not self.refused:
                self.refuse(*overdue_answer())

        def refuse(self, status: int, text: str) -> None:
            self.refused = True
            self.disarm()
            self.disarm_deadline()
            # No "100 Continue" after the refusal: the client must not send the body.
            self.requestHeaders.removeHeader(b"Expect")
            transport = self.channel.transport if self.channel is not None else None
            if transport is None:
                return
            content_type, body = b"text/plain; charset=utf-8", text.encode()
            if self.target().startswith(b"/api/"):
                content_type, body = b"application/json", json.dumps({"error": text.strip()}).encode()
            reason = {408: b"Request Timeout", 413: b"Content Too Large"}[status]
            transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n"
                            b"Cache-Control: no-store\r\nConnection: close\r\n\r\n%s"
                            % (status, reason, content_type, len(body), body))
            reactor.callLater(LINGER_S, transport.loseConnection)  # type: ignore[arg-type]

        def target(self) -> bytes:
            # The request line's path: Twisted sets self.path only once the body is in, which a refusal precedes.
            return bytes(getattr(self.channel, "_path", None) or getattr(self, "path", b"") or b"")

    return BoundedWebRequest
