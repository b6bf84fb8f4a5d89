"""Real redis-server processes, started by the tests on free ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from queues import EchoMQ
from queues.connection import connect
from tests.support.redis_servers import RedisClusterNodes, RedisServer

# Modules that take a minute or more in one process. ./dev test runs modules in parallel processes
# (xdist --dist loadfile --no-loadscope-reorder), each process taking the next module in collection
# order when it is done: these go first, so that none is left to run alone at the end. A stale entry
# only costs time, never a test.
LONG_MODULES = (
    "tests/dashboard/test_odd_keyspace.py",
    "tests/test_dev_demo_endings.py",
    "tests/test_dev_demo.py",
    "tests/queues/test_no_write_before_check.py",
    "tests/dashboard/test_permissions.py",
    "tests/test_dev_demo_terminal.py",
    "tests/dashboard/api/test_schemathesis.py",
    "tests/dashboard/test_demo_logins.py",
    "tests/dashboard/monitoring/test_metrics_processes.py",
    # The browser session's (its own run, the same order).
    "tests/browser/test_held_rows.py",
    "tests/browser/test_why.py",
    "tests/browser/test_security.py",
    "tests/browser/test_confirmations.py",
    "tests/browser/test_contrast.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {module: n for n, module in enumerate(LONG_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(LONG_MODULES)))


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterNodes]:
    cluster = RedisClusterNodes(masters=3).start()
    yield cluster
    cluster.cleanup()


@pytest.fixture
def partial_cluster() -> Iterator[RedisClusterNodes]:
    """3 masters without replicas that keep serving their own slots when another master is down (fresh: tests kill one)."""
    cluster = RedisClusterNodes(masters=3, server_args=["--cluster-require-full-coverage", "no"]).start()
    yield cluster
    cluster.cleanup()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    if not redis_server.process:
        redis_server.start()
    redis_server.client().flushall()
    return redis_server.url


@pytest.fixture
def mq(redis_url: str) -> Iterator[EchoMQ]:
    client = EchoMQ.from_url(redis_url, actor="test")
    yield client
    client.close()


def _flush_cluster(cluster: RedisClusterNodes) -> None:
    for server in cluster.servers:
        try:
            server.client().flushall()
        except redis.exceptions.ReadOnlyError:
            pass


@pytest.fixture(params=["standalone", "cluster"])
def any_mq(request: pytest.FixtureRequest) -> Iterator[EchoMQ]:
    """The same test on a standalone server and on a 3-master Redis Cluster."""
    if request.param == "standalone":
        url = request.getfixturevalue("redis_url")
        client = EchoMQ(connect(url), actor="test")
    else:
        cluster: RedisClusterNodes = request.getfixturevalue("redis_cluster")
        _flush_cluster(cluster)
        client = EchoMQ(connect(cluster.url), actor="test")
    yield client
    client.close()
