"""The eviction guard: every console page says so, in red, while Redis may evict keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from dashboard.monitoring.eviction import eviction_check_reset
from queues import EchoMQ
from tests.support.eviction import evicting

PAGES = ["/", "/queue/?q=mail", "/job/?q=mail&id=a", "/audit/", "/cluster/", "/find/"]


@pytest.fixture(autouse=True)
def fresh_check() -> Iterator[None]:
    eviction_check_reset()
    yield
    eviction_check_reset()


def test_every_page_shows_a_red_banner_while_redis_may_evict(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    with evicting(console_mq.redis):
        for url in PAGES:
            content = viewer_client.get(url).content.decode()
            assert 'id="eviction-warning" class="banner bad" role="alert"' in content, url
            assert "maxmemory-policy is allkeys-lru" in content, url


def test_no_page_shows_it_when_redis_does_not_evict(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")

    for url in PAGES:
        assert b"eviction-warning" not in viewer_client.get(url).content, url


def test_the_login_page_says_nothing_to_an_anonymous_visitor(client: Client, console_mq: EchoMQ) -> None:
    with evicting(console_mq.redis):
        assert b"eviction-warning" not in client.get("/login/").content
