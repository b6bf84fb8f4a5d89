from __future__ import annotations

import pytest

from queues import Duplicate, EchoMQ, InvalidInput, QueueKeys, moves
from queues.moves import Call


def test_it_adds_each_job_as_enqueue_does_and_registers_the_queue(any_mq: EchoMQ) -> None:
    ids = any_mq.enqueue_many("mail", ["a", "b"] * 1500)
    single = any_mq.enqueue("mail", "c")

    assert len(set(ids)) == 3000
    assert any_mq.stats("mail").counts["pending"] == 3001
    assert set(any_mq.job("mail", ids[0]).fields) == set(any_mq.job("mail", single).fields)
    assert any_mq.job("mail", ids[1]).payload == b"b"
    assert len([e for e in any_mq.events("mail", count=5000) if e.move == "enqueue"]) == 3001
    assert "mail" in any_mq.queues()


def test_a_taken_id_is_refused_on_its_own_and_the_others_are_added(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "first", job_id="j1")

    results = any_mq.run(moves.enqueue_many("mail", ["x", "y"], job_ids=["j1", "j2"]))

    assert isinstance(results[0], Duplicate) and results[0].state == "pending"
    assert results[1] == "j2"
    assert any_mq.job("mail", "j1").payload == b"first"
    assert any_mq.job("mail", "j2").payload == b"y"


def test_an_id_given_twice_is_refused_before_anything_is_written(mq: EchoMQ) -> None:
    with pytest.raises(InvalidInput, match="given twice"):
        moves.enqueue_many("mail", ["x", "y"], job_ids=["j1", "j1"])
    twice = Call("enqueue_many", QueueKeys("mail").script_keys(None), [0, 3, "w", "j1", "x", "j1", "y"], lambda r: r)

    with pytest.raises(InvalidInput, match="job j1 is given twice"):
        mq.run(twice)
    assert mq.redis.dbsize() == 0
