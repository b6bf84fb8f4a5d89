"""The why line at the top of the queue page and the job page: rendered with the page, and followed live."""

from __future__ import annotations

import pytest
from django.test import Client

from queues import EchoMQ
from tests.support.redis_servers import RedisServer
from tests.support.sockets import connect, receive_until
from tests.support.why import commands_run, register, reset_commandstats

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_queue_page_opens_with_why_it_is_not_draining(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    console_mq.pause("mail", reason="deploy <b>42</b>")

    html = viewer_client.get("/queue/?q=mail").content.decode()

    assert html.index('id="why-line"') < html.index('id="queue-summary"')
    assert 'data-why-code="paused"' in html and "deploy &lt;b&gt;42&lt;/b&gt;" in html
    assert "exact as of" in html


def test_the_job_page_opens_with_why_the_job_is_not_moving(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="j", delay_ms=60_000)

    html = viewer_client.get("/job/?q=mail&id=j").content.decode()

    assert html.index('id="why-line"') < html.index('id="job-core"') and 'data-why-code="delayed"' in html


async def test_the_queue_pages_why_line_follows_a_pause_live(console_mq: EchoMQ, viewer_cookie: bytes,
                                                              stop_followers: None) -> None:
    console_mq.enqueue("mail", "x")
    register(console_mq, "mail", "box:7", concurrency=1, held=["busy"])
    page = await connect("/ws/queue/?q=mail", viewer_cookie)
    await receive_until(page, lambda m: 'data-why-code="at_capacity"' in m)

    console_mq.pause("mail", reason="incident")

    message = await receive_until(page, lambda m: 'data-why-code="paused"' in m)
    assert 'id="why-line" class="why-line warn" role="status" aria-live="polite" hx-swap-oob="true"' in message
    await page.disconnect()


async def test_the_job_pages_why_line_follows_the_clock_when_its_worker_stops_beating(
        console_mq: EchoMQ, viewer_cookie: bytes, stop_followers: None) -> None:
    console_mq.enqueue("mail", "x", job_id="j")
    register(console_mq, "mail", "test", ttl_ms=1500)  # gone after two missed beats of 500 ms
    console_mq.claim("mail", lease_ms=600_000)
    page = await connect("/ws/job/?q=mail&id=j", viewer_cookie)
    await receive_until(page, lambda m: 'data-why-code="leased"' in m)

    # No event of the job: the line changes on the follower's tick (every 5 s), and says who is gone.
    message = await receive_until(page, lambda m: 'data-why-code="worker_gone"' in m)
    assert "its worker test is gone" in message
    await page.disconnect()


async def test_the_why_line_says_unknown_and_the_counts_say_stale_while_redis_is_down(viewer_cookie: bytes, settings: object,
                                                              stop_followers: None) -> None:
    server = RedisServer().start()
    settings.EMQ_REDIS_URL = server.url  # type: ignore[attr-defined]
    try:
        EchoMQ.from_url(server.url).enqueue("mail", "a", job_id="j1")
        pages = [await connect(path, viewer_cookie) for path in ("/ws/queue/?q=mail", "/ws/job/?q=mail&id=j1")]
        for page in pages:
            await receive_until(page, lambda m: 'data-why-code="no_live_worker"' in m)

        server.stop()
        for page in pages:
            message = await receive_until(page, lambda m: 'data-why-code="unknown"' in m)
            assert '<span class="figure unknown">unknown</span>' in message
            if page is pages[0]:
                # The queue's counts stay on screen, marked stale with their age, never replaced by zeros.
                assert '<b class="figure unknown">stale</b>: these counts were read' in message
                assert '<span class="count" data-state="pending">1</span>' in message
    finally:
        server.cleanup()


def test_the_overview_shows_each_rows_why_and_sorts_queues_that_do_not_drain_first(viewer_client: Client,
                                                                                  console_mq: EchoMQ) -> None:
    console_mq.enqueue("a-idle", "x", delay_ms=60_000)
    console_mq.enqueue("b-due", "x")
    console_mq.enqueue("c-paused", "x")
    console_mq.pause("c-paused", reason="deploy")
    viewer_client.get("/")  # the census reads the registry

    html = viewer_client.get("/?sort=reason").content.decode()

    order = [html.index(f">{name}</a>") for name in ("c-paused", "b-due", "a-idle")]
    assert order == sorted(order) and "sorted by why" in html
    assert 'data-why-code="paused"' in html and 'data-why-code="no_live_worker"' in html
    assert 'data-why-code="not_due"' in html


async def test_overview_tabs_of_one_process_share_their_rows_reasons_for_5_s(console_mq: EchoMQ,
                                                                            redis_url: str) -> None:
    from dashboard import why_line
    from queues import AsyncEchoMQ

    why_line._kept.clear()
    names = [f"tenant-{n}" for n in range(3)]
    for name in names:
        console_mq.enqueue(name, "x")
    amq = AsyncEchoMQ.from_url(redis_url, actor="test")
    try:
        first = await why_line.overview_reasons_async(amq, names)
        reset_commandstats(console_mq)
        second = await why_line.overview_reasons_async(amq, names[:2])
        scripts = commands_run(console_mq).get("cmdstat_evalsha", 0)
    finally:
        await amq.close()
    assert [first[n].code for n in names] == ["no_live_worker"] * 3
    assert second == {n: first[n] for n in names[:2]} and scripts == 0


def test_an_overview_row_whose_counts_are_an_old_census_reading_says_stale_with_its_age(db: None) -> None:
    from dashboard.presenters import QueueRow
    from dashboard.rows import overview_row
    from queues.reads import QueueStats

    stats = QueueStats("mail", 1_000_000, {"pending": 2, "active": 0, "done": 0, "failed": 0}, 2, 0, 999_000, None, "")

    fresh = overview_row(QueueRow("mail", stats, age_ms=2_000), cluster=False)
    old = overview_row(QueueRow("mail", stats, age_ms=40_000), cluster=False)

    assert "stale" not in fresh
    assert '<span class="figure stale"' in old and 'data-since="1000000">40 s ago' in old
