from __future__ import annotations

import asyncio

import pytest
from channels.testing import WebsocketCommunicator

from dashboard.asgi import application
from dashboard.live import JobPage
from dashboard.presenters import dom_id
from queues import EchoMQ, QueueKeys
from queues.follower import Follower, Update
from queues.keys import QUEUE_REGISTRY
from tests.support.redis_servers import RedisServer
from tests.support.sockets import connect, receive_until

pytestmark = pytest.mark.django_db(transaction=True)


async def test_an_anonymous_socket_is_closed_with_4401(console_mq: EchoMQ, stop_followers: None) -> None:
    communicator = await connect("/ws/overview/", None)

    closed = await communicator.receive_output(timeout=30)

    assert closed == {"type": "websocket.close", "code": 4401}


async def test_a_socket_from_another_origin_is_refused(console_mq: EchoMQ, viewer_cookie: bytes, stop_followers: None) -> None:
    communicator = WebsocketCommunicator(application, "/ws/overview/",
                                         headers=[(b"origin", b"http://evil.example"), (b"cookie", viewer_cookie)])

    connected, _ = await communicator.connect(timeout=20)  # a bound, not a speed: 1 s is not enough at load 20

    assert not connected


async def test_a_bad_queue_name_closes_the_socket_with_4400(console_mq: EchoMQ, viewer_cookie: bytes,
                                                            stop_followers: None) -> None:
    communicator = await connect("/ws/queue/?q=a%20b", viewer_cookie)

    assert await communicator.receive_output(timeout=30) == {"type": "websocket.close", "code": 4400}


async def test_the_overview_pushes_the_row_of_a_queue_whose_count_changed(console_mq: EchoMQ, viewer_cookie: bytes,
                                                                          stop_followers: None) -> None:
    console_mq.enqueue("mail", "a")
    # A queue another runtime wrote without events: nothing about its row changes while mail's does.
    thumbs = QueueKeys("thumbs")
    console_mq.redis.hset(thumbs.job("b"), mapping={"state": "pending", "attempts": "0", "payload": "b"})
    console_mq.redis.zadd(thumbs.pending, {"b": 0})
    console_mq.redis.sadd(QUEUE_REGISTRY, "thumbs")
    communicator = await connect("/ws/overview/", viewer_cookie)
    await receive_until(communicator, lambda m: dom_id("q", "thumbs") in m and dom_id("q", "mail") in m)

    console_mq.enqueue("mail", "c")
    message = await receive_until(communicator, lambda m: m.startswith(f'<tr id="{dom_id("q", "mail")}"')
                                  and '<td class="num pending">2</td>' in m)

    assert 'hx-swap-oob="true"' in message
    assert dom_id("q", "thumbs") not in message
    await communicator.disconnect()


async def test_the_queue_page_pushes_its_jobs_table_when_a_job_moves(console_mq: EchoMQ, viewer_cookie: bytes,
                                                                      stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    communicator = await connect("/ws/queue/?q=mail&state=active", viewer_cookie)
    first = await receive_until(communicator, lambda m: 'id="queue-jobs"' in m)
    assert dom_id("j", "j1") not in first

    claimed = console_mq.claim("mail", lease_ms=60_000)[0]
    message = await receive_until(communicator, lambda m: dom_id("j", "j1") in m)

    assert f'data-deadline="{claimed.lease_deadline_ms}"' in message
    assert 'id="queue-summary" class="summary" hx-swap-oob="true"' in message
    await communicator.disconnect()


async def test_the_job_page_pushes_the_job_when_it_moves(console_mq: EchoMQ, viewer_cookie: bytes,
                                                          stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    communicator = await connect("/ws/job/?q=mail&id=j1", viewer_cookie)
    await receive_until(communicator, lambda m: 'id="job-core"' in m)

    claimed = console_mq.claim("mail")[0]
    console_mq.complete("mail", "j1", claimed.token)
    message = await receive_until(communicator, lambda m: "badge big done" in m)

    assert "complete" in message  # the history fragment came with it
    await communicator.disconnect()


async def test_the_job_page_follows_a_heartbeat_with_the_new_deadline(console_mq: EchoMQ, viewer_cookie: bytes,
                                                                      stop_followers: None) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    claimed = console_mq.claim("mail", lease_ms=60_000)[0]
    communicator = await connect("/ws/job/?q=mail&id=j1", viewer_cookie)
    await receive_until(communicator, lambda m: f'data-deadline="{claimed.lease_deadline_ms}"' in m)

    deadline = console_mq.extend("mail", "j1", claimed.token, lease_ms=600_000)

    await receive_until(communicator, lambda m: f'data-deadline="{deadline}"' in m)
    await communicator.disconnect()


async def test_every_page_gets_the_banner_when_redis_stops_and_loses_it_when_it_returns(
        viewer_cookie: bytes, settings: object, stop_followers: None) -> None:
    server = RedisServer().start()
    settings.EMQ_REDIS_URL = server.url  # type: ignore[attr-defined]
    try:
        EchoMQ.from_url(server.url).enqueue("mail", "a", job_id="j1")
        pages = [await connect(path, viewer_cookie) for path in ("/ws/overview/", "/ws/queue/?q=mail", "/ws/job/?q=mail&id=j1")]
        for page in pages:
            await receive_until(page, lambda m: 'id="redis-status"' in m)

        server.stop()
        for page in pages:
            await receive_until(page, lambda m: 'id="redis-status" class="banner bad" role="alert" hx-swap-oob' in m)
        server.start()
        for page in pages:
            await receive_until(page, lambda m: 'role="alert" hidden hx-swap-oob' in m)
    finally:
        server.cleanup()


async def test_a_queue_page_that_never_read_before_redis_stopped_marks_its_rendered_counts_stale(
        viewer_cookie: bytes, settings: object, stop_followers: None) -> None:
    # The page was rendered with Redis up; Redis stopped before its socket's first read, so the socket
    # has no counts of its own to send again: it marks the rendered ones.
    server = RedisServer().start()
    settings.EMQ_REDIS_URL = server.url  # type: ignore[attr-defined]
    try:
        EchoMQ.from_url(server.url).enqueue("mail", "a", job_id="j1")
        server.stop()
        page = await connect("/ws/queue/?q=mail", viewer_cookie)

        message = await receive_until(page, lambda m: 'id="figures-mark"' in m)

        assert 'class="figures-mark stale" hx-swap-oob="true"' in message
        assert "read when the page loaded, and Redis is not answering" in message
        await page.disconnect()
    finally:
        server.cleanup()


async def test_a_page_whose_render_lost_the_cancel_of_its_close_stops_at_its_next_turn(
        console_mq: EchoMQ, viewer_cookie: bytes, stop_followers: None, monkeypatch: pytest.MonkeyPatch) -> None:
    console_mq.enqueue("mail", "a", job_id="j1")
    communicator = await connect("/ws/job/?q=mail&id=j1", viewer_cookie)
    await receive_until(communicator, lambda m: "j1" in m)
    rendering = asyncio.Event()

    async def render_that_loses_its_cancel(page: JobPage, follower: Follower, update: Update) -> list[str]:
        rendering.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            # Dropped, as Python 3.11's asyncio.wait_for drops a cancel that arrives as the Redis write it
            # awaits (redis-py's asyncio client writes every command under it) finishes.
            pass
        return []

    monkeypatch.setattr(JobPage, "changed", render_that_loses_its_cancel)
    [pusher] = [task for task in asyncio.all_tasks() if getattr(task.get_coro(), "__qualname__", "") == "LiveConsumer._push"]
    console_mq.enqueue("mail", "b")
    await asyncio.wait_for(rendering.wait(), 30)

    await communicator.disconnect()

    await asyncio.wait([pusher], timeout=10)
    assert pusher.cancelled()
