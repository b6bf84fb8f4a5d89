from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput, QueueKeys, Refused, moves
from queues.moves import Call


def test_it_completes_every_held_job_and_refuses_only_the_stale_one(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("q", ["a", "b", "c"])
    jobs = any_mq.claim("q", count=3)
    any_mq.cancel("q", jobs[1].id, expect_state="active")

    results = any_mq.run(moves.complete_many("q", [(j.id, j.token) for j in jobs], actor="w"))

    assert isinstance(results[0], int) and isinstance(results[2], int)
    assert isinstance(results[1], Refused) and results[1].reason == "state"
    assert [any_mq.job("q", j.id).state for j in jobs] == ["done", "failed", "done"]
    completes = [e for e in any_mq.events("q") if e.move == "complete"]
    assert sorted(e.job_id for e in completes) == sorted([jobs[0].id, jobs[2].id])
    assert any_mq.stats("q").counts == {"pending": 0, "active": 0, "done": 2, "failed": 1}


def test_a_token_from_an_earlier_claim_is_refused(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "a", job_id="a")
    [first] = any_mq.claim("q")
    any_mq.redis.zadd(QueueKeys("q").active, {"a": 1})
    any_mq.recover("q", "a", expect_state="active")
    [second] = any_mq.claim("q")

    [stale] = any_mq.run(moves.complete_many("q", [("a", first.token)]))
    assert isinstance(stale, Refused) and stale.reason == "token"
    [fresh] = any_mq.run(moves.complete_many("q", [("a", second.token)]))
    assert isinstance(fresh, int)
    assert any_mq.job("q", "a").state == "done"


def test_a_job_given_twice_is_refused_before_anything_is_written(mq: EchoMQ) -> None:
    mq.enqueue("q", "a", job_id="a")
    [job] = mq.claim("q")
    with pytest.raises(InvalidInput, match="given twice"):
        moves.complete_many("q", [("a", job.token), ("a", job.token)])
    twice = Call("complete_many", QueueKeys("q").script_keys(None),
                 ["w", "a", job.attempts, job.claim_id, "a", job.attempts, job.claim_id], lambda r: r)

    with pytest.raises(InvalidInput, match="job a is given twice"):
        mq.run(twice)
    assert mq.job("q", "a").state == "active"
    assert [e.move for e in mq.events("q")] == ["claim", "enqueue"]
