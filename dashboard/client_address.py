"""The client's address behind trusted proxies: one answer for the login throttle, ``/metrics`` and the audit.

Each proxy in front of the console appends the address it was reached from
to ``X-Forwarded-For``; whatever stands left of the entries the trusted
proxies wrote came from the client, who may write anything there. So with
``EMQ_TRUSTED_PROXY_HOPS`` = N the client is the N-th entry counted from the
right (nginx with ``proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;``
in front: N = 1), and with N = 0 (no proxy) the header is ignored and the
connection's own peer is the client. A request that carries fewer entries
than N did not come through every proxy: its peer stays the client.

The ASGI ``client`` is rewritten before Django or Channels see the request,
so ``REMOTE_ADDR`` (django-axes, ``EMQ_METRICS_ALLOW``, the audit's address)
is that one address everywhere.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings

from .asgi_limits import ASGIApp, Receive, Scope, Send


def forwarded_client(peer: str | None, forwarded: Iterable[bytes], hops: int) -> str | None:
    """The client's address: the ``hops``-th ``X-Forwarded-For`` entry from the right, else ``peer``."""
    if hops <= 0:
        return peer
    entries = [entry.strip() for value in forwarded for entry in value.decode("latin-1").split(",")]
    if len(entries) < hops:
        return peer
    candidate = entries[-hops].strip("[]")
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        # The trusted proxy wrote something that is not an address: trust nothing of it.
        return peer


class TrustedProxyClient:
    """Sets the ASGI ``client`` of every HTTP request and WebSocket to :func:`forwarded_client`'s answer."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        hops = int(settings.EMQ_TRUSTED_PROXY_HOPS)
        if hops > 0 and scope["type"] in {"http", "websocket"}:
            client = scope.get("client")
            peer = str(client[0]) if client else None
            forwarded = [value for name, value in scope.get("headers", ()) if name.lower() == b"x-forwarded-for"]
            address = forwarded_client(peer, forwarded, hops)
            if address != peer:
                scope = {**scope, "client": (address, 0)}
        await self.app(scope, receive, send)
