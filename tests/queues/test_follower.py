from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from queues import EchoMQ
from queues.follower import Follower, Subscription, Update
from tests.support.redis_servers import REDIS_CLI, RedisClusterNodes, RedisServer
from tests.support.waiting import wait_until_async


async def until(sub: Subscription, check: Callable[[Update], bool], timeout: float = 3.0) -> Update:
    """The first update (merged with those before it) for which ``check`` holds."""
    seen = Update()
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no matching update within {timeout} s; saw {seen}")
        try:
            update = await asyncio.wait_for(sub.next(), left)
        except TimeoutError:
            continue
        seen.merge(update)
        if check(update):
            return update


@pytest.fixture
async def follower(redis_url: str) -> AsyncIterator[Follower]:
    # A short safety net: these tests write without events too (redis-cli, FLUSHALL).
    follower = Follower(redis_url, poll_interval_s=0.5)
    follower.start()
    yield follower
    await follower.stop()


def redis_cli(port: int, *command: str) -> None:
    subprocess.run([REDIS_CLI, "-p", str(port), *command], check=True, capture_output=True, timeout=10)


async def test_a_move_made_by_raw_redis_cli_commands_shows_up_within_a_second(
        follower: Follower, redis_server: RedisServer, mq: EchoMQ) -> None:
    mq.enqueue("mail", "a")
    sub = follower.subscribe(["mail"])
    await until(sub, lambda u: "mail" in u.stats)

    started = time.monotonic()
    redis_cli(redis_server.port, "HSET", "emq:{mail}:job:raw", "state", "pending", "attempts", "0", "payload", "x")
    redis_cli(redis_server.port, "ZADD", "emq:{mail}:pending", "0", "raw")
    update = await until(sub, lambda u: "mail" in u.stats and u.stats["mail"].counts["pending"] == 2)

    assert time.monotonic() - started < 1.0
    assert update.jobs["mail"] is None  # no event says which job moved


async def test_events_name_the_jobs_that_moved_and_feed_the_throughput(follower: Follower, mq: EchoMQ) -> None:
    mq.enqueue("mail", "a", job_id="first")
    sub = follower.subscribe(["mail"])
    await until(sub, lambda u: "mail" in u.stats)

    mq.enqueue("mail", "b", job_id="second")
    update = await until(sub, lambda u: u.job_changed("mail", "second"))

    assert update.jobs["mail"] == {"second"}
    assert update.stats["mail"].counts["pending"] == 2
    assert sum(follower.throughput.series("mail", follower.now_ms)) >= 1


async def test_a_page_watching_one_queue_hears_nothing_of_another(follower: Follower, mq: EchoMQ) -> None:
    mq.enqueue("mail", "a")
    mq.enqueue("thumbs", "b")
    mail = follower.subscribe(["mail"])
    every = follower.subscribe(None)
    await until(every, lambda u: {"mail", "thumbs"} <= set(u.stats))
    await until(mail, lambda u: "mail" in u.stats)

    mq.enqueue("thumbs", "c")
    await until(every, lambda u: u.changed("thumbs"))

    assert not mail._pending.changed("thumbs")


async def test_many_moves_reach_a_subscriber_as_a_few_coalesced_updates(follower: Follower, mq: EchoMQ) -> None:
    mq.enqueue("mail", "warm-up")
    sub = follower.subscribe(["mail"])
    await until(sub, lambda u: "mail" in u.stats)

    def produce() -> None:
        for _ in range(20):
            mq.enqueue_many("mail", ["x"] * 25)
            time.sleep(0.05)

    started = time.monotonic()
    producer = asyncio.create_task(asyncio.to_thread(produce))
    updates, pending = 0, 1
    while pending != 501:
        update = await asyncio.wait_for(sub.next(), 3.0)
        updates += 1
        if "mail" in update.stats:
            pending = update.stats["mail"].counts["pending"]
    await producer
    elapsed = time.monotonic() - started

    assert updates <= elapsed / follower.publish_interval_s + 2
    assert updates < 500 / 25


async def test_a_flushed_stream_is_followed_again_from_its_new_start(follower: Follower, mq: EchoMQ) -> None:
    for n in range(5):
        mq.enqueue("mail", str(n))
    sub = follower.subscribe(["mail"])
    await until(sub, lambda u: "mail" in u.stats)

    mq.redis.flushall()
    await until(sub, lambda u: "mail" in u.stats and u.stats["mail"].counts["pending"] == 0)
    mq.enqueue("mail", "after", job_id="after-flush")

    await until(sub, lambda u: u.jobs.get("mail") is not None and "after-flush" in (u.jobs["mail"] or set()))


async def test_a_redis_restart_is_survived() -> None:
    server = RedisServer().start()
    follower = Follower(server.url)
    follower.start()
    try:
        mq = EchoMQ.from_url(server.url)
        mq.enqueue("mail", "a")
        sub = follower.subscribe(["mail"])
        await until(sub, lambda u: "mail" in u.stats)

        server.stop()
        down = await until(sub, lambda u: u.up is False, timeout=2.0)
        assert down.error
        server.start()
        await until(sub, lambda u: u.up is True, timeout=5.0)
        mq = EchoMQ.from_url(server.url)
        mq.enqueue("mail", "b", job_id="after-restart")

        update = await until(sub, lambda u: u.job_changed("mail", "after-restart"), timeout=3.0)
        assert update.stats["mail"].counts["pending"] == 1  # no persistence: only the new job
    finally:
        await follower.stop()
        server.cleanup()


async def test_it_follows_queues_on_every_node_of_a_cluster(redis_cluster: RedisClusterNodes) -> None:
    for server in redis_cluster.servers:
        server.client().flushall()
    mq = EchoMQ.from_url(redis_cluster.url)
    names = ["mail", "thumbs", "reports", "hooks"]
    follower = Follower(redis_cluster.url)
    follower.start()
    try:
        for name in names:
            mq.enqueue(name, "a", job_id=f"{name}-0")
        sub = follower.subscribe(names)
        await until(sub, lambda u: set(names) <= set(u.stats), timeout=5.0)
        for name in names:
            mq.enqueue(name, "a", job_id=f"{name}-1")

        seen: set[str] = set()
        while seen != set(names):
            update = await until(sub, lambda u: any(u.job_changed(n, f"{n}-1") for n in names), timeout=5.0)
            seen |= {n for n in names if update.job_changed(n, f"{n}-1")}

        assert len({follower.locations[n].node for n in names}) > 1
    finally:
        await follower.stop()
        mq.close()


async def test_the_chart_of_a_queue_new_to_the_follower_is_filled_from_its_recent_events(
        redis_url: str, mq: EchoMQ) -> None:
    mq.enqueue_many("history", ["x"] * 30)
    for job in mq.claim("history", count=10):
        mq.complete("history", job.id, job.token)
    follower = Follower(redis_url)
    follower.start()
    try:
        sub = follower.subscribe(["history"])
        await until(sub, lambda u: "history" in u.stats)
        await wait_until_async(lambda: sum(follower.throughput.series("history", follower.now_ms)) >= 50, 3,
                               "the chart to count the 50 moves")

        # 30 enqueues, 10 claims, 10 completes: every one of them, none twice.
        assert sum(follower.throughput.series("history", follower.now_ms)) == 50
    finally:
        await follower.stop()


async def test_a_capped_history_leaves_out_the_bucket_it_may_have_cut(redis_url: str, mq: EchoMQ,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import queues.follower as follower_module

    monkeypatch.setattr(follower_module, "SEED_EVENTS", 20)
    mq.enqueue_many("history", ["x"] * 50)  # 50 events, all in one 5-second bucket (or two)
    follower = Follower(redis_url)
    follower.start()
    try:
        sub = follower.subscribe(["history"])
        await until(sub, lambda u: "history" in u.stats)
        await asyncio.sleep(0.3)
        shown = follower.throughput.series("history", follower.now_ms)
        truth: dict[int, int] = {}
        for event in mq.events("history", count=100):
            bucket = follower.throughput.bucket_of(event.ts_ms)
            truth[bucket] = truth.get(bucket, 0) + 1
        last = follower.throughput.bucket_of(follower.now_ms)
        first = last - follower.throughput.buckets + 1

        # A bucket is shown in full or not at all: the one the cap cut is left out.
        assert all(n in (0, truth.get(first + i, 0)) for i, n in enumerate(shown))
        assert sum(shown) < 20
    finally:
        await follower.stop()


@pytest.fixture
async def follower_without_safety_net(redis_url: str) -> AsyncIterator[Follower]:
    """A follower whose safety-net poll never comes within a test: what it learns, it learned otherwise."""
    follower = Follower(redis_url, poll_interval_s=3600)
    follower.start()
    yield follower
    await follower.stop()


async def test_a_delayed_job_falling_due_is_read_at_its_due_time(follower_without_safety_net: Follower,
                                                                  mq: EchoMQ) -> None:
    follower = follower_without_safety_net
    # Long enough that the first read comes before it on a loaded machine (load 10).
    mq.enqueue("mail", "later", delay_ms=2000)
    sub = follower.subscribe(["mail"])
    first = await until(sub, lambda u: "mail" in u.stats)
    assert (first.stats["mail"].due, first.stats["mail"].next_due_ms is not None) == (0, True)

    # No event is written when a job falls due: only the known due time wakes the follower.
    update = await until(sub, lambda u: "mail" in u.stats and u.stats["mail"].due == 1, timeout=10.0)

    assert update.stats["mail"].next_due_ms is None


async def test_a_lease_lapsing_is_read_at_its_deadline(follower_without_safety_net: Follower, mq: EchoMQ) -> None:
    follower = follower_without_safety_net
    mq.enqueue("mail", "a")
    # Long enough that the first read comes before it lapses on a loaded machine (load 10).
    claimed = mq.claim("mail", lease_ms=2000)[0]
    sub = follower.subscribe(["mail"])
    first = await until(sub, lambda u: "mail" in u.stats)
    assert first.stats["mail"].next_deadline_ms == claimed.lease_deadline_ms

    update = await until(sub, lambda u: "mail" in u.stats and u.stats["mail"].lapsed == 1, timeout=10.0)

    assert update.stats["mail"].next_deadline_ms is None


async def test_it_reads_only_the_queues_its_pages_watch_and_follows_a_page_that_pages_on(
        follower_without_safety_net: Follower, mq: EchoMQ) -> None:
    follower = follower_without_safety_net
    for name in ("a", "b", "c", "d"):
        mq.enqueue(name, "x")
    sub = follower.subscribe(["a", "b"])
    await until(sub, lambda u: {"a", "b"} <= set(u.stats))
    assert set(follower.stats) == {"a", "b"}

    sub.watch(["c", "d"])
    await until(sub, lambda u: {"c", "d"} <= set(u.stats))
    mq.enqueue("d", "y")
    await until(sub, lambda u: "d" in u.stats and u.stats["d"].counts["pending"] == 2)

    assert set(follower.stats) == {"a", "b", "c", "d"}
    assert follower.followed() == ["c", "d"]


def follower_loops() -> list[asyncio.Task[Any]]:
    return [task for task in asyncio.all_tasks() if getattr(task.get_coro(), "__qualname__", "").startswith("Follower._")]


async def test_no_loop_outlives_stop_even_when_a_redis_call_lost_its_cancel(redis_url: str, mq: EchoMQ,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    mq.enqueue("mail", "a")
    follower = Follower(redis_url)
    follower.start()
    try:
        await until(follower.subscribe(["mail"]), lambda u: "mail" in u.stats, timeout=30)
        assert follower._reader is not None
        read, reading = follower._reader.xread, asyncio.Event()
        lost: list[bool] = []

        async def xread_that_loses_a_cancel(*args: Any, **kwargs: Any) -> Any:
            reading.set()
            try:
                return await read(*args, **kwargs)
            except asyncio.CancelledError:
                if lost:
                    raise
                # Dropped, as Python 3.11's asyncio.wait_for drops a cancel that arrives as the write it awaits
                # finishes (redis-py's asyncio client writes every command under it).
                lost.append(True)
                return []

        monkeypatch.setattr(follower._reader, "xread", xread_that_loses_a_cancel)
        await asyncio.wait_for(reading.wait(), 30)
    finally:
        await asyncio.wait_for(follower.stop(), 30)

    assert lost
    await wait_until_async(lambda: not follower_loops(), 10, "the follower's loops to end")
