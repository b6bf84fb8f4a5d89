"""A queue's slot moves to another master (MIGRATE, as redis-cli --cluster reshard does) while workers run."""

from __future__ import annotations

import time

from queues import ClaimedJob, EchoMQ
from queues.cluster import cluster_view, queue_placements, queue_slot
from queues.connection import connect
from queues.integrity import check_queue
from queues.worker import Worker
from tests.support.background import Background, serve_in_thread, waiting_worker
from tests.support.cluster_ops import eventually, masters, move_slot, owner_of
from tests.support.redis_servers import RedisClusterNodes
from tests.support.waiting import wait_until

JOBS = 400


def test_a_queue_keeps_working_while_its_slot_moves_to_another_master(ha_cluster: RedisClusterNodes) -> None:
    queue = "invoices"
    slot = queue_slot(queue)
    source = owner_of(ha_cluster, slot)
    target = next(m for m in masters(ha_cluster) if m is not source)
    seed = ha_cluster.servers[0]
    producer = EchoMQ(connect(seed.url), actor="producer")
    ids = producer.enqueue_many(queue, [f"invoice {i}" for i in range(JOBS)])

    def handle(job: ClaimedJob) -> None:
        time.sleep(0.002)

    worker = Worker(queue=queue, handler=handle, concurrency=4, lease_ms=1500, batch=4, url=seed.url, actor="worker")
    acked: list[tuple[str, str, int, float]] = []
    running = [Background(serve_in_thread(worker)), Background(waiting_worker(seed.url, [queue], acked))]
    wait_until(lambda: worker.stats.completed + len(acked) >= JOBS // 4, 60, "a quarter of the jobs to be done")

    moved_keys = move_slot(ha_cluster, slot, target, batch=20, pause_s=0.01)
    moved_at = time.monotonic()
    completed_before = worker.stats.completed

    wait_until(lambda: eventually(lambda: producer.stats(queue).counts["done"]) == JOBS, 60, "every job to be done")
    for task in running:
        task.stop()

    assert moved_keys > JOBS // 2
    assert owner_of(ha_cluster, slot) is target
    assert source.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    assert worker.stats.completed > completed_before, "the worker followed the slot to its new master"
    assert any(t > moved_at for *_, t in acked), "the WAIT path followed MOVED to the new master"
    for q, job_id, attempts, _ in acked:
        assert producer.job(q, job_id).attempts == str(attempts)
    assert check_queue(producer, queue).ok
    assert producer.stats(queue).counts == {"pending": 0, "active": 0, "done": JOBS, "failed": 0}
    assert all(producer.job(queue, job_id).state == "done" for job_id in ids)
    placement = queue_placements([queue], cluster_view(producer.redis))[0]
    assert (placement.address, placement.available) == (f"127.0.0.1:{target.port}", True)
