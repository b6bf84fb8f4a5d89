"""What the counters and history cost (``count_move``, ``count_series``, ``count_wait`` in common.lua):
processing jobs/s with and without them.

Each round drains the same number of pending jobs with the Worker (no-op
handler) twice on a flushed private redis-server: once with the scripts as
they are, once with every call of those three taken out (the
same scripts otherwise, loaded under their own SHAs), in alternating order so
a drift of the machine lands on both sides. The per-round ratio is the cost.

    python -m bench.counters                       # 5 rounds of 20,000 jobs, concurrency 16
    python -m bench.counters --rounds 3 --jobs 50000
    python -m bench.counters --sequential --rounds 6 --jobs 2000   # claim + complete in a loop, no Worker
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import re
import statistics
import time
from collections.abc import Callable

from queues import client as queue_client
from queues.scripts import Script, script
from queues.worker import event_loop_factory

from .common import rate, start_server
from .protocol import PAYLOAD, _drain, _noop_async

# The calls (indented lines), not the definitions (which start with "local function").
COUNT_CALLS = re.compile(r"^[ \t]+(count_move|count_run|count_wait|if series ~= '' then count_series)\b.*\n",
                         re.MULTILINE)


def _without_counters(name: str) -> Script:
    s = script(name)
    source, removed = COUNT_CALLS.subn("", s.source)
    if removed < 3 and name in ("enqueue_many", "complete", "claim"):
        raise RuntimeError(f"{name}: the counting calls were not found; the bench no longer matches common.lua")
    return Script(name, source, hashlib.sha1(source.encode()).hexdigest())


def _measure(url: str, jobs: int, concurrency: int, scripts: Callable[[str], Script]) -> tuple[float, float]:
    """(jobs/s, server µs per EVALSHA during the drain)."""
    from queues import EchoMQ

    queue_client.script = scripts  # type: ignore[assignment]
    mq = EchoMQ.from_url(url, actor="bench")
    try:
        mq.redis.flushall()
        mq.enqueue_many("bench-counters", [PAYLOAD] * jobs)
        mq.redis.config_resetstat()
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            seconds = runner.run(_drain(url, "bench-counters", jobs, concurrency, _noop_async))
        stats = mq.redis.info("commandstats")
        evalsha = stats.get("cmdstat_evalsha", {})
        if stats.get("cmdstat_eval", {}).get("calls", 0) > 50:
            raise RuntimeError(f"the scripts were sent by EVAL, not EVALSHA: {stats.get('cmdstat_eval')}")
        counted = mq.redis.hget("emq:{bench-counters}:counts", "complete")
        minutes = list(mq.redis.scan_iter(match="emq:{bench-counters}:m:*", count=1000))
        if (counted is not None) != (scripts is script) or bool(minutes) != (scripts is script):
            raise RuntimeError("the counters and history were (not) written as this side says")
    finally:
        mq.close()
        queue_client.script = script  # type: ignore[assignment]
    return rate(jobs, seconds), float(evalsha.get("usec_per_call", 0.0))


def _measure_sequential(url: str, jobs: int, concurrency: int, scripts: Callable[[str], Script]) -> tuple[float, float]:
    """One claim and one complete after the other, ``jobs`` times: the server's share shows most plainly."""
    from queues import EchoMQ

    queue_client.script = scripts  # type: ignore[assignment]
    mq = EchoMQ.from_url(url, actor="bench")
    try:
        mq.redis.flushall()
        mq.enqueue_many("bench-counters", [PAYLOAD] * jobs)
        mq.redis.config_resetstat()
        started = time.perf_counter()
        for _ in range(jobs):
            [job] = mq.claim("bench-counters")
            mq.complete("bench-counters", job.id, job.token)
        seconds = time.perf_counter() - started
        evalsha = mq.redis.info("commandstats").get("cmdstat_evalsha", {})
    finally:
        mq.close()
        queue_client.script = script  # type: ignore[assignment]
    return rate(jobs, seconds), float(evalsha.get("usec_per_call", 0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--sequential", action="store_true", help="claim + complete one after the other, no Worker")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    server = start_server()
    plain: dict[str, Script] = {}

    def without(name: str) -> Script:
        if name not in plain:
            plain[name] = _without_counters(name)
        return plain[name]

    sides: dict[str, Callable[[str], Script]] = {"with counters+history": script, "without": without}
    values: dict[str, list[float]] = {name: [] for name in sides}
    server_us: dict[str, list[float]] = {name: [] for name in sides}
    ratios: list[float] = []
    try:
        for n in range(args.rounds):
            order = list(sides) if n % 2 == 0 else list(reversed(sides))
            this_round = {}
            for name in order:
                measure = _measure_sequential if args.sequential else _measure
                this_round[name], per_call = measure(server.url, args.jobs, args.concurrency, sides[name])
                values[name].append(this_round[name])
                server_us[name].append(per_call)
            ratios.append(this_round["with counters+history"] / this_round["without"])
            print(f"round {n + 1}: " + ", ".join(f"{k} {v:,.0f} jobs/s" for k, v in this_round.items()), flush=True)
    finally:
        server.cleanup()
    for name, got in values.items():
        print(f"{name:<18} median {statistics.median(got):>10,.0f} jobs/s  (rounds: "
              + ", ".join(f"{v:,.0f}" for v in got) + f"); server time per EVALSHA median "
              f"{statistics.median(server_us[name]):.2f} µs")
    print(f"with / without, median of per-round ratios: {statistics.median(ratios):.3f}  "
          f"(each job is 3 counted moves: enqueue, claim, complete)")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
