from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.redis_servers import RedisServer


@pytest.fixture(scope="module")
def five_servers() -> Iterator[list[RedisServer]]:
    servers = [RedisServer().start() for _ in range(5)]
    yield servers
    for server in servers:
        server.cleanup()


@pytest.fixture
def five_urls(five_servers: list[RedisServer]) -> list[str]:
    """Five independent masters, all up and empty at the start of each test."""
    for server in five_servers:
        if not server.process:
            server.start()
        server.client().flushall()
    return [server.url for server in five_servers]
