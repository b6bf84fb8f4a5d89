from __future__ import annotations

from queues import EchoMQ, QueueKeys
from queues.integrity import check_queue


def test_a_healthy_queue_has_no_problems(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("q", ["x"] * 30)
    for job in any_mq.claim("q", count=10):
        any_mq.complete("q", job.id, job.token)

    report = check_queue(any_mq, "q", step=7)

    assert report.ok and report.looked_at == 30


def test_it_reports_every_kind_of_torn_job(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    r = mq.redis
    r.zadd(keys.pending, {"ghost": 1})                                  # in a set, no hash
    r.hset(keys.job("twice"), mapping={"state": "pending", "attempts": "0", "payload": ""})
    r.zadd(keys.pending, {"twice": 1})
    r.zadd(keys.done, {"twice": 1})                                     # in two sets
    r.hset(keys.job("liar"), mapping={"state": "done", "attempts": "1", "payload": ""})
    r.zadd(keys.active, {"liar": 1})                                    # state names another set
    r.hset(keys.job("orphan"), mapping={"state": "pending", "attempts": "0", "payload": ""})  # in no set
    r.hset(keys.job("odd"), mapping={"state": "sleeping", "attempts": "lots", "payload": ""})
    r.zadd(keys.failed, {"odd": 1})

    problems = {(p.id, p.problem) for p in check_queue(mq, "q", step=2).problems}

    assert problems == {("ghost", "missing_hash"), ("twice", "multiple_sets"), ("liar", "state_mismatch"),
                        ("orphan", "no_set"), ("odd", "unknown_state"), ("odd", "bad_attempts")}


def test_a_job_key_of_another_type_is_reported_not_an_error(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.set(keys.job("text"), "x")
    mq.redis.zadd(keys.pending, {"text": 1})
    mq.redis.rpush(keys.job("listed"), "x")                             # in no set: found by the walk of keys

    problems = {(p.id, p.problem, p.detail) for p in check_queue(mq, "q").problems}

    assert problems == {("text", "wrong_type", "string"), ("listed", "wrong_type", "list")}


def test_queue_names_with_glob_characters_only_see_their_own_jobs(mq: EchoMQ) -> None:
    mq.redis.hset(QueueKeys("a*").job("orphan-of-a-star"), mapping={"state": "pending"})
    mq.redis.hset(QueueKeys("ab").job("orphan-of-ab"), mapping={"state": "pending"})

    problems = check_queue(mq, "a*").problems

    assert [p.id for p in problems] == ["orphan-of-a-star"]
