"""ASGI entry point for daphne: HTTP through Django, WebSockets through Channels."""

from __future__ import annotations

import atexit
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from dashboard.alerts.runner import alerts_start, alerts_stop  # noqa: E402
from dashboard.api.errors import ApiJsonAnswers  # noqa: E402
from dashboard.asgi_limits import BodyLimit, LoopbackOnlyWhileDebug, WebsocketOriginValidator  # noqa: E402
from dashboard.client_address import TrustedProxyClient  # noqa: E402
from dashboard.daphne_requests import bound_daphne_requests  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402
from dashboard.scheduler import scheduler_start, scheduler_stop  # noqa: E402
from dashboard.socket_caps import SocketCaps, UserSocketCaps  # noqa: E402
from dashboard.sweeper import sweeper_start, sweeper_stop  # noqa: E402

# Live pages: the session cookie says who is looking, and the Origin must be
# one that Django's CSRF check trusts; a session, a user and the process hold a
# bounded number of sockets (dashboard.socket_caps). No channel layer: each process's
# follower feeds its own pages. Request bodies are bounded before Django reads
# them (under daphne, before daphne stores them). Under /api/ every refusal is JSON.
bound_daphne_requests()
# The client's address is settled first (EMQ_TRUSTED_PROXY_HOPS), for everything below.
application = ApiJsonAnswers(LoopbackOnlyWhileDebug(TrustedProxyClient(ProtocolTypeRouter({
    "http": BodyLimit(django_asgi_app),
    "websocket": WebsocketOriginValidator(SocketCaps(AuthMiddlewareStack(UserSocketCaps(
        URLRouter(websocket_urlpatterns))))),
}))))

# Every server process offers to sweep lapsed leases; the sweeper lock lets one
# at a time. Started in the background, so a Redis that is down cannot stop the
# console from serving; stopped at exit, so another process takes over at once.
if sweeper_start() is not None:
    atexit.register(sweeper_stop)
# The same for the alert rules: one process evaluates them at a time (dashboard.alerts.runner).
if alerts_start() is not None:
    atexit.register(alerts_stop)
# Every server process also offers to run the schedules' ticks; the scheduler lock lets one at a time.
if scheduler_start() is not None:
    atexit.register(scheduler_stop)
