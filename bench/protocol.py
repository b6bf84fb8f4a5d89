"""EchoMQ's side of each throughput figure (enqueue, processing through the Worker), and page reads."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

from queues import AsyncEchoMQ, ClaimedJob, EchoMQ
from queues.keys import QueueKeys
from queues.worker import Worker, event_loop_factory
from tests.support.redis_servers import RedisServer

from .common import Report, median, percentile, rate, timed

PAYLOAD = '{"to": "user@example.com", "n": 1}'
FILL_SCRIPT = (Path(__file__).with_name("fill.lua")).read_text()
FILL_CHUNK = 20_000


def enqueue_one_by_one(url: str, jobs: int) -> float:
    mq = EchoMQ.from_url(url, actor="bench")
    try:
        mq.enqueue("bench-warm", PAYLOAD)  # the registry entry and the script cache, outside the timing
        seconds, _ = timed(lambda: [mq.enqueue("bench-enqueue-one", PAYLOAD) for _ in range(jobs)])
    finally:
        mq.close()
    return rate(jobs, seconds)


def enqueue_one_by_one_async(url: str, jobs: int) -> float:
    """As enqueue_one_by_one, through the async client: each enqueue awaited before the next is sent."""
    async def run() -> float:
        mq = AsyncEchoMQ.from_url(url, actor="bench")
        try:
            await mq.enqueue("bench-warm", PAYLOAD)
            start = time.perf_counter()
            for _ in range(jobs):
                await mq.enqueue("bench-enqueue-one-async", PAYLOAD)
            return time.perf_counter() - start
        finally:
            await mq.close()

    # The loop Worker.run() uses (uvloop when installed).
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        return rate(jobs, runner.run(run()))


def enqueue_in_bulk(url: str, jobs: int) -> float:
    mq = EchoMQ.from_url(url, actor="bench")
    try:
        mq.enqueue("bench-warm", PAYLOAD)
        payloads = [PAYLOAD] * jobs
        seconds, _ = timed(lambda: mq.enqueue_many("bench-enqueue-bulk", payloads))
    finally:
        mq.close()
    return rate(jobs, seconds)


async def _noop_async(job: ClaimedJob) -> None:
    return None


def _noop_sync(job: ClaimedJob) -> None:
    return None


async def _drain(url: str, queue: str, jobs: int, concurrency: int, handler: Any, prefetch: int = 0) -> float:
    worker = Worker(queue=queue, handler=handler, concurrency=concurrency, prefetch=prefetch, url=url)
    stop = asyncio.Event()
    start = time.perf_counter()
    serving = asyncio.create_task(worker.serve(stop))
    while worker.stats.completed < jobs:
        if serving.done():
            raise RuntimeError(f"the worker stopped early: {serving.exception()}")
        await asyncio.sleep(0.005)
    seconds = time.perf_counter() - start
    stop.set()
    stats = await serving
    if (stats.completed, stats.failed, stats.lost) != (jobs, 0, 0):
        raise RuntimeError(f"processing went wrong: {stats}")
    return seconds


def process(url: str, jobs: int, *, concurrency: int, kind: str, prefetch: int = 0) -> float:
    """Jobs/s of the Worker draining ``jobs`` pending jobs with a no-op handler (enqueued outside the timing)."""
    mq = EchoMQ.from_url(url, actor="bench")
    queue = f"bench-process-{kind}-{concurrency}-{prefetch}"
    try:
        mq.enqueue_many(queue, [PAYLOAD] * jobs)
        handler = _noop_async if kind == "async" else _noop_sync
        # The loop Worker.run() uses (uvloop when installed).
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            seconds = runner.run(_drain(url, queue, jobs, concurrency, handler, prefetch))
        if mq.stats(queue).counts["done"] != jobs:
            raise RuntimeError(f"{queue}: not every job is done")
    finally:
        mq.close()
    return rate(jobs, seconds)


def fill(mq: EchoMQ, queue: str, upto: int, have: int) -> None:
    """Writes pending jobs up to ``upto`` with bench/fill.lua, then checks they look as enqueue writes them."""
    keys = QueueKeys(queue).script_keys(None)
    while have < upto:
        count = min(FILL_CHUNK, upto - have)
        mq.redis.eval(FILL_SCRIPT, len(keys), *keys, have, count, PAYLOAD, mq.actor)
        have += count
    probe = mq.enqueue(queue, PAYLOAD, job_id="probe-written-by-enqueue")
    written_by_enqueue = set(mq.job(queue, probe).fields)
    mq.delete(queue, probe, expect_state="pending")
    if set(mq.job(queue, "fill0000000000").fields) != written_by_enqueue:
        raise RuntimeError("bench/fill.lua no longer writes what enqueue writes")


def measure_pages(mq: EchoMQ, report: Report, *, sizes: list[int], samples: int = 300) -> None:
    queue = "bench-pages"
    have = 0
    for size in sizes:
        fill(mq, queue, size, have)
        have = size
        assert mq.stats(queue).counts["pending"] == size
        rng = random.Random(size)
        for where, offsets in (("first page", [0] * samples),
                               ("page at a random offset", [rng.randrange(size - 50) for _ in range(samples)])):
            latencies = []
            for offset in offsets:
                start = time.perf_counter()
                page = mq.page(queue, "pending", offset=offset, limit=50)
                latencies.append((time.perf_counter() - start) * 1000)
                assert len(page.rows) == 50
            report.add("echomq", f"page of 50 pending jobs of {size:,}, {where}: median", median(latencies), "ms")
            report.add("echomq", f"page of 50 pending jobs of {size:,}, {where}: p95", percentile(latencies, 0.95),
                       "ms")


def run_pages(server: RedisServer, report: Report, *, page_sizes: list[int]) -> None:
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        server.client().flushall()
        measure_pages(mq, report, sizes=page_sizes)
        server.client().flushall()
    finally:
        mq.close()
