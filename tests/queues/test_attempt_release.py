"""Every attempt knows its worker's release: the claim records the release (and the host, when the worker id
does not already begin with it) from the worker's registry entry, in the job's compact history."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from queues import EchoMQ, QueueKeys, moves
from queues.moves import Report
from queues.worker import Worker
from queues.worker.settings import detect_release

REGISTER: dict[str, Any] = dict(ttl_ms=60_000, pid=1, runtime="python 3.11 emq", concurrency=1, started_ms=1, held=[])


def claims(mq: EchoMQ, job_id: str) -> list[tuple[str, str, str]]:
    return [(e.actor, e.release, e.host) for e in reversed(mq.job_events("q", job_id)) if e.move == "claim"]


def test_a_claim_records_the_release_its_worker_registered_and_takes_the_host_from_the_id(redis_url: str,
                                                                                       mq: EchoMQ) -> None:
    worker = EchoMQ.from_url(redis_url, actor="web-1:4242")
    worker.run(moves.register_worker("q", "web-1:4242", host="web-1", release="v1.4.2-3-gabc1234", **REGISTER))
    mq.enqueue("q", "{}", job_id="a")

    [job] = worker.claim("q")
    worker.close()

    assert claims(mq, "a") == [("web-1:4242", "v1.4.2-3-gabc1234", "web-1")]
    history = mq.redis.hget(QueueKeys("q").job("a"), "history")
    assert isinstance(history, bytes)
    assert history.endswith(b"\t1")  # the release by its number
    assert b"web-1 " not in history  # the host is in the id already


def test_a_worker_id_without_its_host_has_the_host_recorded_too(redis_url: str, mq: EchoMQ) -> None:
    worker = EchoMQ.from_url(redis_url, actor="node-7")
    worker.run(moves.register_worker("q", "node-7", host="box 2", release="2.0", **REGISTER))
    mq.enqueue("q", "{}", job_id="a")

    worker.claim("q")
    worker.close()

    assert claims(mq, "a") == [("node-7", "2.0", "box 2")]


def test_a_runtime_that_registers_no_release_is_release_unknown_not_dropped(redis_url: str, mq: EchoMQ) -> None:
    unregistered = EchoMQ.from_url(redis_url, actor="php-worker")
    mq.enqueue("q", "{}", job_id="a")

    [job] = unregistered.claim("q")
    unregistered.fail("q", "a", job.token, error="boom", backoff_ms=0)
    unregistered.close()

    assert claims(mq, "a") == [("php-worker", "", "")]
    assert [e.error for e in mq.job_events("q", "a") if e.move == "fail"] == ["boom"]


def test_a_typical_job_keeps_its_hash_a_listpack_with_the_release_recorded(redis_url: str, mq: EchoMQ) -> None:
    """Enqueued by a producer, claimed once by a worker of a git-describe release, completed."""
    producer, worker = EchoMQ.from_url(redis_url, actor="api-1:4242"), EchoMQ.from_url(redis_url, actor="host-1:12345")
    worker.run(moves.register_worker("q", "host-1:12345", host="host-1", release="v1.4.2-3-gabc1234", **REGISTER))
    producer.enqueue("q", '{"to": "user1@example.com"}', job_id="a")
    [job] = worker.claim("q")
    worker.complete("q", "a", job.token)
    producer.close()
    worker.close()

    assert claims(mq, "a") == [("host-1:12345", "v1.4.2-3-gabc1234", "host-1")]
    assert mq.redis.object("encoding", QueueKeys("q").job("a")) == b"listpack"


def test_each_attempt_keeps_its_own_release_across_a_deploy(redis_url: str, mq: EchoMQ) -> None:
    old, new = EchoMQ.from_url(redis_url, actor="host-1:12345"), EchoMQ.from_url(redis_url, actor="host-2:777")
    old.run(moves.register_worker("q", "host-1:12345", host="host-1", release="v1.4.2", **REGISTER))
    new.run(moves.register_worker("q", "host-2:777", host="host-2", release="v1.5.0", **REGISTER))
    mq.enqueue("q", '{"to": "user1@example.com"}', job_id="a")
    [job] = old.claim("q")
    old.fail("q", "a", job.token, error="ValueError: bad input (at handlers.py:12 in send)", backoff_ms=0)
    [job] = new.claim("q")
    new.complete("q", "a", job.token)
    old.close()
    new.close()

    assert claims(mq, "a") == [("host-1:12345", "v1.4.2", "host-1"), ("host-2:777", "v1.5.0", "host-2")]


def test_finish_claim_records_the_release_of_the_attempts_it_claims(redis_url: str, mq: EchoMQ) -> None:
    worker = EchoMQ.from_url(redis_url, actor="web-1:1")
    worker.run(moves.register_worker("q", "web-1:1", host="web-1", release="r7", **REGISTER))
    mq.enqueue_many("q", ["{}", "{}"])
    [first] = worker.claim("q")

    result = worker.run(moves.finish_claim("q", [Report(first.id, first.token)], actor="web-1:1"))
    worker.close()

    assert isinstance(result.claimed, list) and len(result.claimed) == 1
    assert claims(mq, result.claimed[0].id) == [("web-1:1", "r7", "web-1")]


async def test_the_worker_registers_its_release_and_its_attempts_record_it(redis_url: str, mq: EchoMQ) -> None:
    mq.enqueue("q", "{}", job_id="a")
    done = asyncio.Event()

    async def handler(job: object) -> None:
        done.set()

    worker = Worker(queue="q", handler=handler, url=redis_url, actor="box:1", release="2026.12.1", poll_ms=10)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await asyncio.wait_for(done.wait(), 30)
    stop.set()
    await serving

    assert claims(mq, "a") == [("box:1", "2026.12.1", socket.gethostname())]


def test_the_release_comes_from_emq_release_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMQ_RELEASE", "deploy-42")

    assert detect_release() == "deploy-42"


def test_a_job_that_failed_once_and_was_claimed_again_by_its_worker_stays_a_listpack(redis_url: str,
                                                                                      mq: EchoMQ) -> None:
    """The second claim by the same worker with the same release leaves its note out and has the first one's."""
    producer, worker = EchoMQ.from_url(redis_url, actor="api-1:4242"), EchoMQ.from_url(redis_url, actor="host-1:12345")
    worker.run(moves.register_worker("q", "host-1:12345", host="host-1", release="v1.4.2-3-gabc1234", **REGISTER))
    producer.enqueue("q", '{"to": "user1@example.com"}', job_id="a")
    [job] = worker.claim("q")
    worker.fail("q", "a", job.token, error="timeout after 3012 ms", backoff_ms=0)
    [job] = worker.claim("q")
    worker.complete("q", "a", job.token)
    producer.close()
    worker.close()

    assert claims(mq, "a") == [("host-1:12345", "v1.4.2-3-gabc1234", "host-1")] * 2
    history = mq.redis.hget(QueueKeys("q").job("a"), "history")
    assert isinstance(history, bytes) and len(history) <= 64
    assert mq.redis.object("encoding", QueueKeys("q").job("a")) == b"listpack"


def test_a_worker_that_tells_nothing_after_telling_a_release_is_release_unknown_again(redis_url: str,
                                                                                      mq: EchoMQ) -> None:
    worker = EchoMQ.from_url(redis_url, actor="node-7")
    worker.run(moves.register_worker("q", "node-7", host="box", release="2.0", **REGISTER))
    mq.enqueue("q", "{}", job_id="a")
    [job] = worker.claim("q")
    worker.fail("q", "a", job.token, error="boom", backoff_ms=0)
    worker.run(moves.register_worker("q", "node-7", host="", release="", **REGISTER))
    [job] = worker.claim("q")
    worker.close()

    assert claims(mq, "a") == [("node-7", "2.0", "box"), ("node-7", "", "")]


def test_when_the_oldest_entries_go_the_first_claim_kept_writes_its_note_out(redis_url: str, mq: EchoMQ) -> None:
    worker = EchoMQ.from_url(redis_url, actor="host-1:1")
    worker.run(moves.register_worker("q", "host-1:1", host="host-1", release="r9", **REGISTER))
    mq.enqueue("q", "{}", job_id="a", max_attempts=100)
    for _ in range(20):
        [job] = worker.claim("q")
        worker.fail("q", "a", job.token, error="boom", backoff_ms=0)
    worker.close()

    found = claims(mq, "a")
    assert len(found) < 20  # the oldest went
    assert set(found) == {("host-1:1", "r9", "host-1")}
    history = mq.redis.hget(QueueKeys("q").job("a"), "history")
    assert isinstance(history, bytes) and history.count(b"\t1") == 1
