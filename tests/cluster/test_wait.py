"""Asynchronous replication can lose an acknowledged move at failover; WAIT tells the caller when it might."""

from __future__ import annotations

import asyncio
import signal

import pytest

from queues import AsyncEchoMQ, EchoMQ, moves, reads
from queues.cluster import queue_slot
from queues.connection import connect, connect_async
from queues.errors import NotReplicated
from queues.worker import Worker
from tests.support.cluster_ops import eventually, owner_of, replica_of, role, wait_cluster_ok
from tests.support.redis_servers import RedisClusterNodes
from tests.support.waiting import wait_until, wait_until_async

# More than the loopback socket buffers hold (tcp_rmem max is 32 MB here), so
# the writes after it stay in the master's memory while the replica is stopped.
FILLER_BYTES = 48 * 1024 * 1024


def test_a_move_acknowledged_without_wait_is_lost_at_failover_and_wait_says_so(ha_cluster: RedisClusterNodes) -> None:
    queue = "billing"
    master = owner_of(ha_cluster, queue_slot(queue))
    replica = replica_of(ha_cluster, master)
    seed = next(s for s in ha_cluster.servers if s not in (master, replica))
    plain = EchoMQ(connect(seed.url), actor="plain")
    # Generous: on a loaded 2-core machine a healthy replica may take a few hundred ms to ack.
    waiting = EchoMQ(connect(seed.url), actor="waiting", wait_replicas=1, wait_timeout_ms=2000)

    for job_id in ("safe", "unsafe"):
        waiting.enqueue(queue, job_id, job_id=job_id)
    claimed = {job.id: job for job in waiting.claim(queue, count=2, lease_ms=60_000)}
    waiting.complete(queue, "safe", claimed["safe"].token)

    replica.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
    plain.redis.set("emq:{billing}:filler", b"x" * FILLER_BYTES)
    assert plain.complete(queue, "unsafe", claimed["unsafe"].token)
    with pytest.raises(NotReplicated) as refused:
        waiting.enqueue(queue, "told", job_id="told")
    assert (refused.value.result, refused.value.acked, refused.value.wanted) == ("told", 0, 1)
    assert plain.job(queue, "unsafe").state == "done"

    master.kill()
    replica.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
    wait_until(lambda: role(replica) == "master", 20, "the replica to take over")
    wait_cluster_ok(ha_cluster)

    after = EchoMQ(connect(seed.url), actor="after")
    assert after.job(queue, "safe").state == "done"
    lost = after.job(queue, "unsafe")
    assert (lost.state, lost.warnings) == ("active", [])
    assert not after.job(queue, "told").exists
    assert after.stats(queue).counts == {"pending": 0, "active": 1, "done": 1, "failed": 0}


def test_with_a_healthy_replica_every_move_waited_for_survives_the_failover(ha_cluster: RedisClusterNodes) -> None:
    queue = "ledger"
    master = owner_of(ha_cluster, queue_slot(queue))
    replica = replica_of(ha_cluster, master)
    seed = next(s for s in ha_cluster.servers if s not in (master, replica))
    waiting = EchoMQ(connect(seed.url), actor="waiting", wait_replicas=1, wait_timeout_ms=2000)

    ids = waiting.enqueue_many(queue, [f"job {i}" for i in range(50)])
    for job in waiting.claim(queue, count=30, lease_ms=60_000):
        waiting.complete(queue, job.id, job.token)
    master.kill()
    wait_until(lambda: role(replica) == "master", 20, "the replica to take over")
    wait_cluster_ok(ha_cluster)

    stats = eventually(lambda: waiting.stats(queue))
    assert stats.counts == {"pending": 20, "active": 0, "done": 30, "failed": 0}
    assert all(waiting.job(queue, job_id).warnings == [] for job_id in ids)


async def test_the_async_client_follows_each_move_with_wait_and_says_when_no_replica_acknowledged(
        ha_cluster: RedisClusterNodes) -> None:
    queue = "billing"
    master = owner_of(ha_cluster, queue_slot(queue))
    replica = replica_of(ha_cluster, master)
    seed = next(s for s in ha_cluster.servers if s not in (master, replica))
    healthy = AsyncEchoMQ(connect_async(seed.url), actor="waiting", wait_replicas=1, wait_timeout_ms=2000)
    hurried = AsyncEchoMQ(connect_async(seed.url), actor="hurried", wait_replicas=1, wait_timeout_ms=300)
    try:
        assert await healthy.enqueue(queue, "safe", job_id="safe") == "safe"
        assert await healthy.run_many([moves.enqueue(queue, "x", job_id=f"safe-{n}") for n in range(3)]) == [
            "safe-0", "safe-1", "safe-2"]

        replica.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        with pytest.raises(NotReplicated) as refused:
            await hurried.enqueue(queue, "told", job_id="told")
        assert (refused.value.result, refused.value.acked, refused.value.wanted) == ("told", 0, 1)
        answers = await hurried.run_many([moves.enqueue(queue, "x", job_id="late"), reads.stats(queue)])
        assert isinstance(answers[0], NotReplicated) and answers[0].result == "late"
        # A read is not followed by WAIT, and a read in the same batch is not reported as unreplicated.
        assert answers[1].counts["pending"] == 6
        replica.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
    finally:
        await healthy.close()
        await hurried.close()


async def test_a_worker_with_wait_replicas_counts_the_moves_no_replica_acknowledged(
        ha_cluster: RedisClusterNodes) -> None:
    queue = "billing"
    master = owner_of(ha_cluster, queue_slot(queue))
    replica = replica_of(ha_cluster, master)
    seed = next(s for s in ha_cluster.servers if s not in (master, replica))
    mq = EchoMQ(connect(seed.url), actor="producer")
    mq.enqueue_many(queue, [f"job {n}" for n in range(20)])
    worker = Worker(queue=queue, handler=lambda job: None, url=seed.url, wait_replicas=1, wait_timeout_ms=300,
                    poll_ms=50)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    try:
        await wait_until_async(lambda: serving.done() or mq.stats(queue).counts["done"] == 20, 30, "20 jobs done")
        assert not serving.done(), "the worker stopped early"
        assert worker.stats.not_replicated == 0

        replica.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        mq.enqueue_many(queue, [f"late {n}" for n in range(3)])
        await wait_until_async(lambda: serving.done() or mq.stats(queue).counts["done"] == 23, 30, "23 jobs done")
        assert not serving.done(), "the worker stopped early"
        replica.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
    finally:
        stop.set()
        stats = await asyncio.wait_for(serving, 30)
        mq.close()
    assert stats.completed == 23 and stats.not_replicated >= 3

