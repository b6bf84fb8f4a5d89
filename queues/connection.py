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
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import NoBackoff
from redis.retry import Retry

from .errors import UnsupportedServer
from .redis_errors import translate

DEFAULT_URL: Final = "redis://127.0.0.1:6379/0"

SyncClient: TypeAlias = "redis.Redis | redis.cluster.RedisCluster"
AsyncClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"


def redis_url(url: str | None = None) -> str:
    return url or os.environ.get("EMQ_REDIS_URL") or DEFAULT_URL


# Each standalone client holds at most this many connections (EMQ_REDIS_MAX_CONNECTIONS) and a caller
# past them waits up to POOL_WAIT_S for one to come free instead of opening another: a console process
# shares one sync and one asyncio client among all its pages, so however many queues or open tabs, its
# connections stay bounded and no read fails with "Too many connections".
MAX_CONNECTIONS: Final = 50
POOL_WAIT_S: Final = 20.0


def max_connections() -> int:
    text = os.environ.get("EMQ_REDIS_MAX_CONNECTIONS", "").strip()
    return int(text) if text.isascii() and text.isdigit() and int(text) > 0 else MAX_CONNECTIONS


def _options(socket_timeout: float | None) -> dict[str, Any]:
    return {
        "socket_timeout": socket_timeout,
        "socket_connect_timeout": 2.0,
        "health_check_interval": 10,
    }


# The scripts declare their flags with a Redis 7 shebang (#!lua flags=...), which older servers refuse.
MINIMUM_VERSION: Final = (7, 0)


def check_version(info: dict[str, Any]) -> None:
    """Raises :class:`UnsupportedServer` unless ``INFO server`` names Redis 7.0 or newer (Valkey reports so too)."""
    text = str(info.get("redis_version", ""))
    try:
        version = tuple(int(part) for part in text.split(".")[:2])
    except ValueError:
        version = ()
    if len(version) < 2 or version < MINIMUM_VERSION:
        raise UnsupportedServer(f"EchoMQ needs Redis 7.0 or newer (its scripts declare flags); "
                                f"the server says {text or 'no version'}")


def is_cluster_url(url: str, socket_timeout: float | None = 5.0) -> bool:
    """Asks the server whether cluster mode is on (``INFO server``), checking its version on the way;
    :class:`Unavailable` when it cannot be asked."""
    probe = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))
    try:
        info = probe.info("server")
    except Exception as error:
        raise translate(error, "the first look at the server") from error
    finally:
        probe.close()
    check_version(info)
    return info.get("redis_mode") == "cluster"


def connect(url: str | None = None, *, socket_timeout: float | None = 5.0, cluster: bool | None = None) -> SyncClient:
    """A client for ``url`` (standalone or cluster, asked of the server unless ``cluster`` says);
    raises :class:`UnsupportedServer` below Redis 7.0 when it asks."""
    url = redis_url(url)
    if cluster is None:
        cluster = is_cluster_url(url, socket_timeout)
    if cluster:
        return redis.cluster.RedisCluster.from_url(url, retry=Retry(NoBackoff(), 0), **_options(socket_timeout))
    pool = redis.BlockingConnectionPool.from_url(url, max_connections=max_connections(), timeout=POOL_WAIT_S,
                                                 retry=Retry(NoBackoff(), 0), **_options(socket_timeout))
    return redis.Redis.from_pool(pool)


def connect_async(url: str | None = None, *, socket_timeout: float | None = 5.0, cluster: bool | None = None) -> AsyncClient:
    url = redis_url(url)
    if cluster is None:
        cluster = is_cluster_url(url, socket_timeout)
    if cluster:
        return redis.asyncio.cluster.RedisCluster.from_url(url, retry=AsyncRetry(NoBackoff(), 0),
                                                           **_options(socket_timeout))
    # The asyncio client's own Retry: redis-py 8 warns on a sync one (and converts it).
    pool = redis.asyncio.BlockingConnectionPool.from_url(url, max_connections=max_connections(), timeout=POOL_WAIT_S,
                                                         retry=AsyncRetry(NoBackoff(), 0), **_options(socket_timeout))
    return redis.asyncio.Redis.from_pool(pool)


def is_cluster_client(client: object) -> bool:
    # Asked several times per job on a worker's path; redis-py's cluster classes have typing's protocol
    # metaclass, whose isinstance check costs a few microseconds each time, so the answer is kept per class.
    kind = type(client)
    known = _CLUSTER_CLASSES.get(kind)
    if known is None:
        known = _CLUSTER_CLASSES[kind] = issubclass(kind, (redis.cluster.RedisCluster,
                                                            redis.asyncio.cluster.RedisCluster))
    return known


_CLUSTER_CLASSES: dict[type, bool] = {}
