"""Jobs in a given state, made through the protocol's own moves (in a queue with no other due job)."""

from __future__ import annotations

from queues import EchoMQ, moves


def failed_jobs(mq: EchoMQ, queue: str, count: int, payload: str = "x") -> list[str]:
    """``count`` jobs that failed for good (one attempt each)."""
    ids = mq.enqueue_many(queue, [payload] * count, max_attempts=1)
    claimed = mq.claim(queue, lease_ms=60_000, count=count)
    assert {j.id for j in claimed} == set(ids), "the queue held other due jobs"
    mq.run_many([moves.fail(queue, j.id, j.token, error="boom", backoff_ms=0) for j in claimed])
    return ids


def done_jobs(mq: EchoMQ, queue: str, count: int, payload: str = "x") -> list[str]:
    ids = mq.enqueue_many(queue, [payload] * count)
    claimed = mq.claim(queue, lease_ms=60_000, count=count)
    assert {j.id for j in claimed} == set(ids), "the queue held other due jobs"
    mq.run_many([moves.complete(queue, j.id, j.token) for j in claimed])
    return ids
