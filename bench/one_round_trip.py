"""``python -m bench.one_round_trip``: what one script per job saves, beside two scripts, interleaved.

Two figures, each in rounds that alternate its two sides on one private redis-server:

* Redis time per job (``INFO commandstats``): a loop that reports a job and claims the next with
  ``finish_claim``, beside the same loop with ``complete`` then ``claim``.
* The Worker with one no-op async handler: the one-task engine (what ``Worker`` picks) beside the
  pipelined exchange it used before.

``--realtime`` runs redis-server at SCHED_FIFO priority (``chrt``, root only), which holds its per-call times
still on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
from collections.abc import Callable
from typing import Any

from queues import EchoMQ, moves
from queues.moves import Report
from queues.worker import Worker
from queues.worker.pipelined import PipelinedEngine

from . import protocol
from .common import start_server


def _redis_us_per_job(mq: EchoMQ, queue: str, jobs: int, joined: bool) -> float:
    client: Any = mq.redis
    mq.enqueue_many(queue, ["x"] * (jobs + 1))
    [held] = mq.claim(queue)
    client.config_resetstat()
    for _ in range(jobs):
        if joined:
            result = mq.run(moves.finish_claim(queue, [Report(held.id, held.token)], actor="bench"))
            assert isinstance(result.claimed, list)
            [held] = result.claimed
        else:
            mq.run(moves.complete(queue, held.id, held.token, actor="bench"))
            [held] = mq.run(moves.claim(queue, worker="bench"))
    stats = client.info("commandstats")["cmdstat_evalsha"]
    return float(stats["usec"]) / jobs


def _pipelined(worker: Worker, client: Any) -> PipelinedEngine:
    return PipelinedEngine(worker.settings, worker.ledger, worker.handler, client)


def _async_one_handler(url: str, jobs: int, engine: Callable[[Worker, Any], Any] | None) -> float:
    original = Worker._make_engine
    if engine is not None:
        Worker._make_engine = engine  # type: ignore[method-assign,assignment]
    try:
        return protocol.process(url, jobs, concurrency=1, kind="async")
    finally:
        Worker._make_engine = original  # type: ignore[method-assign]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.one_round_trip", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=3000, help="jobs per round of the Redis-time loop")
    parser.add_argument("--worker-jobs", type=int, default=5000, help="jobs per round of the Worker figure")
    parser.add_argument("--realtime", action="store_true", help="redis-server at SCHED_FIFO 50 (root only)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"# load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    server = start_server()
    try:
        if args.realtime:
            assert server.process is not None
            subprocess.run(["chrt", "-f", "-p", "50", str(server.process.pid)], check=True)
        mq = EchoMQ.from_url(server.url, actor="bench")
        times: dict[str, list[float]] = {"finish_claim": [], "complete then claim": []}
        rates: dict[str, list[float]] = {"one-task engine": [], "pipelined engine": []}
        for round_no in range(args.rounds):
            for side, joined in (("finish_claim", True), ("complete then claim", False)):
                server.client().flushall()
                times[side].append(_redis_us_per_job(mq, f"bench-{round_no}", args.jobs, joined))
                print(f"Redis time per job, {side}, round {round_no + 1}: {times[side][-1]:.1f} us", flush=True)
            for side, engine in (("one-task engine", None), ("pipelined engine", _pipelined)):
                server.client().flushall()
                rates[side].append(_async_one_handler(server.url, args.worker_jobs, engine))
                print(f"Worker, 1 async handler, {side}, round {round_no + 1}: {rates[side][-1]:,.0f} jobs/s",
                      flush=True)
        mq.close()
        for side, values in times.items():
            print(f"Redis time per job, {side}: median {statistics.median(values):.1f} us", flush=True)
        for side, values in rates.items():
            print(f"Worker, 1 async handler, {side}: median {statistics.median(values):,.0f} jobs/s", flush=True)
        ratios = [a / b for a, b in zip(rates["one-task engine"], rates["pipelined engine"])]
        print("one-task / pipelined, per round: " + ", ".join(f"{r:.2f}" for r in ratios)
              + f"; median {statistics.median(ratios):.2f}", flush=True)
    finally:
        server.cleanup()
    end = os.getloadavg()
    print(f"# load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
