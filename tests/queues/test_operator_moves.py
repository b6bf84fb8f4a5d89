"""Operator moves are compare-and-move: they act only on the job the operator saw."""

from __future__ import annotations

import time

import pytest

from queues import EchoMQ, InvalidInput, Refused
from tests.support.jobs import failed_job


def test_retry_moves_a_failed_job_back_to_pending_with_one_more_try(any_mq: EchoMQ) -> None:
    failed_job(any_mq, "q", "a")

    result = any_mq.retry("q", "a", expect_state="failed", expect_attempts=1)

    assert result.describe() == "retried: job a is now pending (attempts 1)"
    view = any_mq.job("q", "a")
    assert (view.state, view.text("max_attempts")) == ("pending", "2")
    [job] = any_mq.claim("q")
    assert job.attempts == 2


def test_retry_refuses_when_the_job_has_moved_on_since_it_was_shown(any_mq: EchoMQ) -> None:
    failed_job(any_mq, "q", "a")
    any_mq.retry("q", "a")
    [job] = any_mq.claim("q")
    any_mq.complete("q", "a", job.token)

    with pytest.raises(Refused) as refused:
        any_mq.retry("q", "a", expect_state="failed", expect_attempts=1)

    assert str(refused.value) == "refused: job a is now done (attempts 2)"
    assert any_mq.job("q", "a").state == "done"


def test_a_button_can_never_undo_a_workers_completion(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    [job] = mq.claim("q", lease_ms=50)
    time.sleep(0.1)
    mq.complete("q", "a", job.token)  # the lease lapsed, but nobody took the job: the worker still wins

    for move in ("recover", "cancel", "delete"):
        with pytest.raises(Refused):
            mq.operator_move(move, "q", "a", expect_state="active", expect_attempts=1)

    assert mq.job("q", "a").state == "done"


def test_recover_refuses_a_lease_that_has_not_lapsed(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="a")
    any_mq.claim("q", lease_ms=60_000)

    with pytest.raises(Refused) as refused:
        any_mq.recover("q", "a", expect_attempts=1)

    assert refused.value.reason == "not_lapsed"
    assert any_mq.job("q", "a").state == "active"


def test_recover_moves_a_lapsed_job_to_pending_or_to_failed_when_attempts_are_spent(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="again", max_attempts=2)
    any_mq.enqueue("q", "x", job_id="spent", max_attempts=1)
    any_mq.claim("q", lease_ms=30, count=2)
    time.sleep(0.08)

    assert any_mq.recover("q", "again", expect_attempts=1).state == "pending"
    assert any_mq.recover("q", "spent", expect_attempts=1).state == "failed"
    assert any_mq.job("q", "spent").text("last_error") == "lease expired"


def test_promote_makes_a_delayed_job_due_and_refuses_one_already_due(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="later", delay_ms=60_000)
    any_mq.enqueue("q", "x", job_id="now")

    any_mq.promote("q", "later", expect_attempts=0)
    with pytest.raises(Refused) as refused:
        any_mq.promote("q", "now")

    assert refused.value.reason == "not_delayed"
    assert any_mq.stats("q").due == 2


def test_cancel_fails_an_active_job_and_its_worker_is_refused_at_the_next_heartbeat(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="a")
    [job] = any_mq.claim("q")

    any_mq.cancel("q", "a", expect_state="active", expect_attempts=1)

    with pytest.raises(Refused):
        any_mq.extend("q", "a", job.token)
    view = any_mq.job("q", "a")
    assert (view.state, view.text("last_error")) == ("failed", "cancelled")


def test_delete_removes_the_hash_and_every_set_entry(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="a")

    any_mq.delete("q", "a", expect_state="pending", expect_attempts=0)

    view = any_mq.job("q", "a")
    assert not view.exists and not view.scores
    assert [e.move for e in any_mq.events("q")][0] == "delete"


def test_delete_refuses_when_the_state_differs_from_what_was_shown(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="a")

    with pytest.raises(Refused):
        any_mq.delete("q", "a", expect_state="failed")

    assert any_mq.job("q", "a").state == "pending"


def test_operator_moves_on_a_missing_job_say_so(mq: EchoMQ) -> None:
    with pytest.raises(Refused) as refused:
        mq.retry("q", "nope")
    assert str(refused.value) == "refused: job nope does not exist"


@pytest.mark.parametrize("seen", [{"expect_state": "sleeping"}, {"expect_attempts": "many"}, {"expect_attempts": -1}])
def test_bad_expectations_are_refused_as_bad_input(mq: EchoMQ, seen: dict[str, object]) -> None:
    failed_job(mq, "q", "a")

    with pytest.raises(InvalidInput):
        mq.retry("q", "a", **seen)

    assert mq.job("q", "a").state == "failed"
