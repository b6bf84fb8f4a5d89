"""``python -m bench.per_job_cost [--realtime]``: Redis time and memory per job, EchoMQ beside BullMQ in one run, and what
each feature of ``finish_claim`` costs.

Two parts, on private redis-servers:

* **The whole job**, in rounds alternating EchoMQ and BullMQ (``--rounds``, ``--jobs`` per round; each side on a
  fresh redis-server, after an unmeasured run of ``WARM_JOBS`` jobs, a flush and ``CONFIG RESETSTAT``). Each side
  enqueues its jobs in chunks of 1,000 (``enqueue_many`` / ``Queue.addBulk``, the same JSON payload of 29-33
  bytes), then one worker with one no-op async handler drains them (``Worker``, the default engine / BullMQ's
  ``Worker``, concurrency 1). Redis time per job is the sum of ``usec`` over every command in ``INFO
  commandstats`` (enqueue, claim, complete, heartbeat, registry, everything either client sent), divided by the
  jobs. Memory per job is ``used_memory`` after the enqueue (pending) and after the drain (done), less the
  server's before, less every stream's ``MEMORY USAGE`` (both keep an event stream trimmed to about 10,000
  entries), divided by the jobs; BullMQ's figures are read after its node process has exited, EchoMQ's after its
  worker has closed its connections.
* **finish_claim, feature by feature**: the loop of ``bench.one_round_trip`` (report a job and claim the next,
  one EVALSHA per job) on copies of ``finish_claim`` with one feature's function made to return at once:
  the event stream (``XADD``), the job's history entry, the per-move counter, the minute/hour series, the
  wait and run histograms; and all of them at once. A feature's share is (full - without it) / full of the
  EVALSHA time per job (``INFO commandstats``); the copies run interleaved, ``--rounds`` times.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from queues import EchoMQ, moves
from queues.moves import Report
from queues.scripts import script
from queues.worker import Worker, event_loop_factory
from tests.support.redis_servers import RedisServer

from . import peers
from .common import start_server

QUEUE = "bench-cost"
# The unmeasured jobs each side runs first on its fresh server.
WARM_JOBS = 200


def _payload(n: int) -> str:
    # What BullMQ stores for {to: 'user@example.com', n}: the same bytes on both sides.
    return json.dumps({"to": "user@example.com", "n": n}, separators=(",", ":"))


def _redis_usec(client: Any) -> float:
    return float(sum(stat["usec"] for stat in client.info("commandstats").values()))


def _streams_bytes(client: Any) -> int:
    total = 0
    for key in client.scan_iter(count=1000, _type="stream"):
        total += int(client.memory_usage(key, samples=0) or 0)
    return total


def _memory(client: Any) -> int:
    return int(client.info("memory")["used_memory"]) - _streams_bytes(client)


async def _drain(url: str, jobs: int) -> None:
    async def noop(job: Any) -> None:
        return None

    worker = Worker(queue=QUEUE, handler=noop, url=url)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    while worker.stats.completed < jobs:
        if serving.done():
            raise RuntimeError(f"the worker stopped early: {serving.exception()}")
        await asyncio.sleep(0.005)
    stop.set()
    await serving


def echomq_side(server: RedisServer, jobs: int) -> dict[str, float]:
    client = server.client()
    client.config_resetstat()
    before = _memory(client)
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        for start in range(0, jobs, 1000):
            mq.enqueue_many(QUEUE, [_payload(n) for n in range(start, min(jobs, start + 1000))])
        pending = _memory(client) - before
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            runner.run(_drain(server.url, jobs))
        if mq.stats(QUEUE).counts["done"] != jobs:
            raise RuntimeError("not every job is done")
    finally:
        mq.close()
    usec = _redis_usec(client)
    done = _memory(client) - before
    return {"redis_us": usec / jobs, "pending_b": pending / jobs, "done_b": done / jobs}


def _node(server: RedisServer, jobs: int, figure: str) -> None:
    measured = subprocess.run(["node", "bench.mjs", str(server.port), str(jobs), figure], cwd=peers.BULLMQ_DIR,
                              capture_output=True, text=True, timeout=1800)
    if measured.returncode != 0:
        raise RuntimeError(f"bench.mjs {figure} failed: {measured.stderr.strip()[-500:]}")


def bullmq_side(server: RedisServer, jobs: int) -> dict[str, float]:
    peers.bullmq_version()
    client = server.client()
    client.config_resetstat()
    before = _memory(client)
    _node(server, jobs, "fill")
    pending = _memory(client) - before
    _node(server, jobs, "drain")
    usec = _redis_usec(client)
    done = _memory(client) - before
    return {"redis_us": usec / jobs, "pending_b": pending / jobs, "done_b": done / jobs}


# finish_claim, feature by feature ------------------------------------------------------------------------------

# Each feature: the line that starts its code in the expanded script, and what it becomes (the same call, made
# to do nothing).
FEATURES: dict[str, list[tuple[str, str]]] = {
    "event stream (XADD)": [("redis.call('XADD', events_key,", "local _ = (function(...) end)(events_key,")],
    "history entry": [("local function append_history(job_key, ts, code, move, attempts, actor, note, fields)",
                       # The fields the move sets ride on the history's HSET: they are still written, alone.
                       "local function append_history(job_key, ts, code, move, attempts, actor, note, fields) "
                       "do if fields then redis.call('HSET', job_key, unpack(fields)) end return end")],
    "move counter": [("local function count_move(events_key, field)",
                      "local function count_move(events_key, field) do return end")],
    "minute/hour series": [("local function count_series(prefix, ts, field, n)",
                            "local function count_series(prefix, ts, field, n) do return end")],
    "wait and run histograms": [
        ("local function count_wait(prefix, ts, waited_ms)", "local function count_wait(prefix, ts, waited_ms) do return end"),
        ("local function count_run(events_key, job_key, move, ts, claimed)",
         "local function count_run(events_key, job_key, move, ts, claimed) do return end")],
}


def variants() -> dict[str, str]:
    full = script("finish_claim").source
    out = {"full finish_claim": full}
    every = full
    for feature, edits in FEATURES.items():
        source = full
        for old, new in edits:
            if source.count(old) != 1:
                raise RuntimeError(f"finish_claim no longer has exactly one {old!r}: update bench/per_job_cost.py")
            source = source.replace(old, new)
            every = every.replace(old, new)
        out[f"without the {feature}"] = source
    out["without any of them"] = every
    return out


def finish_claim_us(server: RedisServer, source: str, jobs: int) -> float:
    client = server.client()
    sha = client.script_load(source)
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        mq.enqueue_many(QUEUE, ["x"] * (jobs + 1))
        [held] = mq.claim(QUEUE)
        client.config_resetstat()
        for _ in range(jobs):
            call = moves.finish_claim(QUEUE, [Report(held.id, held.token)], actor="bench",
                                      claim_id=secrets.token_hex(8))
            result = call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args))
            assert isinstance(result.claimed, list)
            [held] = result.claimed
        return float(client.info("commandstats")["cmdstat_evalsha"]["usec"]) / jobs
    finally:
        mq.close()


def _start(*, realtime: bool) -> RedisServer:
    server = start_server()
    # Redis 7 keeps a latency histogram per command once called (tens of KB each), which RESETSTAT frees:
    # either would count in the jobs' memory.
    server.client().config_set("latency-tracking", "no")
    if realtime:
        # Holds Redis's per-call times still on a shared machine (a preempted script counts its wait).
        assert server.process is not None
        subprocess.run(["chrt", "-f", "-p", "50", str(server.process.pid)], check=True)
    return server


def _on_a_server_of_its_own(side: Callable[[RedisServer, int], dict[str, float]], jobs: int, *,
                            realtime: bool) -> dict[str, float]:
    """One side's figures on a fresh redis-server, after an unmeasured run of a few jobs and a flush.

    A fresh server: no side's figures depend on what the other left (its scripts, its commands' stats).
    The unmeasured run: a side's first jobs on a server also pay its scripts and tables, which are not
    per job.
    """
    server = _start(realtime=realtime)
    try:
        side(server, WARM_JOBS)
        server.client().flushall()
        time.sleep(0.2)  # the allocator settles before the memory is read
        return side(server, jobs)
    finally:
        server.cleanup()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.per_job_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs per round of the whole-job figures")
    parser.add_argument("--script-jobs", type=int, default=3000, help="jobs per round of each finish_claim copy")
    parser.add_argument("--realtime", action="store_true", help="redis-server at SCHED_FIFO 50 (root only)")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"# load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; bullmq {peers.bullmq_version()}", flush=True)
    sides: dict[str, list[dict[str, float]]] = {"echomq": [], "bullmq": []}
    for round_no in range(1, args.rounds + 1):
        for name, side in (("echomq", echomq_side), ("bullmq", bullmq_side)):
            got = _on_a_server_of_its_own(side, args.jobs, realtime=args.realtime)
            sides[name].append(got)
            print(f"{name}, round {round_no}: Redis {got['redis_us']:.1f} us/job, pending {got['pending_b']:.0f} "
                  f"B/job, done {got['done_b']:.0f} B/job", flush=True)
    for name, rounds in sides.items():
        print(f"{name}: median Redis {statistics.median(r['redis_us'] for r in rounds):.1f} us/job, pending "
              f"{statistics.median(r['pending_b'] for r in rounds):.0f} B/job, done "
              f"{statistics.median(r['done_b'] for r in rounds):.0f} B/job", flush=True)
    ratios = [a["redis_us"] / b["redis_us"] for a, b in zip(sides["echomq"], sides["bullmq"])]
    print("Redis time, EchoMQ / BullMQ per round: " + ", ".join(f"{r:.2f}" for r in ratios)
          + f"; median {statistics.median(ratios):.2f}", flush=True)

    server = _start(realtime=args.realtime)
    try:
        copies = variants()
        times: dict[str, list[float]] = {name: [] for name in copies}
        for _ in range(args.rounds):
            for name, source in copies.items():
                server.client().flushall()
                times[name].append(finish_claim_us(server, source, args.script_jobs))
        full = times["full finish_claim"]
        for name, values in times.items():
            shares = [(f - v) / f for f, v in zip(full, values)]
            print(f"finish_claim, {name}: median {statistics.median(values):.1f} us/job (rounds "
                  + ", ".join(f"{v:.1f}" for v in values) + ")"
                  + ("" if name == "full finish_claim" else f"; share {statistics.median(shares):.0%}"), flush=True)
    finally:
        server.cleanup()
    end = os.getloadavg()
    print(f"# load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
