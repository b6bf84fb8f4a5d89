from __future__ import annotations

import re

import pytest

from queues import Duplicate, EchoMQ, InvalidInput, QueueKeys


def test_it_enqueues_a_due_job_and_registers_the_queue(any_mq: EchoMQ) -> None:
    job_id = any_mq.enqueue("mail", '{"to": "a@example.com"}')

    stats = any_mq.stats("mail")
    assert stats.counts == {"pending": 1, "active": 0, "done": 0, "failed": 0}
    assert stats.due == 1
    assert any_mq.job("mail", job_id).state == "pending"
    assert "mail" in any_mq.queues()


def test_a_duplicate_id_is_refused_and_writes_nothing(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "first", job_id="j1")

    with pytest.raises(Duplicate):
        any_mq.enqueue("mail", "second", job_id="j1")

    assert any_mq.job("mail", "j1").payload == b"first"
    assert any_mq.stats("mail").counts["pending"] == 1
    assert len(any_mq.events("mail")) == 1


def test_a_new_jobs_id_is_12_letters_and_digits_and_names_it_in_its_key_and_set(mq: EchoMQ) -> None:
    ids = [mq.enqueue("mail", "x") for _ in range(200)] + mq.enqueue_many("mail", ["x"] * 800)

    assert all(re.fullmatch(r"[0-9A-Za-z]{12}", job_id) for job_id in ids), ids[:5]
    assert len(set(ids)) == 1000
    assert {bytes(m).decode() for m in mq.redis.zrange(QueueKeys("mail").pending, 0, -1)} == set(ids)  # type: ignore[arg-type]
    assert all(mq.redis.hget(QueueKeys("mail").job(job_id), "state") == b"pending" for job_id in ids[::97])
    # Every letter and digit turns up: the ids are not hex (or any narrower alphabet).
    assert set("".join(ids)) == set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def test_a_delayed_job_is_pending_but_not_due(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "later", delay_ms=60_000)

    stats = any_mq.stats("mail")
    assert (stats.counts["pending"], stats.due, stats.delayed) == (1, 0, 1)


@pytest.mark.parametrize("queue", ["", "a{b}", "a b", "a:b", "x" * 129, "tab\there"])
def test_bad_queue_names_are_refused(mq: EchoMQ, queue: str) -> None:
    with pytest.raises(InvalidInput):
        mq.enqueue(queue, "x")
    assert mq.redis.dbsize() == 0
