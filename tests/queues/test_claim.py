from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput, NothingToClaim, QueueKeys


def test_it_claims_the_earliest_due_job_and_returns_attempts_as_the_token(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "first", job_id="a")
    any_mq.enqueue("q", "second", job_id="b")

    [job] = any_mq.claim("q", lease_ms=5_000)

    assert (job.id, job.attempts, job.payload) == ("a", 1, b"first")
    view = any_mq.job("q", "a")
    assert view.state == "active"
    assert view.lease_deadline_ms == job.lease_deadline_ms
    assert 4_000 < view.lease_left_ms <= 5_000
    assert view.fields["claim_id"].decode() == job.claim_id


def test_a_batch_claim_takes_up_to_count_jobs_in_due_order(any_mq: EchoMQ) -> None:
    for i in range(5):
        any_mq.enqueue("q", str(i), job_id=f"j{i}")

    jobs = any_mq.claim("q", count=3)

    assert [j.id for j in jobs] == ["j0", "j1", "j2"]
    assert any_mq.stats("q").counts == {"pending": 2, "active": 3, "done": 0, "failed": 0}


def test_a_delayed_job_is_not_claimed_and_the_refusal_says_when_one_is_due(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "later", delay_ms=60_000)

    with pytest.raises(NothingToClaim) as caught:
        any_mq.claim("q")

    assert caught.value.next_due_ms > any_mq.server_time_ms("q") + 50_000  # type: ignore[attr-defined]
    assert any_mq.stats("q").counts["pending"] == 1


def test_an_empty_queue_has_nothing_to_claim(any_mq: EchoMQ) -> None:
    with pytest.raises(NothingToClaim):
        any_mq.claim("empty")


def test_claim_skips_and_cleans_ids_whose_hash_is_missing(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.zadd(keys.pending, {"ghost": 0})
    mq.enqueue("q", "real", job_id="real")

    [job] = mq.claim("q")

    assert job.id == "real"
    assert mq.redis.zscore(keys.pending, "ghost") is None


def test_claim_leaves_a_job_whose_hash_disagrees_for_the_integrity_check(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("odd"), mapping={"state": "done", "attempts": "1", "payload": "x"})
    mq.redis.zadd(keys.pending, {"odd": 0})
    mq.enqueue("q", "real", job_id="real")

    [job] = mq.claim("q")

    assert job.id == "real"
    assert mq.redis.zscore(keys.pending, "odd") == 0
    assert mq.job("q", "odd").state == "done"


def test_a_job_written_by_another_runtime_with_only_the_core_fields_is_claimed(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("bare"), mapping={"state": "pending", "attempts": "0", "payload": "{}"})
    mq.redis.zadd(keys.pending, {"bare": 1})

    [job] = mq.claim("q")
    mq.complete("q", job.id, job.token)

    assert mq.job("q", "bare").state == "done"


@pytest.mark.parametrize("kwargs", [{"lease_ms": 0}, {"lease_ms": "soon"}, {"count": 0}, {"count": 1001}])
def test_bad_claim_arguments_are_refused_before_anything_moves(mq: EchoMQ, kwargs: dict[str, object]) -> None:
    mq.enqueue("q", "x", job_id="a")

    with pytest.raises(InvalidInput):
        mq.claim("q", **kwargs)  # type: ignore[arg-type]

    assert mq.job("q", "a").state == "pending"
