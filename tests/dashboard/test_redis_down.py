from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.census import census_reset
from dashboard.services import forget_clients
from queues import EchoMQ
from tests.support.redis_servers import RedisServer


@pytest.fixture
def doomed_redis(settings: SettingsWrapper) -> Iterator[RedisServer]:
    server = RedisServer().start()
    settings.EMQ_REDIS_URL = server.url
    forget_clients()
    census_reset()
    yield server
    server.cleanup()
    forget_clients()
    census_reset()


@pytest.mark.parametrize("url", ["/", "/queue/?q=mail", "/job/?q=mail&id=j1", "/find/?id=j1"])
def test_every_page_answers_503_with_a_banner_when_redis_is_down(viewer_client: Client, doomed_redis: RedisServer,
                                                                 url: str) -> None:
    mq = EchoMQ.from_url(doomed_redis.url)
    mq.enqueue("mail", "a", job_id="j1")
    mq.close()
    assert viewer_client.get(url).status_code in (200, 302)
    doomed_redis.stop()

    response = viewer_client.get(url)

    assert response.status_code == 503
    assert b"Redis is unreachable." in response.content
    assert b'id="redis-status" class="banner bad" role="alert" hidden' not in response.content


def test_pages_come_back_by_themselves_when_redis_returns(viewer_client: Client, doomed_redis: RedisServer) -> None:
    doomed_redis.stop()
    assert viewer_client.get("/").status_code == 503

    doomed_redis.start()

    assert viewer_client.get("/").status_code == 200
