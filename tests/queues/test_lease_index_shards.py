"""On a cluster the lease index and the sweeper lock are cut per master's slot range, so no one slot stops recovery."""

from __future__ import annotations

import time

from redis.crc import key_slot

from queues import EchoMQ
from queues.cluster import queue_slot
from queues.connection import connect
from queues.keys import HASH_SLOTS, LEASE_INDEX, lease_index_shard, slot_tag, sweeper_lock_shard
from queues.lease_index import shard_of, shards_of
from queues.sweeper import ShardLocks, Sweeper, sweeper_lock
from tests.support.cluster_ops import owner_of, queue_per_master
from tests.support.redis_servers import RedisClusterNodes


def test_a_slot_tag_puts_a_key_in_its_slot() -> None:
    for slot in (0, 1, 5460, 5461, 10922, 10923, HASH_SLOTS - 1):
        assert key_slot(lease_index_shard(slot).encode()) == slot
        assert key_slot(sweeper_lock_shard(slot).encode()) == slot
        assert key_slot(slot_tag(slot).encode()) == slot


def test_a_standalone_redis_keeps_one_index(mq: EchoMQ) -> None:
    assert [shard.index_key for shard in shards_of(mq.redis)] == [LEASE_INDEX]
    assert shard_of(mq.redis, "mail").index_key == LEASE_INDEX


def test_each_master_keeps_the_index_and_the_lock_of_its_own_queues(redis_cluster: RedisClusterNodes) -> None:
    mq = EchoMQ(connect(redis_cluster.url), actor="test")
    shards = shards_of(mq.redis)
    assert [(s.first_slot, s.last_slot) for s in shards] == [(0, 5460), (5461, 10922), (10923, 16383)]
    for queue in queue_per_master(redis_cluster, "spread").values():
        shard = shard_of(mq.redis, queue)
        assert shard.first_slot <= queue_slot(queue) <= shard.last_slot
        owner = owner_of(redis_cluster, queue_slot(queue)).port
        assert owner_of(redis_cluster, key_slot(shard.index_key.encode())).port == owner
        assert owner_of(redis_cluster, key_slot(shard.lock_key.encode())).port == owner


def test_with_one_master_away_the_queues_of_the_others_are_recovered_in_the_next_round(
        partial_cluster: RedisClusterNodes) -> None:
    per_master = queue_per_master(partial_cluster, "lapse")
    mq = EchoMQ(connect(partial_cluster.url), actor="worker")
    claimed = {}
    for queue in per_master.values():
        mq.enqueue(queue, "x", job_id="j")
        claimed[queue] = mq.claim(queue, lease_ms=200)[0]
    # Each claim noted its queue in its own master's shard of the index.
    for queue in per_master.values():
        assert mq.redis.zscore(shard_of(mq.redis, queue).index_key, queue) == claimed[queue].lease_deadline_ms

    dead = partial_cluster.servers[1]  # not the one the URL names, which the console connects through
    dead_queue = per_master[dead.port]
    dead.kill()
    # Every lease has lapsed once the latest deadline is behind the servers' clock.
    time.sleep(max(0.0, max(c.lease_deadline_ms for c in claimed.values()) / 1000 - time.time()) + 0.3)

    lock = sweeper_lock(url=partial_cluster.url, lock_urls=[], interval_s=1, holder="console-1")
    assert isinstance(lock, ShardLocks)
    sweeper = Sweeper(EchoMQ(connect(partial_cluster.url), actor="sweeper"), lock, interval_s=1,
                      discovery_scans_per_s=0)
    reports = [sweeper.run_once() for _ in range(2)]

    assert reports[0] is not None and reports[0].recovered == 2
    for queue in set(per_master.values()) - {dead_queue}:
        assert mq.job(queue, "j").state == "pending"
        holder, _ = lock._lock(shard_of(mq.redis, queue)).inspect()
        assert holder is not None and holder.holder == "console-1"
    # The away master's shard was neither taken nor swept, and the page still names who sweeps.
    assert lock.inspect()[0] is not None
    sweeper.lock.release()
