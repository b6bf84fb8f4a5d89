from __future__ import annotations

from django.urls import path

from . import consumers
from .actions.routing import websocket_urlpatterns as action_patterns

websocket_urlpatterns = [
    path("ws/overview/", consumers.OverviewConsumer.as_asgi()),
    path("ws/queue/", consumers.QueueConsumer.as_asgi()),
    path("ws/job/", consumers.JobConsumer.as_asgi()),
    *action_patterns,
]
