"""Fencing: only the holder of the current claim may extend, complete, fail or release."""

from __future__ import annotations

import time

import pytest

from queues import EchoMQ, FencingToken, InvalidInput, QueueKeys, Refused


def _claim_one(mq: EchoMQ, lease_ms: int = 5_000):  # type: ignore[no-untyped-def]
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q", lease_ms=lease_ms)
    return job


def test_extend_pushes_the_lease_deadline(any_mq: EchoMQ) -> None:
    job = _claim_one(any_mq, lease_ms=1_000)

    deadline = any_mq.extend("q", "a", job.token, lease_ms=60_000)

    assert deadline > job.lease_deadline_ms + 50_000
    assert any_mq.job("q", "a").lease_deadline_ms == deadline


def test_complete_moves_the_job_to_done_once(any_mq: EchoMQ) -> None:
    job = _claim_one(any_mq)

    any_mq.complete("q", "a", job.token)
    with pytest.raises(Refused) as second:
        any_mq.complete("q", "a", job.token)

    assert second.value.reason == "state"
    assert any_mq.stats("q").counts == {"pending": 0, "active": 0, "done": 1, "failed": 0}


def test_a_stale_token_is_refused_after_the_lease_lapses_and_the_job_is_reclaimed(any_mq: EchoMQ) -> None:
    stale = _claim_one(any_mq, lease_ms=50)
    time.sleep(0.1)
    assert any_mq.recover_expired("q").moved == 1
    [fresh] = any_mq.claim("q")

    for move in (lambda t: any_mq.extend("q", "a", t), lambda t: any_mq.complete("q", "a", t),
                 lambda t: any_mq.fail("q", "a", t, error="late"), lambda t: any_mq.release("q", "a", t)):
        with pytest.raises(Refused) as refused:
            move(stale.token)
        assert refused.value.reason == "token"

    assert fresh.attempts == stale.attempts + 1
    any_mq.complete("q", "a", fresh.token)
    assert any_mq.job("q", "a").state == "done"


def test_the_claim_id_refuses_a_token_whose_attempts_were_handed_out_twice(mq: EchoMQ) -> None:
    # After a failover loses a claim's increment, the next claim hands out the
    # same attempts again; only the random claim id tells the two apart.
    job = _claim_one(mq)
    twin = FencingToken(job.attempts, "0badc0de")

    with pytest.raises(Refused) as refused:
        mq.complete("q", "a", twin)

    assert refused.value.reason == "token"
    assert mq.job("q", "a").state == "active"


def test_a_job_claimed_by_a_runtime_without_claim_ids_is_fenced_by_attempts(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("bare"), mapping={"state": "active", "attempts": "2", "payload": "{}"})
    mq.redis.zadd(keys.active, {"bare": 9_999_999_999_999})

    with pytest.raises(Refused):
        mq.complete("q", "bare", "1")
    mq.complete("q", "bare", "2")

    assert mq.job("q", "bare").state == "done"


def test_fail_backs_off_while_attempts_remain_then_fails_with_the_last_error(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="a", max_attempts=2)
    [first] = any_mq.claim("q")
    assert any_mq.fail("q", "a", first.token, error="boom 1", backoff_ms=0) == "pending"
    [second] = any_mq.claim("q")

    assert any_mq.fail("q", "a", second.token, error="boom 2", backoff_ms=0) == "failed"

    view = any_mq.job("q", "a")
    assert (view.state, view.attempts, view.text("last_error")) == ("failed", "2", "boom 2")
    assert "failed" in view.scores


def test_the_backoff_makes_the_retry_due_later(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q")

    mq.fail("q", "a", job.token, error="slow down", backoff_ms=60_000)

    assert mq.stats("q").delayed == 1


def test_release_hands_the_job_back_without_lowering_attempts(any_mq: EchoMQ) -> None:
    job = _claim_one(any_mq)

    any_mq.release("q", "a", job.token)

    view = any_mq.job("q", "a")
    assert (view.state, view.attempts) == ("pending", "1")
    assert any_mq.claim("q")[0].attempts == 2


@pytest.mark.parametrize("token", ["", "0", "-1", "abc", "1.XYZ", "1.", 1.5, None])
def test_malformed_tokens_are_refused_as_bad_input(mq: EchoMQ, token: object) -> None:
    _claim_one(mq)

    with pytest.raises(InvalidInput):
        mq.complete("q", "a", token)

    assert mq.job("q", "a").state == "active"


def test_a_failure_at_attempt_1025_without_backoff_goes_back_to_pending_due_now(mq: EchoMQ) -> None:
    from queues import QueueKeys

    mq.enqueue("q", "x", job_id="a", max_attempts=1_000_000)
    mq.redis.hset(QueueKeys("q").job("a"), "attempts", 1024)
    [job] = mq.claim("q")

    assert job.attempts == 1025 and mq.fail("q", "a", job.token, error="again", backoff_ms=0) == "pending"
    view = mq.job("q", "a")
    assert view.state == "pending" and view.scores["pending"] <= view.now_ms


def test_a_long_backoff_at_a_high_attempt_is_capped_at_an_hour(mq: EchoMQ) -> None:
    from queues import QueueKeys

    mq.enqueue("q", "x", job_id="a", max_attempts=1_000_000)
    mq.redis.hset(QueueKeys("q").job("a"), "attempts", 5000)
    [job] = mq.claim("q")
    mq.fail("q", "a", job.token, error="again", backoff_ms=86_400_000)

    view = mq.job("q", "a")
    assert view.scores["pending"] - view.now_ms <= 3_600_000


def test_the_script_cuts_last_error_at_a_character_boundary_to_4096_bytes(mq: EchoMQ) -> None:
    from queues import QueueKeys
    from queues.moves import Call

    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q")
    error = ("x" + "é" * 3000).encode()  # 6001 bytes; byte 4096 is inside a character
    mq.run(Call("fail", QueueKeys("q").script_keys("a"), ["a", job.attempts, job.claim_id, error, 0, "w"],
                lambda r: r))

    kept = mq.redis.hget(QueueKeys("q").job("a"), "last_error")
    assert len(kept) == 4095 and kept.decode() == ("x" + "é" * 2047)


def test_the_client_cuts_an_error_at_a_character_boundary_too(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q")
    mq.fail("q", "a", job.token, error="é" * 3000)

    assert mq.job("q", "a").text("last_error") == "é" * 2048


def test_a_heartbeat_is_an_event_so_pages_follow_the_new_deadline(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q")
    mq.extend("q", "a", job.token, lease_ms=90_000)

    [event] = mq.events("q", count=1)
    assert (event.move, event.job_id, event.source, event.target, event.attempts, event.actor) == (
        "extend", "a", "active", "active", "1", "test")
    assert [e.move for e in mq.job_events("q", "a")] == ["claim", "enqueue"]
