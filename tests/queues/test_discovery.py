"""Discovery: a queue that another runtime wrote without registering it appears by itself, a bounded SCAN at a time."""

from __future__ import annotations

import time

from queues import EchoMQ, moves
from queues.discovery import QueueDiscovery
from queues.lease_index import shard_of
from queues.scripts import script
from queues.sweeper import sweep


def _unregistered_runtime(mq: EchoMQ, queue: str, *, lapsed: bool) -> None:
    """Runs the scripts as a runtime that neither registers its queue nor notes its claims in the lease index."""
    calls = [moves.enqueue(queue, "payload", job_id="job-1")]
    if lapsed:
        calls.append(moves.claim(queue, lease_ms=1))
    for call in calls:
        mq.redis.eval(script(call.script).source, len(call.keys), *call.keys, *call.args)
    time.sleep(0.01)


def _walk(discovery: QueueDiscovery) -> int:
    steps = 0
    while True:
        steps += 1
        if discovery.step().walked:
            return steps


def test_discovery_registers_a_queue_no_runtime_registered(any_mq: EchoMQ) -> None:
    any_mq.enqueue("known", "x")
    _unregistered_runtime(any_mq, "ghost", lapsed=False)
    assert any_mq.queues() == ["known"]

    _walk(QueueDiscovery(any_mq, count=5))

    assert any_mq.queues() == ["ghost", "known"]


def test_each_step_reads_a_bounded_part_of_the_keyspace(mq: EchoMQ) -> None:
    for n in range(30):
        _unregistered_runtime(mq, f"ghost-{n:02d}", lapsed=False)
    discovery = QueueDiscovery(mq, count=10)

    steps = _walk(discovery)

    # 30 job hashes, 30 pending sets and 30 event streams: about 90 / 10 steps, not one.
    assert steps >= 5
    assert len(mq.queues()) == 30
    assert discovery.walks == 1


def test_a_lapsed_lease_of_an_unindexed_queue_is_found_and_recovered(any_mq: EchoMQ) -> None:
    _unregistered_runtime(any_mq, "ghost", lapsed=True)
    assert sweep(any_mq).recovered == 0, "the sweeper cannot know of it yet"

    _walk(QueueDiscovery(any_mq))
    assert any_mq.redis.zscore(shard_of(any_mq.redis, "ghost").index_key, "ghost") == 0

    report = sweep(any_mq)

    assert (report.queues, report.recovered) == (1, 1)
    assert any_mq.job("ghost", "job-1").state == "pending"
    assert any_mq.redis.zscore(shard_of(any_mq.redis, "ghost").index_key, "ghost") is None
