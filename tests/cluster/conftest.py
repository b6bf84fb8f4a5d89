from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest

from tests.support.cluster_ops import wait_replicas_in_sync
from tests.support.redis_servers import RedisClusterNodes

FAST_SYNC = ["--repl-diskless-sync-delay", "0"]


@pytest.fixture
def ha_cluster() -> Iterator[RedisClusterNodes]:
    """3 masters with 1 replica each, fresh for each test (the tests kill and move nodes)."""
    cluster = RedisClusterNodes(masters=3, replicas=1, server_args=FAST_SYNC).start()
    wait_replicas_in_sync(cluster)
    yield cluster
    for server in cluster.servers:
        if server.process:
            server.process.send_signal(signal.SIGCONT)
    cluster.cleanup()
