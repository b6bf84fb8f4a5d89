"""The console's WebSockets for a host project's ASGI router, under the prefix its URLs are included at:

    path("ops/queues/", console_websockets()),   # in the host's URLRouter, beside path("ops/queues/", include(...))

(README, "Mounting in your project"). The standalone project's ``dashboard.asgi`` puts the same routes at the root.
"""

from __future__ import annotations

import atexit

from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter

from .alerts.runner import alerts_start, alerts_stop
from .asgi_limits import ASGIApp, Receive, Scope, Send, WebsocketOriginValidator
from .routing import websocket_urlpatterns
from .scheduler import scheduler_start, scheduler_stop
from .socket_caps import SocketCaps, UserSocketCaps
from .sweeper import sweeper_start, sweeper_stop


class ConsoleWebsockets:
    """The console's socket routes with their origin check and socket caps, read by the host's router as a nested
    router (``_path_routing``: it hands on the rest of the path). The host's ``AuthMiddlewareStack`` says who is
    looking; without one the console reads the session itself."""

    _path_routing = True

    def __init__(self) -> None:
        routes = URLRouter(websocket_urlpatterns)
        self.app: ASGIApp = WebsocketOriginValidator(SocketCaps(UserSocketCaps(routes)))
        self.authenticated: ASGIApp = AuthMiddlewareStack(self.app)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if "user" in scope:
            await self.app(scope, receive, send)
        else:
            await self.authenticated(scope, receive, send)


def console_websockets() -> ConsoleWebsockets:
    """The console's sockets, and this server process's lease sweeper (``EMQ_SWEEPER_INTERVAL_S``; 0: none),
    alert rules (``EMQ_ALERTS_INTERVAL_S``) and schedules (``EMQ_SCHEDULER_INTERVAL_S``), which the standalone
    project's ASGI module starts too."""
    if sweeper_start() is not None:
        atexit.register(sweeper_stop)
    if alerts_start() is not None:
        atexit.register(alerts_stop)
    if scheduler_start() is not None:
        atexit.register(scheduler_stop)
    return ConsoleWebsockets()
