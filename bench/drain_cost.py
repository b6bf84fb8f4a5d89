"""``python -m bench.drain_cost``: one Worker draining pending jobs, and what each job cost this process and Redis.

On a private redis-server, ``--jobs`` no-op jobs are enqueued in bulk, then one ``Worker`` (``--concurrency``
handlers, async or sync) drains them, ``--rounds`` times. Per job: the wall (first claim to last completion as
the worker's stats see them), this process's CPU (``time.process_time``), redis-server's CPU
(``used_cpu_user + used_cpu_sys``), and each command's calls and time from ``INFO commandstats`` (reset before
the drain; a script's commands are counted in ``evalsha`` and again in their own lines). It shows where a drain is
bound: by this process, by Redis, or by waiting.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

from queues import ClaimedJob, EchoMQ
from queues.worker import Worker, event_loop_factory

from .common import start_server

PAYLOAD = '{"to": "user@example.com", "n": 1}'


async def _noop_async(job: ClaimedJob) -> None:
    return None


def _noop_sync(job: ClaimedJob) -> None:
    return None


async def _drain(url: str, queue: str, jobs: int, concurrency: int, kind: str) -> tuple[float, float]:
    worker = Worker(queue=queue, handler=_noop_async if kind == "async" else _noop_sync, concurrency=concurrency,
                    url=url)
    stop = asyncio.Event()
    started, cpu = time.perf_counter(), time.process_time()
    serving = asyncio.create_task(worker.serve(stop))
    while worker.stats.completed < jobs:
        if serving.done():
            raise RuntimeError(f"the worker stopped early: {serving.exception()}")
        await asyncio.sleep(0.005)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    stop.set()
    await serving
    return wall, cpu


def one_round(server: Any, jobs: int, concurrency: int, kind: str) -> dict[str, Any]:
    client = server.client()
    client.flushall()
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        for start in range(0, jobs, 1000):
            mq.enqueue_many("bench-drain", [PAYLOAD] * min(1000, jobs - start))
    finally:
        mq.close()
    client.config_resetstat()
    before = client.info("cpu")
    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        wall, cpu = runner.run(_drain(server.url, "bench-drain", jobs, concurrency, kind))
    after = client.info("cpu")
    redis_cpu = sum(after[k] - before[k] for k in ("used_cpu_user", "used_cpu_sys"))
    stats = {name.removeprefix("cmdstat_"): (v["calls"] / jobs, v["usec"] / jobs)
             for name, v in client.info("commandstats").items()}
    return {"rate": jobs / wall, "cpu_us": cpu / jobs * 1e6, "redis_cpu_us": redis_cpu / jobs * 1e6,
            "commands": stats}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.drain_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--kind", choices=("async", "sync"), default="async")
    parser.add_argument("--top", type=int, default=8, help="commands shown, by time per job")
    args = parser.parse_args()
    server = start_server()
    try:
        rounds = []
        for n in range(args.rounds):
            r = one_round(server, args.jobs, args.concurrency, args.kind)
            rounds.append(r)
            print(f"round {n + 1}: {r['rate']:,.0f} jobs/s, this process {r['cpu_us']:.1f} us/job, redis-server "
                  f"{r['redis_cpu_us']:.1f} us/job, evalsha {r['commands'].get('evalsha', (0, 0))[1]:.1f} us/job "
                  f"in {r['commands'].get('evalsha', (0, 0))[0]:.3f} calls/job", flush=True)
        middle = sorted(rounds, key=lambda r: r["rate"])[len(rounds) // 2]
        print(f"median round: {middle['rate']:,.0f} jobs/s (rounds "
              + " / ".join(f"{r['rate']:,.0f}" for r in rounds)
              + f"); redis-server CPU median {statistics.median(r['redis_cpu_us'] for r in rounds):.1f} us/job")
        for name, (calls, usec) in sorted(middle["commands"].items(), key=lambda kv: -kv[1][1])[:args.top]:
            print(f"  {name:16s} {calls:7.3f} calls/job  {usec:6.2f} us/job")
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
