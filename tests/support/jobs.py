"""Jobs in a given state, made through the protocol's own moves (in a queue with no other due job)."""

from __future__ import annotations

import time

from queues import EchoMQ, moves

CLAIM_BATCH = 1000  # jobs claimed (and failed) per round trip


def _searchable() -> None:
    # A search covers the jobs that ended before the millisecond it began: wait one out.
    time.sleep(0.002)


def failed_jobs(mq: EchoMQ, queue: str, count: int, payload: str = "x", *, error: str = "boom") -> list[str]:
    """``count`` jobs that failed for good (one attempt each)."""
    ids = mq.enqueue_many(queue, [payload] * count, max_attempts=1)
    for start in range(0, count, CLAIM_BATCH):
        claimed = mq.claim(queue, lease_ms=60_000, count=min(CLAIM_BATCH, count - start))
        assert {j.id for j in claimed} <= set(ids), "the queue held other due jobs"
        mq.run_many([moves.fail(queue, j.id, j.token, error=error, backoff_ms=0) for j in claimed])
    _searchable()
    return ids


def failed_job(mq: EchoMQ, queue: str, job_id: str, payload: str | bytes = "x", *, error: str = "boom") -> str:
    """One job of a given id that failed for good (one attempt)."""
    mq.enqueue(queue, payload, job_id=job_id, max_attempts=1)
    [job] = mq.claim(queue, lease_ms=60_000)
    assert job.id == job_id, "the queue held other due jobs"
    mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))
    _searchable()
    return job_id


def done_jobs(mq: EchoMQ, queue: str, count: int, payload: str = "x") -> list[str]:
    ids = mq.enqueue_many(queue, [payload] * count)
    claimed = mq.claim(queue, lease_ms=60_000, count=count)
    assert {j.id for j in claimed} == set(ids), "the queue held other due jobs"
    mq.run_many([moves.complete(queue, j.id, j.token) for j in claimed])
    _searchable()
    return ids


def many_queues(mq: EchoMQ, count: int, *, prefix: str = "tenant-", jobs: int = 3) -> list[str]:
    """``count`` queues of ``jobs`` pending jobs each, named ``prefix`` plus a zero-padded number (sorted
    as numbered): one ``enqueue_many`` script per queue, pipelined a thousand at a time."""
    names = [f"{prefix}{n:05d}" for n in range(count)]
    for start in range(0, count, 1000):
        results = mq.run_many([moves.enqueue_many(name, ["x"] * jobs, actor=mq.actor)
                               for name in names[start:start + 1000]])
        assert not [r for r in results if isinstance(r, Exception)]
    return names
