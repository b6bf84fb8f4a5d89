"""Workers, a sweeper and console reads on a 3x2 cluster while a master is SIGKILLed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from queues import ClaimedJob, EchoMQ, Unavailable
from queues.cluster import cluster_view, queue_placements, queue_slot
from queues.connection import connect
from queues.integrity import check_queue
from queues.keys import QueueKeys
from queues.lease_index import shard_of
from queues.scripts import script
from queues.sweeper import Sweeper, sweeper_lock
from queues.worker import Worker
from tests.support.background import Background, serve_in_thread, waiting_worker
from tests.support.cluster_ops import eventually, owner_of, queue_per_master, replica_of, role, wait_cluster_ok
from tests.support.redis_servers import RedisClusterNodes
from tests.support.waiting import wait_until

JOBS_PER_QUEUE = 300


def _reader(url: str, queues: list[str], log: list[tuple[float, bool]]) -> Callable[[threading.Event], None]:
    """What the console does: stats of every queue and a page of each, again and again."""
    def loop(stop: threading.Event) -> None:
        mq = EchoMQ(connect(url), actor="console")
        while not stop.is_set():
            try:
                stats = mq.stats_many(queues)
                pages = [mq.page(q, "done", limit=10) for q in queues]
                log.append((time.monotonic(), all(not isinstance(s, Exception) for s in stats) and len(pages) == 3))
            except Unavailable:
                log.append((time.monotonic(), False))
            time.sleep(0.02)
    return loop


def _what_is_left(mq: EchoMQ, queues: list[str], workers: list[Worker], running: list[Background],
                  sweeper: Sweeper, limit: int = 20) -> str:
    """Per queue, the counts and up to ``limit`` jobs of each state but done (state, attempts, lease deadline
    against the server's clock, last error; the queue's score in its lease index shard), and each loop's health:
    what a timeout needs to tell a stuck job, or one that ran out of attempts, from a slow machine."""
    lines: list[str] = []
    for q in queues:
        try:
            shard = shard_of(mq.redis, q)
            score = mq.redis.zscore(shard.index_key, q)
            lines.append(f"{q}: {mq.stats(q).counts}; lease index {shard.index_key} score {score}")
            for state in ("pending", "active", "failed"):
                for raw in mq.redis.zrange(getattr(QueueKeys(q), state), 0, limit - 1):
                    job = mq.job(q, raw.decode() if isinstance(raw, bytes) else str(raw))
                    deadline = job.scores.get("active")
                    lapsed = "" if deadline is None else f", lease deadline {deadline} ({deadline - job.now_ms:+d} ms)"
                    lines.append(f"  {state} {job.id}: state {job.fields.get('state', b'?').decode()}, attempts "
                                 f"{job.fields.get('attempts', b'?').decode()}{lapsed}, server time {job.now_ms}, "
                                 f"last error {job.fields.get('last_error', b'').decode()!r}")
        except Exception as error:  # a diagnostic: say what could not be read and go on
            lines.append(f"{q}: could not read: {error!r}")
    for w, task in zip(workers, running):
        lines.append(f"worker {w.queue}: alive {task.thread.is_alive()} error {task.error!r} {w.stats}")
    lines += [f"{task.thread.name}: alive {task.thread.is_alive()} error {task.error!r}" for task in running[len(workers):]]
    lines.append(f"sweeper: alive {sweeper._thread is not None and sweeper._thread.is_alive()} last {sweeper.last}")
    return "\n".join(lines)


def test_workers_and_reads_carry_on_through_a_master_failover_and_lose_nothing(ha_cluster: RedisClusterNodes) -> None:
    seed = ha_cluster.servers[0]
    queues = sorted(queue_per_master(ha_cluster, "orders").values())
    victim_queue = next(q for q in queues if owner_of(ha_cluster, queue_slot(q)) is not seed)
    victim = owner_of(ha_cluster, queue_slot(victim_queue))
    heir = replica_of(ha_cluster, victim)
    # A queue that only the WAIT worker serves, filled after the failover: it must complete jobs there after the
    # failover by construction, however fast the ordinary workers empty the others. On a master that keeps its
    # replica (the heir has none left to acknowledge a WAIT).
    waiting_queue = queue_per_master(ha_cluster, "waiting")[seed.port]
    claim_sha = script("claim").sha
    assert heir.client().script_exists(claim_sha) == [False]

    producer = EchoMQ(connect(seed.url), actor="producer", wait_replicas=1, wait_timeout_ms=2000)
    enqueued = {q: producer.enqueue_many(q, [f"{q} {i}" for i in range(JOBS_PER_QUEUE)]) for q in queues}

    def handle(job: ClaimedJob) -> None:
        time.sleep(0.002)

    workers = [Worker(queue=q, handler=handle, concurrency=4, lease_ms=1500, batch=4, url=seed.url,
                      actor=f"worker-{q}") for q in queues]
    acked: list[tuple[str, str, int, float]] = []
    reads: list[tuple[float, bool]] = []
    mq = EchoMQ(connect(seed.url), actor="sweeper")
    sweeper = Sweeper(mq, sweeper_lock(url=seed.url, lock_urls=[], interval_s=0.3, holder="console-1"), interval_s=0.3)
    running = [Background(serve_in_thread(w)) for w in workers]
    running += [Background(waiting_worker(seed.url, [*queues, waiting_queue], acked)),
                Background(_reader(seed.url, queues, reads))]
    sweeper.start()

    wait_until(lambda: sum(w.stats.completed for w in workers) + len(acked) >= JOBS_PER_QUEUE, 60,
               "a third of the jobs to be done")
    killed_at = time.monotonic()
    completed_before = [w.stats.completed for w in workers]
    victim.kill()
    wait_until(lambda: role(heir) == "master", 20, "the replica to take over")
    wait_cluster_ok(ha_cluster)
    waiting_jobs = eventually(lambda: producer.enqueue_many(waiting_queue, [f"after {i}" for i in range(20)]))

    def all_done() -> bool:
        return (all(mq.stats(q).counts["done"] == JOBS_PER_QUEUE for q in queues)
                and mq.stats(waiting_queue).counts["done"] == len(waiting_jobs))
    try:
        wait_until(lambda: eventually(all_done), 90, "every job to be done")
    except AssertionError as timed_out:
        left = _what_is_left(mq, [*queues, waiting_queue], workers, running, sweeper)
        raise AssertionError(f"{timed_out}\n{left}") from timed_out
    sweeper.stop()
    for task in running:
        task.stop()

    victim_worker = workers[queues.index(victim_queue)]
    assert victim_worker.stats.connection_errors > 0, "the worker whose master died saw it"
    assert all(w.stats.completed > before for w, before in zip(workers, completed_before)), \
        "every worker completed jobs after the failover, without a restart"
    assert any(ok and t > killed_at for t, ok in reads), "the console's reads succeed again after the failover"
    assert {job_id for q, job_id, *_ in acked if q == waiting_queue} == set(waiting_jobs), \
        "the WAIT worker completed every job of its own queue after the failover"
    assert heir.client().script_exists(claim_sha) == [True], "the new master got the scripts by EVAL on NOSCRIPT"
    for q in queues:
        assert check_queue(mq, q).ok
        assert mq.stats(q).counts == {"pending": 0, "active": 0, "done": JOBS_PER_QUEUE, "failed": 0}
        views = [mq.job(q, job_id) for job_id in enqueued[q]]
        assert all(v.state == "done" and not v.warnings for v in views), "every acknowledged enqueue survived"
    for q, job_id, attempts, _ in acked:
        # Had the completion been lost, the job would have been claimed again, with more attempts.
        assert mq.job(q, job_id).attempts == str(attempts), "a completion a replica acknowledged was lost"

    view = cluster_view(mq.redis)
    placements = {p.queue: p for p in queue_placements(queues, view)}
    assert all(p.available for p in placements.values())
    assert placements[victim_queue].address == f"127.0.0.1:{heir.port}"
    dead = next(n for n in view.nodes if n.address == f"127.0.0.1:{victim.port}")
    assert dead.state == "fail"
