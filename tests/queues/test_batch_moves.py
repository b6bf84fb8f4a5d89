"""Moves over many jobs run as bounded batches, called in a loop."""

from __future__ import annotations

import time

from queues import EchoMQ, QueueKeys, moves


def test_recover_expired_moves_every_lapsed_lease_in_batches(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("q", [str(i) for i in range(25)])
    any_mq.claim("q", lease_ms=30, count=20)
    any_mq.claim("q", lease_ms=60_000, count=5)
    time.sleep(0.08)

    batches = list(any_mq.batches(lambda skip: moves.recover_expired("q", limit=7, skip=skip)))

    assert [b.moved for b in batches] == [7, 7, 6]
    stats = any_mq.stats("q")
    assert (stats.counts["pending"], stats.counts["active"], stats.lapsed) == (20, 5, 0)


def test_retry_failed_retries_every_failed_job_and_only_those(any_mq: EchoMQ) -> None:
    ids = any_mq.enqueue_many("q", ["x"] * 12, max_attempts=1)
    for job in any_mq.claim("q", count=12):
        any_mq.fail("q", job.id, job.token, error="boom")

    total = any_mq.retry_failed("q", limit=5)

    assert (total.moved, total.missing, total.skipped) == (12, 0, 0)
    assert any_mq.stats("q").counts == {"pending": 12, "active": 0, "done": 0, "failed": 0}
    assert {e.job_id for e in any_mq.events("q") if e.move == "retry"} == set(ids)


def test_batch_moves_count_missing_hashes_and_skip_inconsistent_jobs(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.zadd(keys.failed, {"ghost": 1, "odd": 2})
    mq.redis.hset(keys.job("odd"), mapping={"state": "done", "attempts": "1", "payload": ""})

    total = mq.retry_failed("q", limit=1)

    assert (total.moved, total.missing, total.skipped) == (0, 1, 1)
    assert mq.redis.zscore(keys.failed, "odd") == 2


def test_purge_deletes_only_jobs_older_than_the_age(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("q", ["x"] * 4)
    for job in any_mq.claim("q", count=4):
        any_mq.complete("q", job.id, job.token)

    assert any_mq.purge("q", "done", older_than_ms=3_600_000).moved == 0
    total = any_mq.purge("q", "done", older_than_ms=0, limit=3)

    assert total.moved == 4
    assert any_mq.stats("q").counts["done"] == 0


def test_a_purge_event_names_the_attempts_the_job_had(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q")
    mq.complete("q", "a", job.token)

    mq.purge("q", "done")

    [event] = [e for e in mq.events("q") if e.move == "purge"]
    assert (event.job_id, event.source, event.target, event.attempts) == ("a", "done", "", "1")
