"""The peers measured beside EchoMQ in the same run: BullMQ (Node, from npm) and RQ (Python, from PyPI).

Each function measures one round of one figure and returns its rate; a peer
that cannot be set up raises :class:`~bench.interleaved.Skipped` with the
reason, and the rest of the run goes on.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from functools import cache
from pathlib import Path

from ..common import rate
from ..interleaved import Skipped

BULLMQ_DIR = Path(__file__).with_name("bullmq")


@cache
def bullmq_version() -> str:
    """Installs BullMQ from npm on first use; its version."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        raise Skipped("node and npm are needed (apt-get install nodejs npm)")
    if not (BULLMQ_DIR / "node_modules" / "bullmq").is_dir():
        installed = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--silent"], cwd=BULLMQ_DIR,
                                   capture_output=True, text=True, timeout=600)
        if installed.returncode != 0:
            raise Skipped(f"npm ci failed: {installed.stderr.strip()[-300:]}")
    return str(json.loads((BULLMQ_DIR / "node_modules" / "bullmq" / "package.json").read_text())["version"])


def bullmq(port: int, jobs: int, figure: str) -> float:
    """One round of a BullMQ figure (bench.mjs: add-one, add-bulk, process-1, process-16), in its own node process."""
    bullmq_version()
    measured = subprocess.run(["node", "bench.mjs", str(port), str(jobs), figure], cwd=BULLMQ_DIR,
                              capture_output=True, text=True, timeout=1800)
    if measured.returncode != 0:
        raise RuntimeError(f"bench.mjs {figure} failed: {measured.stderr.strip()[-500:]}")
    line = next(line for line in measured.stdout.splitlines() if line.startswith("{"))
    return float(json.loads(line)["value"])


def _rq():  # type: ignore[no-untyped-def]
    try:
        import rq
    except ImportError:
        raise Skipped("not installed (pip install -e '.[bench]')") from None
    return rq


def rq_version() -> str:
    return str(_rq().__version__)


def rq_enqueue_one_by_one(port: int, jobs: int) -> float:
    _rq()  # before importing rq: a missing rq is a skipped side, not an ImportError
    import redis
    from rq import Queue

    from .rq_jobs import noop

    queue = Queue("bench-enqueue-one", connection=redis.Redis(port=port))
    start = time.perf_counter()
    for n in range(jobs):
        queue.enqueue(noop, "user@example.com", n)
    return rate(jobs, time.perf_counter() - start)


def rq_enqueue_in_bulk(port: int, jobs: int) -> float:
    _rq()  # before importing rq: a missing rq is a skipped side, not an ImportError
    import redis
    from rq import Queue

    from .rq_jobs import noop

    queue = Queue("bench-enqueue-bulk", connection=redis.Redis(port=port))
    start = time.perf_counter()
    for first in range(0, jobs, 1000):
        queue.enqueue_many([Queue.prepare_data(noop, ("user@example.com", n))
                            for n in range(first, min(jobs, first + 1000))])
    return rate(jobs, time.perf_counter() - start)


def rq_process(port: int, jobs: int) -> float:
    """RQ's SimpleWorker (jobs in its own process; the default Worker forks a work horse per job, ~3x slower)."""
    _rq()  # before importing rq: a missing rq is a skipped side, not an ImportError
    import redis
    from rq import Queue, SimpleWorker

    from .rq_jobs import noop

    connection = redis.Redis(port=port)
    queue = Queue("bench-process", connection=connection)
    queue.enqueue_many([Queue.prepare_data(noop, ("user@example.com", n)) for n in range(jobs)])
    start = time.perf_counter()
    SimpleWorker([queue], connection=connection).work(burst=True, logging_level="ERROR")
    seconds = time.perf_counter() - start
    finished = queue.finished_job_registry.count
    if finished != jobs:
        raise RuntimeError(f"rq: only {finished} of {jobs} jobs finished")
    return rate(jobs, seconds)
