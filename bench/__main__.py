"""``python -m bench [throughput|pages|all]``: one private redis-server; every figure beside its peers, interleaved.

Throughput figures run in rounds (EchoMQ, then BullMQ, RQ and the raw
EVALSHA ceiling, repeated; see :mod:`bench.interleaved`), so a drift of the
machine's speed during the run lands on every side. ``--json`` also writes the
figures to a file (bench/results/ is ignored by git).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from functools import partial
from pathlib import Path

from tests.support.redis_servers import REDIS_SERVER, RedisServer

from . import peers, protocol
from .common import Report, evalsha_ceiling, start_server
from .interleaved import Contest, Side, Skipped, run_contests

PARTS = ("throughput", "pages")


def contests(server: RedisServer, *, jobs: int) -> list[Contest]:
    url, port = server.url, server.port
    one_by_one, rq_one, rq_process = min(jobs, 20_000), min(jobs, 5_000), min(jobs, 2_000)
    process = protocol.process
    return [
        Contest("enqueue one by one", "jobs/s", [
            Side("echomq", "EchoMQ.enqueue", partial(protocol.enqueue_one_by_one, url, one_by_one)),
            Side("echomq", "AsyncEchoMQ.enqueue", partial(protocol.enqueue_one_by_one_async, url, one_by_one)),
            Side("bullmq", "Queue.add", partial(peers.bullmq, port, one_by_one, "add-one")),
            Side("rq", "Queue.enqueue", partial(peers.rq_enqueue_one_by_one, port, rq_one)),
        ]),
        Contest("enqueue in bulk", "jobs/s", [
            Side("echomq", "EchoMQ.enqueue_many", partial(protocol.enqueue_in_bulk, url, jobs)),
            Side("bullmq", "Queue.addBulk, chunks of 1000", partial(peers.bullmq, port, jobs, "add-bulk")),
            Side("rq", "Queue.enqueue_many, chunks of 1000", partial(peers.rq_enqueue_in_bulk, port, jobs)),
        ]),
        Contest("process, 1 handler, no prefetch", "jobs/s", [
            Side("echomq", "Worker, async handler", partial(process, url, jobs, concurrency=1, kind="async")),
            Side("echomq", "Worker, sync handler", partial(process, url, jobs, concurrency=1, kind="sync")),
            Side("bullmq", "Worker, concurrency 1", partial(peers.bullmq, port, jobs, "process-1")),
            Side("rq", "SimpleWorker", partial(peers.rq_process, port, rq_process)),
            Side("redis", "EVALSHA 'return 1', 1 connection: the ceiling of one round trip per job",
                 partial(evalsha_ceiling, server, clients=1)),
        ]),
        Contest("process, 16 handlers", "jobs/s", [
            Side("echomq", "Worker, async handlers", partial(process, url, jobs, concurrency=16, kind="async")),
            Side("echomq", "Worker, sync handlers", partial(process, url, jobs, concurrency=16, kind="sync")),
            Side("bullmq", "Worker, concurrency 16", partial(peers.bullmq, port, jobs, "process-16")),
            Side("redis", "EVALSHA 'return 1', 16 connections", partial(evalsha_ceiling, server, clients=16)),
        ]),
        Contest("process, 16 handlers, prefetch 16", "jobs/s", [
            Side("echomq", "Worker, async handlers, prefetch 16",
                 partial(process, url, jobs, concurrency=16, kind="async", prefetch=16)),
        ]),
    ]


def _versions() -> str:
    found = []
    for name, version in (("bullmq", peers.bullmq_version), ("rq", peers.rq_version)):
        try:
            found.append(f"{name} {version()}")
        except Skipped as why:
            found.append(f"{name} skipped ({why})")
    return ", ".join(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="PART", help="throughput, pages or all (default: all)")
    parser.add_argument("--jobs", type=int, default=50_000, help="jobs per enqueue and processing figure")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every throughput figure (at least 3)")
    parser.add_argument("--page-sizes", default="1000,100000,1000000",
                        help="sizes of the state whose page reads are timed (comma separated)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    unknown = set(args.parts) - {*PARTS, "all"}
    if unknown:
        parser.error(f"unknown part {', '.join(sorted(unknown))}: choose from {', '.join(PARTS)} or all")
    if args.rounds < 3:
        parser.error("--rounds must be at least 3: a median of fewer rounds says little")
    parts = PARTS if not args.parts or "all" in args.parts else tuple(dict.fromkeys(args.parts))

    load = os.getloadavg()
    redis_version = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True).stdout.split()
    print(f"# {platform.node()}: {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"python {platform.python_version()}, {' '.join(redis_version[:3])}; {_versions()}", flush=True)
    server = start_server()
    report = Report()
    try:
        if "throughput" in parts:
            run_contests(server, contests(server, jobs=args.jobs), report, rounds=args.rounds)
        if "pages" in parts:
            protocol.run_pages(server, report, page_sizes=[int(s) for s in args.page_sizes.split(",") if s])
    finally:
        server.cleanup()
    end = os.getloadavg()
    print(f"# load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}", flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load": [load, end], "figures": [f.as_dict() for f in report.figures]},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
