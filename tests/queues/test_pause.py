"""Pause and resume: claim refuses a paused queue (in the script itself), running jobs finish, enqueue goes on."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from queues import ClaimedJob, EchoMQ, Paused, QueueKeys
from queues.scripts import script
from queues.worker import Worker
from tests.support.keyspace import keyspace_dump
from tests.support.waiting import wait_until_async

ROOT = Path(__file__).resolve().parents[2]


def emq(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "queues", "--url", url, *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_a_paused_queue_claims_nothing_and_writes_nothing(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "x", job_id="a")
    result = any_mq.pause("mail", reason="bad deploy, rolling back")
    before = {key: any_mq.redis.dump(key) for key in any_mq.redis.scan_iter(match="emq:{mail}:*")}

    with pytest.raises(Paused) as paused:
        any_mq.claim("mail")

    assert result.changed and result.since_ms
    assert (paused.value.actor, paused.value.reason) == ("test", "bad deploy, rolling back")
    assert str(paused.value) == "paused: queue mail is paused by test: bad deploy, rolling back"
    assert {key: any_mq.redis.dump(key) for key in any_mq.redis.scan_iter(match="emq:{mail}:*")} == before


def test_enqueue_goes_on_while_paused_and_resume_lets_claims_take_the_jobs(mq: EchoMQ) -> None:
    mq.pause("mail")
    mq.enqueue("mail", "x", job_id="a")

    stats = mq.stats("mail")
    assert (stats.paused, stats.paused_by, stats.due) == (True, "test", 1)
    resumed = mq.resume("mail")

    assert resumed.changed and resumed.paused_for_ms is not None
    assert [job.id for job in mq.claim("mail")] == ["a"]
    assert not mq.stats("mail").paused


def test_pausing_twice_or_resuming_a_running_queue_changes_nothing(mq: EchoMQ) -> None:
    mq.pause("mail", reason="first")
    before = keyspace_dump(mq.redis)

    again = mq.pause("mail", reason="second")

    assert not again.changed and again.reason == "first"
    assert keyspace_dump(mq.redis) == before
    mq.resume("mail")
    before = keyspace_dump(mq.redis)
    assert not mq.resume("mail").changed
    assert keyspace_dump(mq.redis) == before


def test_pause_and_resume_are_events_of_the_queue(mq: EchoMQ) -> None:
    mq.pause("mail", reason="why")
    mq.resume("mail")

    moves = [(e.move, e.job_id, e.actor) for e in reversed(mq.events("mail"))]
    assert moves == [("pause", "", "test"), ("resume", "", "test")]


def test_another_runtime_calling_the_claim_script_raw_is_refused_too(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="a")
    mq.pause("mail", reason="maintenance")
    keys = QueueKeys("mail").script_keys(None)

    reply = mq.redis.eval(script("claim").source, len(keys), *keys, 30_000, "abc123", "node-worker", 1)

    assert reply[0] == b"PAUSED" and reply[2:] == [b"test", b"maintenance"]
    assert mq.job("mail", "a").state == "pending"


def test_a_paused_flag_another_writer_left_as_a_string_still_pauses(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="a")
    mq.redis.set(QueueKeys("mail").paused, "yes")

    with pytest.raises(Paused):
        mq.claim("mail")
    assert mq.stats("mail").paused
    assert mq.resume("mail").changed and mq.claim("mail")[0].id == "a"


async def test_the_worker_finishes_its_running_job_idles_while_paused_and_resumes(mq: EchoMQ, redis_url: str) -> None:
    mq.enqueue("mail", "first", job_id="first")
    mq.enqueue("mail", "second", job_id="second")
    started, release = threading.Event(), threading.Event()
    done: list[str] = []

    def handle(job: ClaimedJob) -> None:
        if job.id == "first":
            started.set()
            assert release.wait(30)
        done.append(job.id)

    worker = Worker(queue="mail", handler=handle, url=redis_url, concurrency=1, poll_ms=100)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    try:
        assert await asyncio.to_thread(started.wait, 30)
        mq.pause("mail", reason="rollback")
        release.set()
        await wait_until_async(lambda: done == ["first"], 20, "the first job to finish")
        claims_before = mq.redis.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)
        await asyncio.sleep(1.0)

        assert mq.job("mail", "second").state == "pending" and done == ["first"]
        # Idle, not spinning: at most one claim per poll (100 ms), with room for a slow machine's bunching.
        calls = mq.redis.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0) - claims_before
        assert calls <= 25, calls

        mq.resume("mail")
        await wait_until_async(lambda: done == ["first", "second"], 20, "the second job to run once resumed")
        assert mq.job("mail", "second").state == "done"
    finally:
        release.set()
        stop.set()
        await asyncio.wait_for(serving, 15)


def test_the_cli_pauses_resumes_and_claim_exits_3_with_paused(mq: EchoMQ, redis_url: str) -> None:
    mq.enqueue("mail", "{}", job_id="a")

    paused = emq(redis_url, "pause", "mail", "--reason", "bad deploy")
    claim = emq(redis_url, "claim", "mail")
    stats = emq(redis_url, "stats", "mail")
    resumed = emq(redis_url, "resume", "mail")
    claimed = emq(redis_url, "claim", "mail")

    assert paused.returncode == 0 and paused.stdout.startswith("paused: queue mail claims nothing")
    assert claim.returncode == 3 and claim.stderr.startswith("emq: paused: queue mail is paused by ")
    assert "bad deploy" in claim.stderr and "PAUSED by" in stats.stdout
    assert resumed.returncode == 0 and resumed.stdout.startswith("resumed: queue mail")
    assert claimed.returncode == 0 and '"id":"a"' in claimed.stdout
