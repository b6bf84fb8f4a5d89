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


def test_a_job_whose_hash_disagrees_is_moved_to_failed_as_corrupt_and_the_job_behind_it_is_claimed(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("odd"), mapping={"state": "done ", "attempts": "1", "payload": "x"})
    mq.redis.zadd(keys.pending, {"odd": 0})
    mq.enqueue("q", "real", job_id="real")

    [job] = mq.claim("q")

    odd = mq.job("q", "odd")
    assert job.id == "real"
    assert (odd.state, set(odd.scores)) == ("failed", {"failed"})
    assert odd.text("last_error") == 'corrupt: state "done " in pending'
    assert [(e.move, e.source, e.target) for e in mq.events("q") if e.job_id == "odd"] == [
        ("corrupt", "pending", "failed")]


@pytest.mark.parametrize("fields", [{"state": "pending", "attempts": "x"}, {"state": "pending", "attempts": "1e3"},
                                    {"state": "pending", "attempts": "99999999999999"}, {"attempts": "1"}])
def test_a_job_that_cannot_be_claimed_is_set_aside_with_the_reason(mq: EchoMQ, fields: dict[str, str]) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("odd"), mapping={**fields, "payload": "x"})
    mq.redis.zadd(keys.pending, {"odd": 0})

    with pytest.raises(NothingToClaim):
        mq.claim("q")

    odd = mq.job("q", "odd")
    assert odd.state == "failed" and odd.text("last_error").startswith("corrupt: ")
    assert odd.attempts == fields.get("attempts", "")  # the evidence stays as it was


def test_a_job_key_of_another_type_is_moved_out_of_pending_without_touching_the_key(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.set(keys.job("odd"), "not a hash")
    mq.redis.zadd(keys.pending, {"odd": 0})
    mq.enqueue("q", "real", job_id="real")

    [job] = mq.claim("q")

    assert job.id == "real"
    assert mq.redis.get(keys.job("odd")) == b"not a hash"
    assert mq.redis.zscore(keys.failed, "odd") is not None and mq.redis.zscore(keys.pending, "odd") is None
    assert mq.job("q", "odd").key_type == "string"


def test_any_number_of_unclaimable_jobs_at_the_head_cannot_keep_a_due_job_from_being_claimed(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    pipe = mq.redis.pipeline()
    for n in range(150):
        pipe.hset(keys.job(f"bad{n}"), mapping={"state": "done ", "attempts": "1", "payload": "x"})
        pipe.zadd(keys.pending, {f"bad{n}": n})
    for n in range(10):
        pipe.hset(keys.job(f"odd{n}"), mapping={"state": "pending", "attempts": "x", "payload": "x"})
        pipe.zadd(keys.pending, {f"odd{n}": 200 + n})
    pipe.execute()
    good = mq.enqueue_many("q", [f"g{n}" for n in range(10)])

    calls, claimed, empties = 0, [], []
    while len(claimed) < 10 and calls < 20:
        calls += 1
        try:
            claimed += mq.claim("q", count=10)
        except NothingToClaim as empty:
            empties.append(empty)

    # Each call moves up to count + 100 ids out of the way; an EMPTY that ran out of budget says "now".
    assert sorted(j.id for j in claimed) == sorted(good) and calls == 2
    assert [(e.next_due_ms == e.now_ms) for e in empties] == [True]
    assert mq.stats("q").counts == {"pending": 0, "active": 10, "done": 0, "failed": 160}


def test_empty_carries_the_next_claimable_due_time_and_the_server_now(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    later = mq.enqueue("q", "later", delay_ms=60_000)
    due = mq.job("q", later).scores["pending"]
    mq.redis.hset(keys.job("odd"), mapping={"state": "active", "attempts": "1", "payload": "x"})
    mq.redis.zadd(keys.pending, {"odd": due - 30_000})  # unclaimable, and due before the good one

    with pytest.raises(NothingToClaim) as caught:
        mq.claim("q")

    now = mq.server_time_ms("q")
    assert caught.value.next_due_ms == due
    assert now - 5_000 < caught.value.now_ms <= now  # type: ignore[operator]
    assert mq.job("q", "odd").state == "failed"


def test_a_queue_holding_only_unclaimable_jobs_becomes_an_empty_one(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    for n in range(3):
        mq.redis.hset(keys.job(f"bad{n}"), mapping={"state": "done", "attempts": "1", "payload": "x"})
        mq.redis.zadd(keys.pending, {f"bad{n}": n})

    for _ in range(2):
        with pytest.raises(NothingToClaim) as caught:
            mq.claim("q")
        assert caught.value.next_due_ms is None and caught.value.wait_ms is None


def test_a_pending_job_due_at_infinity_is_set_aside_rather_than_reported_as_next(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("never"), mapping={"state": "pending", "attempts": "0", "payload": "x"})
    mq.redis.zadd(keys.pending, {"never": float("inf")})

    with pytest.raises(NothingToClaim) as caught:
        mq.claim("q")

    assert caught.value.next_due_ms is None
    assert mq.job("q", "never").text("last_error") == "corrupt: due time inf is out of range"


def test_a_job_written_by_another_runtime_with_only_the_core_fields_is_claimed(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("bare"), mapping={"state": "pending", "attempts": "0", "payload": "{}"})
    mq.redis.zadd(keys.pending, {"bare": 1})

    [job] = mq.claim("q")
    mq.complete("q", job.id, job.token)

    assert mq.job("q", "bare").state == "done"


@pytest.mark.parametrize("kwargs", [{"lease_ms": 0}, {"lease_ms": "soon"}, {"lease_ms": "inf"}, {"lease_ms": "1e3"},
                                    {"lease_ms": " 5"}, {"count": 0}, {"count": 1001}])
def test_bad_claim_arguments_are_refused_before_anything_moves(mq: EchoMQ, kwargs: dict[str, object]) -> None:
    mq.enqueue("q", "x", job_id="a")

    with pytest.raises(InvalidInput):
        mq.claim("q", **kwargs)  # type: ignore[arg-type]

    assert mq.job("q", "a").state == "pending"


def test_a_job_due_at_minus_infinity_is_claimed_and_its_wait_counted_within_bounds(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("old"), mapping={"state": "pending", "attempts": "0", "payload": "x"})
    mq.redis.zadd(keys.pending, {"old": float("-inf")})

    [job] = mq.claim("q")

    assert job.id == "old" and mq.job("q", "old").state == "active"
