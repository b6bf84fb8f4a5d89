"""The overview's latency table: p95 wait and time to drain of the queues on the page, sortable, with the
queues whose objective burns fast flagged."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from queues import EchoMQ
from queues.slo import slo_set
from tests.support.latency import early_in_a_minute, record_enqueues, record_latencies

pytestmark = pytest.mark.django_db


def _order(page: str) -> list[str]:
    table = page[page.index('id="overview-latency"'):]
    return re.findall(r'<tr data-queue="([^"]+)"', table)


@pytest.fixture
def three_queues(console_mq: EchoMQ) -> None:
    now = early_in_a_minute(console_mq, "a-slow")
    for minute in range(1, 11):
        at = now - minute * 60_000
        record_latencies(console_mq, "a-slow", at, "W", [60_000] * 60)  # 1 claim/s
        record_latencies(console_mq, "b-fast", at, "W", [50] * 120)  # 2 claims/s
        record_enqueues(console_mq, "b-fast", at, 60)  # 1 arrival/s
        record_enqueues(console_mq, "c-stuck", at, 60)  # arrivals, no claim
    console_mq.enqueue_many("a-slow", ["x"] * 600)
    console_mq.enqueue_many("b-fast", ["x"] * 120)
    console_mq.enqueue_many("c-stuck", ["x"] * 5)


def test_the_table_gives_p95_wait_and_time_to_drain_sorted_as_asked(viewer_client: Client, console_mq: EchoMQ,
                                                                     three_queues: None) -> None:
    by_name = viewer_client.get("/").content.decode()
    by_p95 = viewer_client.get("/?lsort=p95").content.decode()
    by_drain = viewer_client.get("/?lsort=drain").content.decode()

    assert _order(by_name) == ["a-slow", "b-fast", "c-stuck"]
    assert _order(by_p95) == ["a-slow", "b-fast", "c-stuck"]  # 1 min, 50 ms, not measured
    assert _order(by_drain) == ["c-stuck", "a-slow", "b-fast"]  # not draining, 10 min, 2 min
    assert '<td class="drain">~10 min</td>' in by_name and '<td class="drain">~2 min</td>' in by_name
    assert '<td class="drain">not draining</td>' in by_name and "not measured" in by_name


def test_a_queue_burning_its_objective_fast_is_flagged(viewer_client: Client, console_mq: EchoMQ,
                                                      three_queues: None) -> None:
    console_mq.run(slo_set("a-*", metric="wait", under_ms=30_000, target=99))  # every wait of a-slow is over
    console_mq.run(slo_set("b-fast", metric="wait", under_ms=30_000, target=99))

    page = viewer_client.get("/").content.decode()

    assert 'id="burning-fast"' in page
    flagged = page[page.index('id="burning-fast"'):page.index("</p>", page.index('id="burning-fast"'))]
    assert "a-slow" in flagged and "b-fast" not in flagged


def test_an_objectives_key_of_another_type_leaves_every_page_readable(viewer_client: Client,
                                                                      console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    console_mq.redis.set("emq:slos", "not a hash")

    overview = viewer_client.get("/")
    queue = viewer_client.get("/queue/?q=mail")

    assert overview.status_code == queue.status_code == 200
    assert "Latency cannot be read right now." in overview.content.decode()
