from __future__ import annotations

import time

import pytest

from queues import EchoMQ
from queues.keys import SWEEPER_LOCK
from queues.locks import lock_clients
from queues.sweeper import Sweeper, start_sweeper, sweep, sweeper_holder, sweeper_lock
from tests.support.redis_servers import RedisServer
from tests.support.waiting import wait_until


def _lapsed_job(mq: EchoMQ, queue: str) -> str:
    job_id = mq.enqueue(queue, "x")
    mq.claim(queue, lease_ms=1)
    time.sleep(0.01)
    return job_id


def test_sweep_recovers_lapsed_leases_in_every_registered_queue(mq: EchoMQ) -> None:
    first, second = _lapsed_job(mq, "mail"), _lapsed_job(mq, "sms")
    mq.enqueue("sms", "held")
    mq.claim("sms", lease_ms=60_000)

    report = sweep(mq)

    assert (report.queues, report.recovered, report.errors) == (2, 2, {})
    assert mq.job("mail", first).state == "pending"
    assert mq.job("sms", second).state == "pending"
    assert mq.stats("sms").counts["active"] == 1


def test_only_the_sweeper_holding_the_lease_sweeps(mq: EchoMQ, redis_url: str) -> None:
    a = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], interval_s=1, holder="console-a"), interval_s=1)
    b = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], holder="console-b"), interval_s=1)
    _lapsed_job(mq, "mail")

    assert a.run_once() is not None
    assert b.run_once() is None
    assert a.run_once() is not None

    holder = sweeper_holder(b.lock)
    assert holder is not None and holder.holder == "console-a" and holder.of == 1
    assert 1.0 < holder.until - time.time() <= 3.0


def test_another_sweeper_takes_over_when_the_holder_stops(mq: EchoMQ, redis_url: str) -> None:
    a = start_sweeper(url=redis_url, lock_urls=[], interval_s=0.05, holder="console-a")
    b = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], holder="console-b"), interval_s=0.05)
    wait_until(lambda: getattr(sweeper_holder(b.lock), "holder", None) == "console-a", 20, "console-a to take the lock")
    assert b.run_once() is None

    a.stop()
    job_id = _lapsed_job(mq, "mail")

    assert b.run_once() is not None
    assert mq.job("mail", job_id).state == "pending"
    assert sweeper_holder(b.lock).holder == "console-b"  # type: ignore[union-attr]


def test_a_sweeper_whose_lease_lapsed_gives_way_to_the_new_holder(mq: EchoMQ, redis_url: str) -> None:
    a = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], interval_s=0.0, holder="a"), interval_s=0)
    b = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], interval_s=0.0, holder="b"), interval_s=0)
    assert a.lock.ttl_ms == 1000
    assert a.run_once() is not None
    mq.redis.pexpire(SWEEPER_LOCK, 1)
    time.sleep(0.01)

    assert b.run_once() is not None
    assert a.run_once() is None
    assert sweeper_holder(a.lock).holder == "b"  # type: ignore[union-attr]


def test_several_lock_urls_make_the_sweeper_lock_a_redlock(mq: EchoMQ, monkeypatch: pytest.MonkeyPatch) -> None:
    servers = [RedisServer().start() for _ in range(3)]
    try:
        monkeypatch.setenv("EMQ_LOCK_URLS", ",".join(s.url for s in servers))
        sweeper = Sweeper(mq, sweeper_lock(holder="site-1"), interval_s=1)
        assert sweeper.lock.quorum == 2

        servers[0].kill()
        assert sweeper.run_once() is not None

        holder = sweeper.holder()
        assert holder is not None and (holder.holder, holder.nodes, holder.of, holder.unreachable) == ("site-1", 2, 3, 1)
        assert all(c.get(SWEEPER_LOCK) for c in lock_clients([s.url for s in servers[1:]]))
    finally:
        for server in servers:
            server.cleanup()


async def test_the_sweeper_runs_as_an_asyncio_task(mq: EchoMQ, redis_url: str) -> None:
    import asyncio

    job_id = _lapsed_job(mq, "mail")
    sweeper = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], holder="task"), interval_s=0.05)

    task = asyncio.create_task(sweeper.run_async())
    deadline = asyncio.get_running_loop().time() + 20
    while sweeper.last is None:
        assert asyncio.get_running_loop().time() < deadline, "the sweeper task never swept"
        await asyncio.sleep(0.05)
    sweeper.stop()
    await asyncio.wait_for(task, 2)

    assert mq.job("mail", job_id).state == "pending"
    assert sweeper.last is not None and sweeper.last.queues == 1
    assert sweeper_holder(sweeper.lock) is None
