"""The console's one door to Redis: a shared EchoMQ client per URL, and errors as values.

Views call the functions here (or the client's reads) and never send a Redis
command themselves; anything that goes wrong on the way to Redis comes back
as :class:`queues.Unavailable`, which the views render as a banner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from queues import EchoMQ
from queues.follower import Follower

from .deployments import current

T = TypeVar("T")

# Short enough that a page answers (with a banner) well before a browser gives up.
SOCKET_TIMEOUT_S = 2.0

_clients: dict[str, EchoMQ] = {}
_lock = threading.Lock()


def redis_url() -> str:
    """The Redis of the deployment the request or socket shows (``dashboard.deployments``)."""
    return current().url


def emq() -> EchoMQ:
    url = redis_url()
    client = _clients.get(url)
    if client is None:
        with _lock:
            client = _clients.get(url)
            if client is None:
                client = EchoMQ.from_url(url, actor="console", socket_timeout=SOCKET_TIMEOUT_S)
                _clients[url] = client
    return client


def forget_clients() -> None:
    """Closes and forgets every client: a test that points the console at a new Redis, which may have been
    given the port of one gone before it, must not be served the queue list that one's client read last."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


def read(call: Callable[[EchoMQ], T]) -> T:
    """Runs one read on the console's client, which raises only the project's errors
    (:class:`Unavailable` for every way of not reaching Redis)."""
    return call(emq())


def live_follower() -> Follower | None:
    """This process's follower, when a live page has started one (under daphne)."""
    return Follower.running(redis_url())
