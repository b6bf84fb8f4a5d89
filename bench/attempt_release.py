"""``python -m bench.attempt_release``: what recording each attempt's release and host costs, beside the scripts before.

Rounds alternate the two sides on one private redis-server (before, after, before, after, ...), each the
worker's own loop: ``finish_claim`` reports a job and claims the next, one script per job, by a worker
registered as the Python runtime registers (id ``host:pid``, a git-describe release ``v1.4.2-3-gabc1234``).
The scripts "before" are ``queues/lua`` as of the commit before the note was added (``--before REV``),
read from git and sent as they were.

Per side: Redis time per job (``INFO commandstats``, the evalsha usec over the jobs), the median bytes of
a finished job's hash (``MEMORY USAGE``) and how many of them are still listpacks (``OBJECT ENCODING``).
``--realtime`` runs redis-server at SCHED_FIFO priority (``chrt``, root only), which holds its per-call times
still on a shared machine. ``--fail`` measures the failing path instead: each job has one attempt and its
report fails it, so it enters its failure group, which now also keeps the release the attempt ran on
(``rels``, PROTOCOL.md section 9a); compare with ``--before main``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from queues import EchoMQ, QueueKeys, moves
from queues.moves import Report
from queues.scripts import LUA_DIR, expand

from .common import start_server

ROOT = Path(__file__).resolve().parents[1]
# A Python worker's id is host:pid, so its claims leave the host out (PROTOCOL.md, section 9).
RELEASE, HOST, WORKER = "v1.4.2-3-gabc1234", "bench-host-7", "bench-host-7:4242"
REGISTER: dict[str, Any] = dict(ttl_ms=600_000, host=HOST, pid=4242, runtime="python emq", concurrency=1,
                                started_ms=1, held=[], release=RELEASE)


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def before_revision() -> str:
    """The commit before the one that made claims record a note."""
    added = _git("log", "--format=%H", "-S", "attempt_note", "--", "queues/lua/claim_due.lua").split()
    if not added:
        raise SystemExit("no commit adds attempt_note to queues/lua/claim_due.lua: give --before REV")
    return added[-1] + "^"


def scripts_at(revision: str, names: list[str]) -> dict[str, str]:
    """Each script's source as it was at ``revision``, its includes expanded as queues.scripts does."""
    folder = Path(tempfile.mkdtemp(prefix="emq-bench-lua-"))
    for path in _git("ls-tree", "--name-only", f"{revision}:queues/lua/").split():
        (folder / path).write_text(_git("show", f"{revision}:queues/lua/{path}"))
    return {name: expand(f"{name}.lua", (folder,)) for name in names}


def _send(client: Any, shas: dict[str, str], call: moves.Call[Any]) -> Any:
    return call.parse(client.evalsha(shas[call.script], len(call.keys), *call.keys, *call.args))


def one_round(mq: EchoMQ, shas: dict[str, str], jobs: int, *, fail: bool = False) -> tuple[float, float, int]:
    """(Redis µs per job, median bytes of a finished job's hash, how many of the sampled are listpacks)."""
    client: Any = mq.redis
    client.flushall()
    queue = "bench"
    _send(client, shas, moves.register_worker(queue, WORKER, **REGISTER))
    mq.enqueue_many(queue, [f'{{"to": "user{n}@example.com"}}' for n in range(jobs + 1)],
                    max_attempts=1 if fail else moves.DEFAULT_MAX_ATTEMPTS)
    [held] = _send(client, shas, moves.claim(queue, worker=WORKER))
    client.config_resetstat()
    for n in range(jobs):
        report = Report(held.id, held.token, "fail", f"timeout after {n % 997} ms") if fail else Report(held.id, held.token)
        result = _send(client, shas, moves.finish_claim(queue, [report], actor=WORKER))
        [held] = result.claimed
    usec = float(client.info("commandstats")["cmdstat_evalsha"]["usec"]) / jobs
    finished = QueueKeys(queue).failed if fail else QueueKeys(queue).done
    done = [m.decode() for m in client.zrange(finished, 0, 199)]
    keys = QueueKeys(queue)
    sizes = [int(client.memory_usage(keys.job(job_id), samples=0)) for job_id in done]
    listpacks = sum(client.object("encoding", keys.job(job_id)) == b"listpack" for job_id in done)
    return usec, statistics.median(sizes), listpacks * 100 // max(len(done), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="the revision whose scripts are 'before' (default: the one before the note)")
    parser.add_argument("--rounds", type=int, default=6, help="rounds per side (default 6)")
    parser.add_argument("--jobs", type=int, default=20_000, help="jobs per round (default 20000)")
    parser.add_argument("--realtime", action="store_true", help="redis-server at SCHED_FIFO 50 (root only)")
    parser.add_argument("--fail", action="store_true", help="fail every job for good (the failure group path)")
    args = parser.parse_args()
    revision = args.before or before_revision()
    names = ["register_worker", "claim", "finish_claim"]
    sources = {"before": scripts_at(revision, names), "after": {n: expand(f"{n}.lua", (LUA_DIR,)) for n in names}}
    load = os.getloadavg()
    print(f"# load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    server = start_server()
    try:
        if args.realtime:
            assert server.process is not None
            subprocess.run(["chrt", "-f", "-p", "50", str(server.process.pid)], check=True)
        mq = EchoMQ.from_url(server.url, actor="bench")
        client: Any = mq.redis
        shas = {side: {n: client.script_load(src) for n, src in found.items()} for side, found in sources.items()}
        results: dict[str, list[tuple[float, float, int]]] = {"before": [], "after": []}
        for _ in range(args.rounds):
            for side in ("before", "after"):
                results[side].append(one_round(mq, shas[side], args.jobs, fail=args.fail))
        mq.close()
    finally:
        server.cleanup()
    print(f"scripts before: {_git('rev-parse', '--short', revision).strip()}; {args.rounds} rounds of {args.jobs} "
          f"jobs per side, interleaved (finish_claim per job{' failing it for good' if args.fail else ''}, a worker of "
          f"release {RELEASE} on host {HOST})")
    for side in ("before", "after"):
        usec = [r[0] for r in results[side]]
        print(f"{side:6}  Redis {statistics.median(usec):6.1f} µs/job (rounds {', '.join(f'{u:.1f}' for u in usec)})"
              f"  hash {statistics.median(r[1] for r in results[side]):.0f} B/job"
              f"  listpack {min(r[2] for r in results[side])}-{max(r[2] for r in results[side])} % of jobs")
    ratios = [a[0] / b[0] for a, b in zip(results["after"], results["before"])]
    print(f"after/before Redis time per job: median of per-round ratios {statistics.median(ratios):.3f} "
          f"({', '.join(f'{r:.3f}' for r in ratios)})")


if __name__ == "__main__":
    main()
