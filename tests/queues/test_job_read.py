"""The job read is bounded in bytes: the payload whole only up to a limit, and the whole one only on request."""

from __future__ import annotations

import pytest

from queues import EchoMQ, QueueKeys, Refused


def test_a_small_payload_comes_back_whole(mq: EchoMQ) -> None:
    mq.enqueue("q", '{"to": "a@example.com"}', job_id="a")

    view = mq.job("q", "a")

    assert (view.payload, view.payload_whole, view.payload_length) == (b'{"to": "a@example.com"}', True, 23)
    assert "payload" not in view.fields and "history" not in view.fields
    assert view.warnings == []


def test_a_payload_over_the_limit_comes_back_as_its_preview_and_length(mq: EchoMQ) -> None:
    payload = b"x" * 100_000
    mq.enqueue("q", payload, job_id="a")

    view = mq.job("q", "a", payload_bytes=64 * 1024)

    assert (view.payload, view.payload_whole, view.payload_length) == (b"x" * 256, False, 100_000)
    assert mq.payload("q", "a") == payload


def test_the_whole_payload_is_refused_above_the_asked_limit_without_reading_it(mq: EchoMQ) -> None:
    mq.enqueue("q", b"x" * 10_000, job_id="a")

    with pytest.raises(Refused) as caught:
        mq.payload("q", "a", max_bytes=1000)

    assert caught.value.reason == "too_large" and "10000 bytes" in str(caught.value)


def test_a_field_longer_than_the_bound_is_named_with_its_length_only(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("a"), mapping={"state": "pending", "attempts": "0", "payload": "x", "note": "n" * 5000})
    mq.redis.zadd(keys.pending, {"a": 0})

    view = mq.job("q", "a")

    assert view.long_fields == {"note": 5000} and "note" not in view.fields


def test_a_key_of_another_type_is_reported_not_raised(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.rpush(keys.job("a"), "x")
    mq.redis.zadd(keys.failed, {"a": 0})

    view = mq.job("q", "a")

    assert (view.exists, view.key_type, view.scores) == (True, "list", {"failed": 0})
    assert view.warnings == ["the job's key is a list, not a hash; its id is in failed"]


def test_an_operator_can_delete_a_job_key_of_another_type(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.redis.set(keys.job("a"), "x")
    mq.redis.zadd(keys.failed, {"a": 0})

    with pytest.raises(Refused):
        mq.delete("q", "a", expect_state="failed")
    mq.delete("q", "a", expect_state="wrongtype:string")

    assert mq.redis.exists(keys.job("a")) == 0 and mq.redis.zscore(keys.failed, "a") is None
