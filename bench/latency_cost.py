"""``python -m bench.latency_cost``: what the wait and run histograms cost the moves, interleaved.

Each round runs one loop that reports a job done and claims the next with ``finish_claim`` (the
worker's steady state: one claim and one completion per job) on two private redis-servers at once,
call by call in turns: one server runs the scripts as they are, the other the scripts of the commit
before the histograms (``git show``, expanded as ``queues/scripts.py`` expands them). So a
drift of the shared machine lands on both sides, and each server's ``INFO commandstats`` is one
side's Redis time; the servers swap sides every round. The report gives each side's Redis time per
job and the median of the per-round ratios. It then fills a queue's minute with a realistic spread of waits and runs and
prints the bytes of the minute and hour hashes (MEMORY USAGE), with and without the histograms.

    python -m bench.latency_cost --rounds 5 --jobs 3000
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import subprocess
from pathlib import Path
from typing import Any

from queues import EchoMQ, moves
from queues.keys import QueueKeys
from queues.moves import Report
from queues.scripts import _INCLUDE, script

from .common import start_server

REPO = Path(__file__).resolve().parent.parent

def _before_histograms() -> str:
    """The commit before the one that added latency.lua: the moves as they were."""
    added = subprocess.run(["git", "log", "--format=%H", "--diff-filter=A", "--", "queues/lua/latency.lua"],
                           cwd=REPO, check=True, capture_output=True, text=True).stdout.split()
    return f"{added[-1]}~1" if added else "HEAD"


def _source_at(rev: str, name: str) -> str:
    """A script as ``queues/scripts.py`` expands it, from the files of commit ``rev``."""
    text = subprocess.run(["git", "show", f"{rev}:queues/lua/{name}"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout
    return _INCLUDE.sub(lambda m: _source_at(rev, m.group(1)).rstrip("\n"), text)


def _sources(before: str) -> dict[str, str]:
    """finish_claim as it is, and as it was at commit ``before``."""
    return {"with histograms": script("finish_claim").source, f"before ({before})": _source_at(before, "finish_claim.lua")}


def _loop(sides: dict[str, tuple[Any, str, EchoMQ]], queue: str, jobs: int) -> dict[str, float]:
    """Redis time per job (us, ``INFO commandstats``) of ``jobs`` calls of finish_claim (report one,
    claim one) per side, each side on its own server, the sides taking turns call by call."""
    held = {}
    for side, (client, _, mq) in sides.items():
        client.flushall()
        mq.enqueue_many(queue, ["x"] * (jobs + 1))
        [held[side]] = mq.claim(queue, lease_ms=600_000)
        client.config_resetstat()
    for _ in range(jobs):
        for side, (client, sha, _) in sides.items():
            job = held[side]
            call = moves.finish_claim(queue, [Report(job.id, job.token)], actor="bench", lease_ms=600_000)
            result = call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args))
            assert isinstance(result.claimed, list)
            [held[side]] = result.claimed
    return {side: float(client.info("commandstats")["cmdstat_evalsha"]["usec"]) / jobs
            for side, (client, _, _) in sides.items()}


def _minute_bytes(client: Any, mq: EchoMQ, sha: str, queue: str, jobs: int) -> tuple[int, int]:
    """MEMORY USAGE of the minute and the hour hash after ``jobs`` jobs of realistic, spread-out waits
    and runs (each job due a log-normal time before its claim)."""
    rng = random.Random(5)
    keys = QueueKeys(queue)
    ids = mq.enqueue_many(queue, ["x"] * jobs)
    now = mq.server_time_ms(queue)
    client.zadd(keys.pending, {i: now - round(rng.lognormvariate(7, 2)) for i in ids})
    [held] = mq.claim(queue, lease_ms=600_000)
    for _ in range(jobs - 1):
        call = moves.finish_claim(queue, [Report(held.id, held.token)], actor="bench", lease_ms=600_000)
        [held] = call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args)).claimed
    minute = mq.server_time_ms(queue) // 60_000
    return (int(client.memory_usage(f"{keys.prefix}m:{minute}") or 0),
            int(client.memory_usage(f"{keys.prefix}h:{minute // 60}") or 0))


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=3000, help="jobs per side and round")
    parser.add_argument("--before", default="", help="the commit to compare with (default: the one before "
                        "latency.lua was added)")
    parser.add_argument("--memory-jobs", type=int, default=3000, help="jobs in the minute whose bytes are shown")
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"# load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    servers = [start_server(), start_server()]
    try:
        before_rev = args.before or _before_histograms()
        sources = _sources(before_rev)
        sides: dict[str, tuple[Any, str, EchoMQ]] = {}
        for server, (side, source) in zip(servers, sources.items()):
            client: Any = server.client()
            sha = client.script_load(source)
            assert sha == hashlib.sha1(source.encode()).hexdigest()
            sides[side] = (client, sha, EchoMQ.from_url(server.url, actor="bench"))
        times: dict[str, list[float]] = {side: [] for side in sides}
        for round_no in range(args.rounds):
            # Each round swaps which server runs which side, so that neither side keeps the luckier one.
            order = list(sides.items()) if round_no % 2 == 0 else list(reversed(sides.items()))
            swapped = dict(zip(sides, (v for _, v in order)))
            rolled = {side: (swapped[side][0], sides[side][1], swapped[side][2]) for side in sides}
            for side, (client, _, _) in rolled.items():
                client.script_load(sources[side])
            found = _loop(rolled, f"bench-{round_no}", args.jobs)
            for side, us in found.items():
                times[side].append(us)
            print(f"round {round_no + 1}: " + "; ".join(f"{side} {us:.2f} us per job" for side, us in found.items()),
                  flush=True)
        after, before = list(sources)
        for side in sides:
            print(f"{side}: median {statistics.median(times[side]):.2f} us per job", flush=True)
        ratios = [a / b for a, b in zip(times[after], times[before])]
        print("Redis time per job with / before, per round: " + ", ".join(f"{r:.3f}" for r in ratios)
              + f"; median {statistics.median(ratios):.3f} ({(statistics.median(ratios) - 1) * 100:+.1f} %)",
              flush=True)
        for side, (client, sha, mq) in sides.items():
            client.flushall()
            minute, hour = _minute_bytes(client, mq, sha, "bench-memory", args.memory_jobs)
            print(f"bytes, {side}, {args.memory_jobs} jobs in one minute: minute hash {minute:,}, "
                  f"hour hash {hour:,}; a queue-day of such minutes (1440 minutes, 24 hours): "
                  f"{1440 * minute + 24 * hour:,}", flush=True)
            mq.close()
    finally:
        for server in servers:
            server.cleanup()
    end = os.getloadavg()
    print(f"# load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
