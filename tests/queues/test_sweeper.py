from __future__ import annotations

import time

import pytest

from queues import EchoMQ, moves
from queues.keys import LEASE_INDEX, SWEEPER_LOCK
from queues.locks import Redlock, lock_clients
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
        lock = sweeper_lock(holder="site-1")
        assert isinstance(lock, Redlock) and lock.quorum == 2
        sweeper = Sweeper(mq, lock, interval_s=1)

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


def _script_calls(mq: EchoMQ) -> int:
    stats = mq.redis.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("evalsha", "eval"))


def test_a_sweep_among_2000_queues_looks_only_at_the_queues_whose_leases_lapsed(mq: EchoMQ) -> None:
    names = [f"tenant-{n:04d}" for n in range(2000)]
    for start in range(0, len(names), 500):
        mq.run_many([moves.enqueue(name, "x", actor="test") for name in names[start:start + 500]])
    for name in names[:3]:
        mq.claim(name, lease_ms=600_000)
    for name in names[-5:]:
        _lapsed_job(mq, name)
    sweep(mq)  # the scripts are cached from here on: every call below is one EVALSHA
    lapsed = [_lapsed_job(mq, name) for name in names[-5:]]
    mq.redis.config_resetstat()

    report = sweep(mq)

    # One take (5 queues due), one recover_expired per lapsed queue, one settle, one take (none due).
    assert _script_calls(mq) == 1 + 5 + 1 + 1
    assert (report.queues, report.recovered, report.errors, report.finished) == (5, 5, {}, True)
    assert [mq.job(name, job_id).state for name, job_id in zip(names[-5:], lapsed)] == ["pending"] * 5
    assert all(mq.stats(name).counts["active"] == 1 for name in names[:3])
    assert len(mq.queues()) == 2000

    mq.redis.config_resetstat()
    assert sweep(mq).queues == 0
    assert _script_calls(mq) == 1, "a round with nothing due costs one script call"


def test_a_queue_with_more_lapsed_leases_than_one_call_recovers_is_swept_to_the_end(mq: EchoMQ) -> None:
    mq.enqueue_many("bulk", ["x"] * 1200)
    mq.claim("bulk", lease_ms=1, count=1000)
    mq.claim("bulk", lease_ms=1, count=200)
    time.sleep(0.01)

    report = sweep(mq, limit=500)

    assert (report.recovered, report.steps) == (1200, 3)
    assert mq.stats("bulk").counts == {"pending": 1200, "active": 0, "done": 0, "failed": 0}
    assert mq.redis.zscore(LEASE_INDEX, "bulk") is None


def test_the_sweeper_keeps_its_lock_through_a_round_longer_than_the_lock_lives(mq: EchoMQ, redis_url: str) -> None:
    for name in ("a", "b", "c"):
        _lapsed_job(mq, name)
    rival = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], holder="rival"), interval_s=1)
    rival_rounds: list[object] = []

    def held_step() -> None:
        # Each step is held until the lock has less than half of its life left: two such steps outlast it.
        if len(rival_rounds) < 2:
            wait_until(lambda: 0 < mq.redis.pttl(SWEEPER_LOCK) < 1500, 20, "the lock to run half down")
        rival_rounds.append(rival.run_once())

    sweeper = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], interval_s=1, holder="slow"), interval_s=1,
                      queues_per_step=1, round_budget_s=60, discovery_scans_per_s=0, on_step=held_step)
    assert sweeper.lock.ttl_ms == 3000
    assert sweeper.holds_lock()
    assert isinstance(sweeper.lock, Redlock) and sweeper.lock.lease is not None
    token = sweeper.lock.lease.token

    report = sweeper.run_once()

    assert report is not None and (report.steps, report.recovered, report.finished) == (3, 3, True)
    assert rival_rounds == [None, None, None]
    assert mq.redis.get(SWEEPER_LOCK).decode() == token  # type: ignore[union-attr]
    assert rival.run_once() is None


def test_a_round_stops_at_its_budget_and_the_next_round_goes_on(mq: EchoMQ, redis_url: str) -> None:
    for name in ("a", "b", "c"):
        _lapsed_job(mq, name)
    sweeper = Sweeper(mq, sweeper_lock(url=redis_url, lock_urls=[], interval_s=1, holder="s"), interval_s=1,
                      queues_per_step=1, round_budget_s=0, discovery_scans_per_s=0)

    first = sweeper.run_once()
    second = sweeper.run_once()

    assert first is not None and (first.steps, first.recovered, first.finished) == (1, 1, False)
    assert second is not None and second.recovered == 1
    assert sum(mq.stats(name).counts["pending"] for name in ("a", "b", "c")) == 2
