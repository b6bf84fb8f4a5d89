"""The fault catalogue: every cause the why read names, produced for real with real workers, on standalone and on a
3-master cluster; the first reason is the right one and its evidence names the worker, the times and the counts."""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from queues import EchoMQ, QueueKeys, why
from queues.connection import connect
from queues.sweeper import start_sweeper
from tests.support.redis_servers import RedisClusterNodes, RedisServer
from tests.support.waiting import wait_until
from tests.support.why import start_worker, stop_worker

Q = "mail"


@dataclass
class Site:
    mq: EchoMQ
    url: str
    node: RedisServer  # the server that holds the queue's slot


@pytest.fixture(params=["standalone", "cluster"])
def site(request: pytest.FixtureRequest) -> Iterator[Site]:
    if request.param == "standalone":
        url = request.getfixturevalue("redis_url")
        node: RedisServer = request.getfixturevalue("redis_server")
    else:
        cluster: RedisClusterNodes = request.getfixturevalue("redis_cluster")
        for server in cluster.servers:
            try:
                server.client().flushall()
            except redis.exceptions.ReadOnlyError:
                pass
        url = cluster.url
    mq = EchoMQ(connect(url), actor="test")
    if request.param == "cluster":
        port = int(mq.location(Q).node.rpartition(":")[2])
        node = next(s for s in cluster.servers if s.port == port)
    yield Site(mq, url, node)
    mq.close()


def worker_id(process: object) -> str:
    return f"{socket.gethostname()}:{process.pid}"  # type: ignore[attr-defined]


def queue_top(site: Site) -> why.Reason:
    return site.mq.queue_why(Q).top


def job_why(site: Site, job_id: str) -> why.Why:
    return site.mq.job_why(Q, job_id)


def wait_for_queue(site: Site, code: str, timeout: float = 40) -> why.Reason:
    seen: list[str] = []

    def reached() -> bool:
        seen.append(queue_top(site).code)
        return seen[-1] == code

    try:
        wait_until(reached, timeout, f"the queue's first reason to be {code}")
    except AssertionError as error:
        raise AssertionError(f"{error}; it said {site.mq.queue_why(Q).as_dict()}") from None
    return queue_top(site)


def test_a_paused_queue_with_a_live_worker_says_paused_by_whom_and_why(site: Site, tmp_path: Path) -> None:
    worker = start_worker(site.url, Q, "quick", tmp_path)
    try:
        wait_until(lambda: site.mq.run(why.queue_evidence(Q))["live_workers"] == 1, 30, "the worker to register")
        site.mq.pause(Q, reason="db migration")
        site.mq.enqueue(Q, "x", job_id="j")

        top = queue_top(site)
        job = job_why(site, "j")
    finally:
        stop_worker(worker)
    assert top.code == "paused" and (top.evidence["paused_by"], top.evidence["paused_reason"]) == ("test", "db migration")
    assert job.top.code == "paused" and job.reasons[-1].code == "waiting_behind"


def test_a_stopped_worker_is_gone_after_two_missed_heartbeats_while_it_holds_the_lease(site: Site,
                                                                                      tmp_path: Path) -> None:
    site.mq.enqueue(Q, "x", job_id="held")
    worker = start_worker(site.url, Q, "block", tmp_path, lease_ms=6000)  # beats every 2 s
    try:
        wait_until(lambda: job_why(site, "held").top.code == "leased", 30, "the worker to claim and beat")
        site.mq.enqueue(Q, "x", job_id="next")
        worker.send_signal(signal.SIGSTOP)
        wait_until(lambda: "worker_gone" in [r.code for r in job_why(site, "held").reasons], 30,
                   "the job's worker to count as gone")
        answer = job_why(site, "held")
        queue = queue_top(site)
    finally:
        stop_worker(worker)
    gone = next(r for r in answer.reasons if r.code == "worker_gone")
    # Its lease may lapse in the meantime (it is not extended either); whichever comes first is first.
    assert answer.top.code in ("worker_gone", "lease_lapsed")
    assert gone.evidence["worker"] == worker_id(worker) and gone.evidence["heartbeat_age_ms"] > 4000
    assert queue.code == "no_live_worker"
    assert [w["id"] for w in queue.evidence["gone"]] == [worker_id(worker)] or \
        queue.evidence["last_seen_id"] == worker_id(worker)


def test_a_killed_worker_leaves_no_live_worker_and_its_lapsed_lease_waits_for_a_sweeper(site: Site,
                                                                                       tmp_path: Path) -> None:
    site.mq.enqueue(Q, "x", job_id="held")
    worker = start_worker(site.url, Q, "block", tmp_path, lease_ms=1500)
    try:
        wait_until(lambda: job_why(site, "held").top.code == "leased", 30, "the worker to claim")
        site.mq.enqueue(Q, "x", job_id="next")
        worker.send_signal(signal.SIGKILL)
        worker.wait(10)
        top = wait_for_queue(site, "no_live_worker")
        wait_until(lambda: job_why(site, "held").top.code == "lease_lapsed", 30, "the lease to lapse")
        answer = job_why(site, "held")
    finally:
        stop_worker(worker)
    named = [w["id"] for w in top.evidence["gone"]] + [top.evidence["last_seen_id"]]
    assert worker_id(worker) in named
    assert [r.code for r in answer.reasons] == ["lease_lapsed", "sweeper_not_running", "worker_gone"]
    assert answer.top.evidence["worker"] == worker_id(worker) and answer.top.evidence["lapsed_ms"] >= 0


def test_workers_at_full_concurrency_with_slow_handlers_are_at_capacity(site: Site, tmp_path: Path) -> None:
    site.mq.enqueue_many(Q, ["x"] * 5)
    worker = start_worker(site.url, Q, "block", tmp_path, concurrency=2)
    try:
        top = wait_for_queue(site, "at_capacity")
    finally:
        stop_worker(worker)
    assert (top.evidence["held"], top.evidence["concurrency"], top.evidence["due"]) == (2, 2, 3)
    assert [w["id"] for w in top.evidence["workers"]] == [worker_id(worker)]


def test_enqueueing_faster_than_the_workers_drain_says_arrivals_outpace_service(site: Site, tmp_path: Path) -> None:
    worker = start_worker(site.url, Q, "slow", tmp_path)  # 4 jobs a second at most
    stop = threading.Event()

    def produce() -> None:
        producer = EchoMQ(connect(site.url), actor="producer")
        while not stop.is_set():
            producer.enqueue_many(Q, ["x"] * 2)
            stop.wait(0.05)
        producer.close()

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        top = wait_for_queue(site, "arrivals_outpace_service")
    finally:
        stop.set()
        thread.join(10)
        stop_worker(worker)
    assert top.evidence["arrival_per_s"] > top.evidence["claim_per_s"] > 0 and top.evidence["due"] > 0
    assert top.evidence["eta_ms"] is None and "not draining" in top.text


def test_a_redis_over_maxmemory_is_named_as_refusing_the_workers_claims(site: Site, tmp_path: Path) -> None:
    worker = start_worker(site.url, Q, "quick", tmp_path)
    client = site.node.client()
    try:
        wait_until(lambda: site.mq.run(why.queue_evidence(Q))["live_workers"] == 1, 30, "the worker to register")
        # Every claim is refused whole before it runs, whether or not a job is due.
        # 1 MiB is below what an empty Redis uses: it stays over maxmemory however its buffers come and go
        # (a limit just under a ballast's size was not: the SET's own query buffer, freed later, was counted).
        client.config_set("maxmemory", 1024 * 1024)
        top = wait_for_queue(site, "claims_refused")
    finally:
        client.config_set("maxmemory", 0)
        stop_worker(worker)
    assert top.evidence["kind"] == "oom" and top.evidence["worker"] == worker_id(worker)
    assert "out of memory" in top.evidence["error"] and top.evidence["refused_times"] >= 1


def test_a_planted_corrupt_job_is_moved_aside_by_the_workers_claim_and_says_why(site: Site, tmp_path: Path) -> None:
    keys = QueueKeys(Q)
    site.mq.redis.hset(keys.job("bad"), mapping={"state": "done ", "attempts": "0", "payload": "x"})
    site.mq.redis.zadd(keys.pending, {"bad": 1})
    worker = start_worker(site.url, Q, "quick", tmp_path)
    try:
        wait_until(lambda: job_why(site, "bad").top.code == "corrupt", 30, "the claim to set the job aside")
    finally:
        stop_worker(worker)
    top = job_why(site, "bad").top
    assert 'corrupt: state "done " in pending' in top.text and top.evidence["state"] == "failed"


def test_a_stopped_sweeper_leaves_lapsed_leases_waiting_and_says_so(site: Site) -> None:
    sweeper = start_sweeper(url=site.url, interval_s=0.2, holder="console-7")
    try:
        site.mq.enqueue(Q, "x", job_id="j")
        site.mq.claim(Q, lease_ms=100)
        wait_until(lambda: site.mq.job(Q, "j").state == "pending", 30, "the running sweeper to recover the lease")
    finally:
        sweeper.stop()
    site.mq.claim(Q, lease_ms=100)
    wait_until(lambda: site.mq.stats(Q).lapsed == 1, 30, "the lease to lapse")

    top = queue_top(site)

    assert top.code == "sweeper_not_running" and "emq:lock:sweeper" in top.text
    assert (top.evidence["lapsed"], top.evidence["oldest_lapsed_id"], top.evidence["sweeper_holder"]) == (1, "j", None)


def test_delayed_jobs_are_due_later_and_the_queue_has_nothing_due(site: Site, tmp_path: Path) -> None:
    worker = start_worker(site.url, Q, "quick", tmp_path)
    try:
        site.mq.enqueue(Q, "x", job_id="later", delay_ms=120_000)
        due_ms = int(site.mq.redis.zscore(QueueKeys(Q).pending, "later"))  # type: ignore[arg-type]
        wait_until(lambda: site.mq.run(why.queue_evidence(Q))["live_workers"] == 1, 30, "the worker to register")
        top, job = queue_top(site), job_why(site, "later").top
    finally:
        stop_worker(worker)
    assert top.code == "not_due" and (top.evidence["delayed"], top.evidence["next_due_ms"]) == (1, due_ms)
    assert job.code == "delayed" and job.evidence["due_ms"] == due_ms


def test_a_job_that_failed_every_attempt_says_attempts_exhausted_with_its_last_error(site: Site,
                                                                                   tmp_path: Path) -> None:
    site.mq.enqueue(Q, "x", job_id="j", max_attempts=2)
    worker = start_worker(site.url, Q, "boom", tmp_path)
    try:
        wait_until(lambda: job_why(site, "j").top.code == "attempts_exhausted", 40, "both attempts to fail")
    finally:
        stop_worker(worker)
    top = job_why(site, "j").top
    assert (top.evidence["attempts"], top.evidence["max_attempts"]) == (2, 2)
    assert "smtp said 550 for j" in top.text and "RuntimeError" in top.evidence["last_error"]
