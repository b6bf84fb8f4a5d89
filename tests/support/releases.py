"""Workers of a release, as the release tests register them, and one attempt of a job by one."""

from __future__ import annotations

from typing import Any

from queues import EchoMQ, moves

REGISTER: dict[str, Any] = dict(ttl_ms=60_000, pid=1, runtime="python 3.11 emq", concurrency=1, started_ms=1, held=[])


def worker_of(redis_url: str, worker_id: str, release: str, queue: str = "q") -> EchoMQ:
    worker = EchoMQ.from_url(redis_url, actor=worker_id)
    worker.run(moves.register_worker(queue, worker_id, host=worker_id.split(":")[0], release=release, **REGISTER))
    return worker


def run_one(worker: EchoMQ, job_id: str, error: str | None, queue: str = "q") -> None:
    """Claims the job (enqueued with one attempt) and fails it with ``error``, or completes it."""
    [job] = [j for j in worker.claim(queue, count=1000) if j.id == job_id]
    if error is None:
        worker.complete(queue, job.id, job.token)
    else:
        worker.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))
