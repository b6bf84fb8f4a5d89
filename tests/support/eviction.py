"""A Redis set to evict (``allkeys-lru``) for the length of a test, then set back."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis


@contextmanager
def evicting(client: redis.Redis | redis.RedisCluster, policy: str = "allkeys-lru") -> Iterator[None]:
    before = str(client.config_get("maxmemory-policy")["maxmemory-policy"])
    client.config_set("maxmemory-policy", policy)
    try:
        yield
    finally:
        client.config_set("maxmemory-policy", before)
