"""The peers measured beside EchoMQ in the same run: BullMQ (Node, from npm) and RQ (Python, from PyPI).

Both are optional: a peer that cannot be set up is reported as skipped with
the reason, and the rest of the run goes on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from tests.support.redis_servers import RedisServer

from ..common import Report, rate

BULLMQ_DIR = Path(__file__).with_name("bullmq")


def run(server: RedisServer, report: Report, *, jobs: int) -> None:
    run_bullmq(server, report, jobs=jobs)
    server.client().flushall()
    run_rq(server, report, jobs=jobs)
    server.client().flushall()


def _skip(system: str, why: str) -> None:
    print(f"{system:<9} skipped: {why}", flush=True)


def run_bullmq(server: RedisServer, report: Report, *, jobs: int) -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        return _skip("bullmq", "node and npm are needed (apt-get install nodejs npm)")
    if not (BULLMQ_DIR / "node_modules" / "bullmq").is_dir():
        installed = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent"], cwd=BULLMQ_DIR,
                                   capture_output=True, text=True, timeout=600)
        if installed.returncode != 0:
            return _skip("bullmq", f"npm install failed: {installed.stderr.strip()[-300:]}")
    version = json.loads((BULLMQ_DIR / "node_modules" / "bullmq" / "package.json").read_text())["version"]
    measured = subprocess.run([node, "bench.mjs", str(server.port), str(jobs)], cwd=BULLMQ_DIR,
                              capture_output=True, text=True, timeout=1800)
    if measured.returncode != 0:
        return _skip("bullmq", f"bench.mjs failed: {measured.stderr.strip()[-500:]}")
    for line in measured.stdout.splitlines():
        if line.startswith("{"):
            f = json.loads(line)
            report.add("bullmq", f["what"], float(f["value"]), f["unit"], f"{f['note']}, bullmq {version}")


def run_rq(server: RedisServer, report: Report, *, jobs: int) -> None:
    try:
        import redis
        import rq
        from rq import Queue, SimpleWorker, Worker
    except ImportError:
        return _skip("rq", "not installed (pip install -e '.[bench]')")
    from .rq_jobs import noop

    connection = redis.Redis(port=server.port)
    one_by_one, bulk, processed = min(jobs, 5_000), min(jobs, 20_000), min(jobs, 1_000)
    queue = Queue("bench-enqueue-one", connection=connection)
    start = time.perf_counter()
    for n in range(one_by_one):
        queue.enqueue(noop, "user@example.com", n)
    report.add("rq", "enqueue, one by one (Queue.enqueue)", rate(one_by_one, time.perf_counter() - start),
               "jobs/s", f"{one_by_one} jobs, rq {rq.__version__}")

    queue = Queue("bench-enqueue-bulk", connection=connection)
    start = time.perf_counter()
    for first in range(0, bulk, 1000):
        queue.enqueue_many([Queue.prepare_data(noop, ("user@example.com", n))
                            for n in range(first, min(bulk, first + 1000))])
    report.add("rq", "enqueue in bulk (Queue.enqueue_many, chunks of 1000)", rate(bulk, time.perf_counter() - start),
               "jobs/s", f"{bulk} jobs, rq {rq.__version__}")

    # RQ's default Worker forks a work horse per job; SimpleWorker runs jobs in its own process.
    for worker_class in (Worker, SimpleWorker):
        queue = Queue(f"bench-process-{worker_class.__name__}", connection=connection)
        queue.enqueue_many([Queue.prepare_data(noop, ("user@example.com", n)) for n in range(processed)])
        start = time.perf_counter()
        worker_class([queue], connection=connection).work(burst=True, logging_level="ERROR")
        seconds = time.perf_counter() - start
        finished = queue.finished_job_registry.count
        if finished != processed:
            return _skip("rq", f"{worker_class.__name__}: only {finished} of {processed} jobs finished")
        report.add("rq", f"process (no-op job, {worker_class.__name__}), 1 worker", rate(processed, seconds),
                   "jobs/s", f"{processed} jobs, rq {rq.__version__}")
