from __future__ import annotations

from django.urls import path, re_path

from . import consumers
from .actions.routing import websocket_urlpatterns as action_patterns
from .search.routing import websocket_urlpatterns as search_patterns

websocket_urlpatterns = [
    path("ws/overview/", consumers.OverviewConsumer.as_asgi()),
    path("ws/queue/", consumers.QueueConsumer.as_asgi()),
    path("ws/job/", consumers.JobConsumer.as_asgi()),
    *action_patterns,
    *search_patterns,
    # Last: any other path is closed with a code, where the router would raise and daphne answer 500.
    re_path(r"", consumers.UnknownPathConsumer.as_asgi()),
]
