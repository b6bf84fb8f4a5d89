"""A lone handler quicker than a round trip is claimed several jobs at once (queues.worker.depth): the rule that
sets how many, and, with a depth set by the test, that a deeper claim still runs each job once, holds no more
leases than it says, and hands back at once on a stop every job it has not started."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from queues import ClaimedJob, EchoMQ
from queues.worker import Worker
from queues.worker.depth import FAST_HANDLER_S, MAX_DEPTH, ClaimDepth


def test_the_depth_is_one_until_both_a_handler_and_a_round_trip_were_timed() -> None:
    depth = ClaimDepth()
    assert depth.wanted() == 1
    depth.handler_took(0.00001)
    assert depth.wanted() == 1
    depth.trip_took(0.0003)
    assert depth.wanted() == MAX_DEPTH


def test_a_handler_quicker_than_a_round_trip_gets_about_a_round_trip_of_jobs() -> None:
    depth = ClaimDepth()
    depth.trip_took(0.0004)
    depth.handler_took(0.0001)
    assert depth.wanted() == 5  # itself and the four it runs while one round trip travels


@pytest.mark.parametrize("handler_s, trip_s", [(FAST_HANDLER_S, 0.5), (0.002, 0.003), (0.0003, 0.0002)])
def test_a_handler_not_quicker_than_both_the_threshold_and_a_round_trip_gets_one(handler_s: float,
                                                                                  trip_s: float) -> None:
    depth = ClaimDepth()
    depth.trip_took(trip_s)
    depth.handler_took(handler_s)
    assert depth.wanted() == 1


def test_one_slow_job_brings_the_depth_back_to_one_at_once_and_it_comes_back_slowly() -> None:
    depth = ClaimDepth()
    depth.trip_took(0.0005)
    depth.handler_took(0.00005)
    assert depth.wanted() == MAX_DEPTH
    depth.handler_took(0.2)
    assert depth.wanted() == 1
    quick = 0
    while depth.wanted() == 1:
        depth.handler_took(0.00005)
        quick += 1
    # 0.2 s forgotten at 0.9 a job: about 50 quick jobs before the estimate is under a millisecond again.
    assert 40 < quick < 70


def _deep(monkeypatch: pytest.MonkeyPatch, wanted: int) -> None:
    monkeypatch.setattr(ClaimDepth, "wanted", lambda self: wanted)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_deeper_claim_runs_every_job_once_and_holds_no_more_leases_than_it_says(
        mq: EchoMQ, redis_url: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _deep(monkeypatch, 4)
    ids = mq.enqueue_many("deep", [f"job {n}" for n in range(60)])
    ran: list[str] = []
    leases: list[int] = []

    def handle(job: ClaimedJob) -> None:
        ran.append(job.id)
        leases.append(mq.stats("deep").counts["active"])

    async def handle_async(job: ClaimedJob) -> None:
        handle(job)

    worker = Worker(queue="deep", handler=handle if kind == "sync" else handle_async, url=redis_url)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    deadline = time.monotonic() + 30
    while mq.stats("deep").counts["done"] < len(ids):
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    stop.set()
    stats = await asyncio.wait_for(serving, 15)

    assert sorted(ran) == sorted(ids)
    assert (stats.claimed, stats.completed) == (60, 60)
    # Sync: a claim of four, run one after another. Async: the running job and four claimed ahead of it.
    # More than the one job (sync) or two (async) a lone handler holds at depth one, never more than said.
    most = 4 if kind == "sync" else 5
    assert 2 < max(leases) <= most


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_stop_hands_back_every_job_of_a_deeper_claim_not_started_and_runs_none_of_them(
        mq: EchoMQ, redis_url: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _deep(monkeypatch, 4)
    ids = [mq.enqueue("deep", "x", job_id=f"{n}-job") for n in range(8)]
    started, go = threading.Event(), threading.Event()
    ran: list[str] = []

    def handle(job: ClaimedJob) -> None:
        ran.append(job.id)
        started.set()
        go.wait(30)

    async def handle_async(job: ClaimedJob) -> None:
        ran.append(job.id)
        started.set()
        await asyncio.to_thread(go.wait, 30)

    held = 4 if kind == "sync" else 5
    worker = Worker(queue="deep", handler=handle if kind == "sync" else handle_async, url=redis_url,
                    grace_ms=60_000)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.to_thread(started.wait, 15)
    deadline = time.monotonic() + 15
    # The first job runs, held; the rest of its claim (sync) or the jobs claimed ahead (async) wait.
    while mq.stats("deep").counts["active"] < held:
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    stop.set()
    while not worker.ledger.stopping.is_set():
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.01)
    if kind == "async":
        # Handed back at once, while the handler still holds its job.
        while mq.stats("deep").counts["active"] != 1:
            assert time.monotonic() < deadline and not serving.done()
            await asyncio.sleep(0.02)
    go.set()
    stats = await asyncio.wait_for(serving, 30)

    assert ran == [ids[0]]
    assert mq.stats("deep").counts == {"pending": 7, "active": 0, "done": 1, "failed": 0}
    released = sorted(e.job_id for e in mq.events("deep", count=100) if e.move == "release")
    assert released == sorted(ids[1:held])
    assert (stats.claimed, stats.completed) == (held, 1)


@pytest.mark.parametrize(("wanted", "most"), [(1, 4), (8, 8)])
async def test_quick_handlers_without_prefetch_hold_as_many_jobs_again_as_there_are_handlers_and_no_more(
        mq: EchoMQ, redis_url: str, monkeypatch: pytest.MonkeyPatch, wanted: int, most: int) -> None:
    # Four held handlers: the jobs the worker holds beyond them wait, claimed, until a handler frees.
    _deep(monkeypatch, wanted)
    ids = mq.enqueue_many("deep", [f"job {n}" for n in range(40)])
    go = asyncio.Event()
    ran: list[str] = []

    async def handle(job: ClaimedJob) -> None:
        ran.append(job.id)
        await go.wait()

    worker = Worker(queue="deep", handler=handle, concurrency=4, url=redis_url)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    deadline = time.monotonic() + 30
    while len(ran) < 4 or mq.stats("deep").counts["active"] < most:
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)  # time for any claim beyond the slots to be made: none is
    held = mq.stats("deep").counts["active"]
    go.set()
    while mq.stats("deep").counts["done"] < len(ids):
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    stop.set()
    stats = await asyncio.wait_for(serving, 15)

    assert held == most and len(ran) == 40 and sorted(ran) == sorted(ids)
    assert (stats.claimed, stats.completed) == (40, 40)


def test_the_pipelined_engines_slots_follow_the_depth_and_a_prefetch_is_kept_as_set() -> None:
    from queues.worker.ledger import Ledger
    from queues.worker.pipelined import PipelinedEngine
    from queues.worker.settings import WorkerSettings

    def engine(prefetch: int) -> PipelinedEngine:
        settings = WorkerSettings(queue="q", actor="a", concurrency=16, prefetch=prefetch, lease_ms=30_000,
                                  backoff_ms=1000, batch=100, grace_ms=1000, poll_ms=100, started_ms=0)
        ledger = Ledger(queue="q", actor="a", lease_ms=30_000, backoff_ms=1000, poll_ms=100)
        return PipelinedEngine(settings, ledger, lambda job: None, None)  # type: ignore[arg-type]

    plain, prefetched = engine(0), engine(5)
    assert (plain.slots(), prefetched.slots()) == (16, 21)
    for e in (plain, prefetched):
        e.depth.trip_took(0.0004)
        e.depth.handler_took(0.00005)
    assert (plain.slots(), prefetched.slots()) == (32, 21)
    plain.depth.handler_took(0.05)  # one slow job
    assert plain.slots() == 16
    # Holding 32 with 16 slots now: the rounds claim nothing (not a negative count) until it is back under 16.
    assert [plain.claim_size(free, 16) for free in (-16, -1, 0, 3, 40)] == [0, 0, 0, 3, 8]


async def test_a_stop_hands_back_at_once_the_jobs_quick_handlers_held_beyond_themselves(
        mq: EchoMQ, redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _deep(monkeypatch, 8)
    mq.enqueue_many("deep", [f"job {n}" for n in range(40)])
    go = threading.Event()
    ran: list[str] = []

    async def handle(job: ClaimedJob) -> None:
        ran.append(job.id)
        await asyncio.to_thread(go.wait, 30)

    worker = Worker(queue="deep", handler=handle, concurrency=4, url=redis_url, grace_ms=60_000)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    deadline = time.monotonic() + 30
    while len(ran) < 4 or mq.stats("deep").counts["active"] < 8:
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    stop.set()
    # The four claimed beyond the handlers go back while the handlers still hold theirs.
    while mq.stats("deep").counts["active"] != 4:
        assert time.monotonic() < deadline and not serving.done()
        await asyncio.sleep(0.02)
    go.set()
    stats = await asyncio.wait_for(serving, 30)

    assert len(ran) == 4
    assert mq.stats("deep").counts == {"pending": 36, "active": 0, "done": 4, "failed": 0}
    assert (stats.claimed, stats.completed) == (8, 4)
    assert len([e for e in mq.events("deep", count=200) if e.move == "release"]) == 4
