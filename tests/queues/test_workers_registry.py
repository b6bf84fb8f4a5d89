"""The workers registry: a worker appears with its facts, holds a job, and disappears after its TTL once gone."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import redis

from queues import ClaimedJob, EchoMQ, InvalidInput, moves, reads
from queues.worker import Worker
from tests.support.waiting import wait_until, wait_until_async

ROOT = Path(__file__).resolve().parents[2]


def live(mq: EchoMQ, queue: str = "mail") -> reads.Workers:
    return mq.run(reads.workers(queue))


async def test_a_running_worker_is_listed_with_the_job_it_holds_and_leaves_when_it_stops(mq: EchoMQ,
                                                                                      redis_url: str) -> None:
    mq.enqueue("mail", "x", job_id="held")
    started, release = threading.Event(), threading.Event()

    def handle(job: ClaimedJob) -> None:
        started.set()
        assert release.wait(30)

    worker = Worker(queue="mail", handler=handle, url=redis_url, concurrency=4, lease_ms=600, poll_ms=50)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    try:
        assert await asyncio.to_thread(started.wait, 30)
        await wait_until_async(lambda: live(mq).workers and live(mq).workers[0].held_ids == ["held"], 20,
                               "the worker to list the job it holds")
        [info] = live(mq).workers
        assert (info.id, info.pid, info.concurrency, info.held) == (worker.actor, str(os.getpid()), "4", 1)
        assert info.runtime.startswith("python 3.") and info.host
        assert info.started_ms and info.heartbeat_ms and info.expires_ms > info.heartbeat_ms  # type: ignore[operator]
    finally:
        release.set()
        stop.set()
        await asyncio.wait_for(serving, 15)
    assert live(mq).live == 0 and live(mq).workers == []


def test_a_killed_worker_disappears_after_its_ttl_and_its_job_is_held_by_a_worker_that_is_gone(
        mq: EchoMQ, redis_url: str, tmp_path: Path) -> None:
    mq.enqueue("mail", "x", job_id="stuck")
    (tmp_path / "held_handler.py").write_text(textwrap.dedent("""
        import time
        def handle(job):
            time.sleep(600)
    """))
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    process = subprocess.Popen([sys.executable, "-m", "queues", "--url", redis_url, "worker", "mail", "--handler",
                                "held_handler:handle", "--lease-ms", "1500"], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: mq.job("mail", "stuck").state == "active" and live(mq).workers, 30, "the worker to claim")
        [info] = live(mq).workers
        assert info.pid == str(process.pid)
        assert mq.job("mail", "stuck").text("worker") == info.id
        process.send_signal(signal.SIGKILL)
        process.wait(10)

        wait_until(lambda: live(mq).live == 0, 30, "the entry to expire")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    # The job still says who held it, and nobody of that name is alive: held by a worker that is gone.
    assert mq.job("mail", "stuck").text("worker") == info.id
    assert info.id not in {w.id for w in live(mq).workers}


def test_an_expired_entry_is_dropped_by_the_next_registration(mq: EchoMQ) -> None:
    register = dict(ttl_ms=1000, host="h", pid=1, runtime="node 20", concurrency=1, started_ms=1, held=[])
    mq.run(moves.register_worker("mail", "old:1", **register))
    mq.redis.zadd("emq:{mail}:workers", {"old:1": 1})  # as if its time had long passed

    mq.run(moves.register_worker("mail", "new:2", **register))

    assert mq.redis.zrange("emq:{mail}:workers", 0, -1) == [b"new:2"]
    assert [w.id for w in live(mq).workers] == ["new:2"] and live(mq).workers[0].runtime == "node 20"


def test_emq_workers_lists_them_as_lines_or_json(mq: EchoMQ, redis_url: str) -> None:
    import json

    register = dict(ttl_ms=60_000, host="box", pid=7, runtime="node 20", concurrency=2, started_ms=1, held=["a"])
    mq.enqueue("mail", "x")
    mq.enqueue("thumbs", "x")
    mq.run(moves.register_worker("mail", "box:7", **register))
    mq.run(moves.register_worker("thumbs", "box:8", **register))

    lines = subprocess.run([sys.executable, "-m", "queues", "--url", redis_url, "workers"], capture_output=True,
                           text=True, timeout=60, cwd=ROOT)
    as_json = subprocess.run([sys.executable, "-m", "queues", "--url", redis_url, "workers", "thumbs", "--json"],
                             capture_output=True, text=True, timeout=60, cwd=ROOT)

    assert lines.returncode == 0 and len(lines.stdout.splitlines()) == 2
    assert lines.stdout.startswith("mail\tbox:7\tbox pid 7\tnode 20\tconcurrency 2\tholds 1\theartbeat ")
    [entry] = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert (entry["id"], entry["queue"], entry["held_ids"]) == ("box:8", "thumbs", ["a"])


@pytest.mark.parametrize("worker_id", ["", "w{1}", "w 1", "w\x00", "w" * 257])
def test_a_worker_id_the_registry_cannot_keep_is_refused_by_register_and_by_note_refusal_with_nothing_written(
        mq: EchoMQ, redis_url: str, worker_id: str) -> None:
    server = redis.Redis.from_url(redis_url)
    with pytest.raises(InvalidInput):
        mq.run(moves.register_worker("mail", worker_id, ttl_ms=5000, host="h", pid=1, runtime="python",
                                     concurrency=1, started_ms=0, held=[]))
    with pytest.raises(InvalidInput):
        mq.run(moves.note_refusal("mail", worker_id, ttl_ms=5000, kind="oom", text="OOM"))
    assert server.keys("*") == []
