""""Nothing changed", proved byte for byte: the DUMP of every key of a Redis."""

from __future__ import annotations

import redis


def keyspace_dump(client: redis.Redis | redis.RedisCluster) -> dict[bytes, bytes]:
    """Every key with its DUMP (type, value and encoding); TTLs are not part of a job's keys."""
    return {key: client.dump(key) for key in client.scan_iter(count=1000)}  # type: ignore[misc]
