"""The keyspace is spelled in one place: patterns escape the queue name, keys name their queue."""

from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput
from queues.keys import QueueKeys, queue_of_key


@pytest.mark.parametrize("name", ["a*b", "a?b", "a[b]", "a\\b"])
def test_the_job_pattern_of_a_queue_with_glob_characters_matches_only_its_own_jobs(mq: EchoMQ, name: str) -> None:
    mq.enqueue(name, "mine", job_id="j")
    mq.enqueue("aXb", "another queue's", job_id="j")
    mq.enqueue("ab", "another queue's", job_id="j")

    matched = {key.decode() for key in mq.redis.scan_iter(match=QueueKeys(name).job_pattern(), count=1000)}

    assert matched == {QueueKeys(name).job("j")}


@pytest.mark.parametrize("key, queue", [
    ("emq:{mail}:pending", "mail"), ("emq:{mail}:job:a:b", "mail"), ("emq:{a*b}:events", "a*b"),
    ("emq:queues", None), ("emq:lock:sweeper", None), ("emq:{}:pending", None), ("other:{mail}:pending", None),
    ("emq:{mail", None),
])
def test_a_key_names_its_queue_or_none(key: str, queue: str | None) -> None:
    assert queue_of_key(key) == queue


def test_a_callers_own_key_lives_in_the_queues_slot() -> None:
    assert QueueKeys("orders").own("client_ids") == "emq:{orders}:client_ids"


@pytest.mark.parametrize("name", ["pending", "events", "job", "worker", "paused", "failures", "m", "Caps", "a:b", "",
                                  "x" * 65])
def test_a_callers_own_key_may_not_take_a_name_the_protocol_uses_or_an_odd_one(name: str) -> None:
    with pytest.raises(InvalidInput, match="cannot name a caller's key"):
        QueueKeys("orders").own(name)
