"""ASGI entry point for daphne: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import atexit
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from dashboard.routing import websocket_urlpatterns  # noqa: E402
from dashboard.sweeper import sweeper_start, sweeper_stop  # noqa: E402

# Live pages: the session cookie says who is looking, Origin must be one of
# ALLOWED_HOSTS. No channel layer: each process's follower feeds its own pages.
application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
})

# Every server process offers to sweep lapsed leases; the sweeper lock lets one
# at a time. Started in the background, so a Redis that is down cannot stop the
# console from serving; stopped at exit, so another process takes over at once.
if sweeper_start() is not None:
    atexit.register(sweeper_stop)
