"""Connections from one URL (``EMQ_REDIS_URL``): standalone or cluster, sync or asyncio.

redis-py retries a command after a connection error or timeout by default.
That is wrong for EchoMQ's moves: a claim that timed out may have run, and
running it again would claim a second job. So every client made here has
retries off; callers that know a call is idempotent may retry it themselves.
"""

from __future__ import annotations

import os
from typing import Any, Final, TypeAlias

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

DEFAULT_URL: Final = "redis://127.0.0.1:6379/0"

SyncClient: TypeAlias = "redis.Redis | redis.cluster.RedisCluster"
AsyncClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"


def redis_url(url: str | None = None) -> str:
    return url or os.environ.get("EMQ_REDIS_URL") or DEFAULT_URL


def _options(socket_timeout: float | None) -> dict[str, Any]:
    return {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": 2.0,
        "health_check_interval": 10,
    }


def is_cluster_url(url: str, socket_timeout: float | None = 5.0) -> bool:
    """Ask the server whether cluster mode is on (``INFO cluster``)."""
    probe = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))
    try:
        return bool(probe.info("cluster").get("cluster_enabled"))
    finally:
        probe.close()


def connect(url: str | None = None, *, socket_timeout: float | None = 5.0, cluster: bool | None = None) -> SyncClient:
    url = redis_url(url)
    if cluster is None:
        cluster = is_cluster_url(url, socket_timeout)
    if cluster:
        return redis.cluster.RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))
    return redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))


def connect_async(url: str | None = None, *, socket_timeout: float | None = 5.0, cluster: bool | None = None) -> AsyncClient:
    url = redis_url(url)
    if cluster is None:
        cluster = is_cluster_url(url, socket_timeout)
    if cluster:
        return redis.asyncio.cluster.RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))
    return redis.asyncio.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))


def is_cluster_client(client: object) -> bool:
    return isinstance(client, (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster))
