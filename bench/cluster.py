"""Job lifecycle throughput on a 3-master cluster against a single node, queues spread over the masters.

The same run starts a standalone redis-server (the baseline) and a cluster of
3 masters (no replicas) on loopback, and on each drives the same work: one
queue per master (on the single node, the same three queues), ``--jobs`` jobs
each, one process per queue. A third cluster, with one replica per master,
runs a quarter of the jobs without and then with ``wait_replicas=1`` (WAIT
after every move). Each process enqueues its jobs in pipelined
chunks, then claims and completes them until its queue is empty, either one
job per round trip or ``--batch`` per claim with pipelined completes.

    python -m bench.cluster                     # 6000 jobs per queue
    python -m bench.cluster --jobs 20000 --batch 100
"""

from __future__ import annotations

import argparse
import multiprocessing
import platform
import time
from typing import Any

from queues import EchoMQ, NothingToClaim, moves
from tests.support.cluster_ops import queue_per_master, wait_replicas_in_sync
from tests.support.redis_servers import RedisClusterNodes, RedisServer


def _enqueue(url: str, queue: str, jobs: int, wait: int) -> int:
    mq = EchoMQ.from_url(url, actor="bench", wait_replicas=wait)
    ids = mq.enqueue_many(queue, [b"x" * 64] * jobs, chunk=500)
    return len(ids)


def _drain(url: str, queue: str, batch: int, wait: int) -> int:
    mq = EchoMQ.from_url(url, actor="bench", wait_replicas=wait)
    done = 0
    while True:
        try:
            jobs = mq.claim(queue, count=batch, lease_ms=600_000)
        except NothingToClaim:
            return done
        if batch == 1:
            mq.complete(queue, jobs[0].id, jobs[0].token)
            done += 1
            continue
        results = mq.run_many([moves.complete(queue, j.id, j.token, actor=mq.actor) for j in jobs])
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise SystemExit(f"benchmark invalid: {len(errors)} completes failed: {errors[:2]}")
        done += len(jobs)


def _parallel(target: Any, arg_sets: list[tuple[Any, ...]]) -> tuple[float, int]:
    with multiprocessing.get_context("fork").Pool(len(arg_sets)) as pool:
        start = time.perf_counter()
        counts = pool.starmap(target, arg_sets)
        return time.perf_counter() - start, sum(counts)


def _run(what: str, url: str, queues: list[str], jobs: int, batch: int, wait: int = 0) -> None:
    EchoMQ.from_url(url).redis.flushall()
    seconds, count = _parallel(_enqueue, [(url, q, jobs, wait) for q in queues])
    expected = jobs * len(queues)
    if count != expected:
        raise SystemExit(f"benchmark invalid: enqueued {count} of {expected}")
    print(f"{what + ': enqueue (pipelined chunks of 500)':<80} {count / seconds:>9,.0f} jobs/s", flush=True)
    # One job per round trip is slow: time it over a tenth of the jobs; the batches then drain the rest.
    seconds, count = _parallel(_drain_some, [(url, q, max(jobs // 10, 1), wait) for q in queues])
    print(f"{what + ': claim + complete, 1 job per round trip':<80} {count / seconds:>9,.0f} jobs/s", flush=True)
    seconds, count = _parallel(_drain, [(url, q, batch, wait) for q in queues])
    print(f"{what + f': claim {batch} + pipelined completes':<80} {count / seconds:>9,.0f} jobs/s", flush=True)
    mq = EchoMQ.from_url(url)
    done = sum(mq.stats(q).counts["done"] for q in queues)
    if done != expected:
        raise SystemExit(f"benchmark invalid: {done} of {expected} jobs done")


def _drain_some(url: str, queue: str, limit: int, wait: int) -> int:
    mq = EchoMQ.from_url(url, actor="bench", wait_replicas=wait)
    for _ in range(limit):
        job = mq.claim(queue, lease_ms=600_000)[0]
        mq.complete(queue, job.id, job.token)
    return limit


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=6000, help="jobs per queue")
    parser.add_argument("--batch", type=int, default=50)
    args = parser.parse_args()
    single = RedisServer().start()
    cluster = RedisClusterNodes(masters=3).start()
    replicated = RedisClusterNodes(masters=3, replicas=1, server_args=["--repl-diskless-sync-delay", "0"]).start()
    wait_replicas_in_sync(replicated)
    try:
        queues = sorted(queue_per_master(cluster, "bench").values())
        print(f"# {platform.node()} python {platform.python_version()}; queues {', '.join(queues)} "
              f"(one per cluster master); {args.jobs} jobs per queue; one process per queue", flush=True)
        _run("single node (baseline)", single.url, queues, args.jobs, args.batch)
        _run("cluster, 3 masters", cluster.url, queues, args.jobs, args.batch)
        spread = sorted(queue_per_master(replicated, "bench").values())
        _run("3 masters + 1 replica each, no WAIT", replicated.url, spread, args.jobs // 4, args.batch)
        _run("3 masters + 1 replica each, WAIT 1 after every move", replicated.url, spread, args.jobs // 4,
             args.batch, wait=1)
    finally:
        single.cleanup()
        cluster.cleanup()
        replicated.cleanup()


if __name__ == "__main__":
    main()
