"""``python -m bench.script_cost [--before REV]``: what the moves' scripts cost Redis, today's beside another revision's.

One private redis-server, three parts:

* **calls**: ``EVALSHA`` of ``return 1``, and of scripts making 14 ``TIME``, ``HINCRBY`` (``redis.call`` and
  ``redis.pcall``) or ``TYPE`` calls: what a ``redis.call`` costs Redis besides its command's own work;
* **definitions**: the expanded ``finish_claim`` stopped right after its includes (``do return 1 end`` before its
  first check), beside ``return 1``: what defining ``common.lua``'s tables and functions costs every call;
* **moves**: ``finish_claim`` reporting one job and claiming the next (``--jobs`` per round), the same reporting 8
  and claiming 8 (per job: many handlers share a call so) and ``enqueue`` of one job, with the scripts of
  ``--before`` (``git archive REV queues/lua``, expanded as ``queues.scripts`` does) and today's, interleaved
  A B A B for ``--rounds`` rounds on a flushed server.

Each figure is ``INFO commandstats``' ``usec`` of ``evalsha`` over the calls, after ``CONFIG RESETSTAT``.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

import redis

from queues import EchoMQ, QueueKeys, moves
from queues.moves import Report
from queues.scripts import expand, script

from .common import start_server

QUEUE = "bench-script-cost"
PAYLOAD = '{"to":"user@example.com","n":1}'

CALLS = {
    "return 1": "return 1",
    "14 TIME": "for i = 1, 14 do redis.call('TIME') end return 1",
    "14 HINCRBY": "for i = 1, 14 do redis.call('HINCRBY', KEYS[1], 'a', 1) end return 1",
    "14 HINCRBY through pcall": "for i = 1, 14 do redis.pcall('HINCRBY', KEYS[1], 'a', 1) end return 1",
    "14 TYPE": "for i = 1, 14 do redis.call('TYPE', KEYS[1]) end return 1",
}


def _evalsha_us(client: redis.Redis) -> float:
    return float(client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"])


def _timed(client: redis.Redis, source: str, keys: list[str], args: list[str], calls: int) -> float:
    sha = client.script_load(source)
    client.config_resetstat()
    for _ in range(calls):
        client.evalsha(sha, len(keys), *keys, *args)
    return _evalsha_us(client)


def lua_dir_of(revision: str, into: Path) -> Path:
    """``queues/lua`` as ``revision`` has it, unpacked under ``into``."""
    archive = subprocess.run(["git", "archive", revision, "queues/lua"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "queues" / "lua"


def finish_claim_us(client: redis.Redis, mq: EchoMQ, source: str, jobs: int) -> float:
    client.flushall()
    sha = client.script_load(source)
    mq.enqueue_many(QUEUE, ["x"] * (jobs + 1))
    [held] = mq.claim(QUEUE)
    client.config_resetstat()
    for _ in range(jobs):
        call = moves.finish_claim(QUEUE, [Report(held.id, held.token)], actor="bench", claim_id=secrets.token_hex(8))
        result = call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args))
        assert isinstance(result.claimed, list)
        [held] = result.claimed
    return _evalsha_us(client)


def finish_claim_batch_us(client: redis.Redis, mq: EchoMQ, source: str, jobs: int, batch: int = 8) -> float:
    """Per job: finish_claim reporting ``batch`` jobs and claiming the next ``batch``, as many handlers share a call."""
    client.flushall()
    sha = client.script_load(source)
    mq.enqueue_many(QUEUE, ["x"] * (jobs + batch))
    held = mq.claim(QUEUE, count=batch)
    client.config_resetstat()
    for _ in range(jobs // batch):
        call = moves.finish_claim(QUEUE, [Report(h.id, h.token) for h in held], actor="bench",
                                  claim_id=secrets.token_hex(8), count=batch)
        result = call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args))
        assert isinstance(result.claimed, list) and len(result.claimed) == batch
        held = result.claimed
    return _evalsha_us(client) / batch


def enqueue_us(client: redis.Redis, source: str, jobs: int) -> float:
    client.flushall()
    sha = client.script_load(source)
    client.config_resetstat()
    for _ in range(jobs):
        call = moves.enqueue(QUEUE, PAYLOAD)
        call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args))
    return _evalsha_us(client)


def _claimed(mq: EchoMQ, jobs: int) -> list[Any]:
    held: list[Any] = []
    while len(held) < jobs:
        held += mq.claim(QUEUE, count=min(1000, jobs - len(held)))
    return held


def fail_us(client: redis.Redis, mq: EchoMQ, source: str, jobs: int, *, failed_before: bool) -> float:
    """``fail`` of a claimed job (backoff 0, attempts left): its first failure, or one after another error (the
    older error then goes into the history's fail entry: keep_last_error)."""
    client.flushall()
    sha = client.script_load(source)
    mq.enqueue_many(QUEUE, ["x"] * jobs, max_attempts=5)
    held = _claimed(mq, jobs)
    if failed_before:
        for job in held:
            mq.fail(QUEUE, job.id, job.token, error="connection reset by peer", backoff_ms=0)
        held = _claimed(mq, jobs)
    client.config_resetstat()
    for job in held:
        call = moves.fail(QUEUE, job.id, job.token, error="timeout after 3000 ms", backoff_ms=0, actor="bench")
        call.parse(client.evalsha(sha, len(call.keys), *call.keys, *call.args))
    return _evalsha_us(client)


def _line(name: str, values: list[float]) -> str:
    return f"  {name:<34} median {statistics.median(values):6.1f} us  rounds " + " / ".join(f"{v:.1f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.script_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="HEAD", help="the revision whose scripts are measured beside today's")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2000, help="calls per figure and round")
    parser.add_argument("--realtime", action="store_true", help="redis-server at SCHED_FIFO 50 (root only)")
    args = parser.parse_args()
    print(f"# load at the start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {args.jobs} calls per figure, "
          f"{args.rounds} rounds; before = {args.before}", flush=True)
    server = start_server()
    if args.realtime:
        # Holds Redis's per-call times still on a shared machine (a preempted script counts its wait).
        assert server.process is not None
        subprocess.run(["chrt", "-f", "-p", "50", str(server.process.pid)], check=True)
    client = server.client()
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        client.hset("bench-counter", "a", "1")
        print("calls (one EVALSHA each):", flush=True)
        for name, source in CALLS.items():
            values = [_timed(client, source, ["bench-counter"], [], args.jobs) for _ in range(args.rounds)]
            print(_line(name, values), flush=True)
        with tempfile.TemporaryDirectory() as tmp:
            before_dir = lua_dir_of(args.before, Path(tmp))
            sources = {side: {name: expand(f"{name}.lua", (before_dir,)) if side == "before" else script(name).source
                              for name in ("finish_claim", "enqueue", "fail")} for side in ("before", "today")}
        cut = "local err = check_keys(nil)"
        keys = QueueKeys(QUEUE).script_keys(None)
        print("definitions (finish_claim stopped after its includes):", flush=True)
        for side, scripts in sources.items():
            source = scripts["finish_claim"]
            if source.count(cut) != 1:
                print(f"  {side}: finish_claim has no single {cut!r}; skipped", flush=True)
                continue
            stopped = source.replace(cut, "do return 1 end\n" + cut)
            values = [_timed(client, stopped, keys, [], args.jobs) for _ in range(args.rounds)]
            print(_line(side, values), flush=True)
        print("moves, interleaved:", flush=True)
        figures: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for side, scripts in sources.items():
                figures.setdefault(("finish_claim", side), []).append(
                    finish_claim_us(client, mq, scripts["finish_claim"], args.jobs))
                figures.setdefault(("finish_claim of 8, per job", side), []).append(
                    finish_claim_batch_us(client, mq, scripts["finish_claim"], args.jobs))
                figures.setdefault(("enqueue", side), []).append(enqueue_us(client, scripts["enqueue"], args.jobs))
                for failed_before, move in ((False, "fail, a first error"), (True, "fail, after another error")):
                    figures.setdefault((move, side), []).append(
                        fail_us(client, mq, scripts["fail"], args.jobs, failed_before=failed_before))
        for (move, side), values in figures.items():
            print(_line(f"{move}, {side}", values), flush=True)
        for move in ("finish_claim", "finish_claim of 8, per job", "enqueue", "fail, a first error",
                     "fail, after another error"):
            ratios = [t / b for b, t in zip(figures[(move, "before")], figures[(move, "today")])]
            print(f"  {move}: today / before per round " + ", ".join(f"{r:.3f}" for r in ratios)
                  + f"; median {statistics.median(ratios):.3f}", flush=True)
    finally:
        mq.close()
        client.close()
        server.cleanup()
    print(f"# load at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
