"""A second runtime written from PROTOCOL.md alone (Node, raw RESP) works one queue beside the Python worker.

The Node client (``conformance_client.js``) enqueues, claims, extends, completes, fails, releases and
recovers; the Python worker takes over what it leaves, including a job whose lease the Node client let
lapse, and the Node client's stale token for that job is then refused. Every reply's shape and element
types are checked on the Node side, and the final keyspace on this side.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from queues import ClaimedJob, EchoMQ
from queues.integrity import check_queue
from queues.latency import histogram
from queues.scripts import LUA_DIR, script
from queues.worker import Worker
from tests.support.waiting import wait_until

NODE = shutil.which("node") or "/usr/bin/node"
CLIENT = Path(__file__).with_name("conformance_client.js")
QUEUE = "conform"

pytestmark = pytest.mark.skipif(not os.access(NODE, os.X_OK), reason="node is not installed (apt-get install nodejs)")


class NodeClient:
    def __init__(self, port: int) -> None:
        self.process = subprocess.Popen([NODE, str(CLIENT), str(port), str(LUA_DIR)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.first = self._line()

    def _line(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            assert self.process.stderr is not None
            raise AssertionError(f"the node client stopped: {self.process.stderr.read()}")
        result: dict[str, Any] = json.loads(line)
        return result

    def phase(self, name: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"go {name}\n")
        self.process.stdin.flush()
        return self._line()

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture
def node(redis_server, redis_url: str) -> Iterator[NodeClient]:  # type: ignore[no-untyped-def]
    client = NodeClient(redis_server.port)
    yield client
    client.close()


def test_a_runtime_written_from_the_protocol_interoperates_with_the_python_worker(node: NodeClient, mq: EchoMQ,
                                                                                redis_url: str) -> None:
    assert node.first["shas"] == {name: script(name).sha for name in node.first["shas"]}

    prepared = node.phase("prepare")
    assert prepared["failures"] == []

    hold = threading.Event()

    def handler(job: ClaimedJob) -> None:
        work = json.loads(job.payload)["do"]
        if work == "boom":
            raise RuntimeError("boom from python")
        if work == "hold":
            assert hold.wait(60)

    worker = Worker(queue=QUEUE, handler=handler, url=redis_url, concurrency=2, lease_ms=1500, backoff_ms=0,
                    poll_ms=50, actor="python-worker")
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    served = threading.Thread(target=lambda: loop.run_until_complete(worker.serve(stop)))
    served.start()
    try:
        # The worker's own sweep recovers f (the Node client let its lease lapse) and claims it again.
        wait_until(lambda: (mq.job(QUEUE, "f").state, mq.job(QUEUE, "f").attempts) == ("active", "2"), 60,
                   "the worker's sweep to recover f and claim it again")
        stale = node.phase("stale")
        assert stale["failures"] == []
        hold.set()
        wait_until(lambda: mq.stats(QUEUE).counts == {"pending": 0, "active": 0, "done": 11, "failed": 3}, 60,
                   "every job to end")
    finally:
        hold.set()
        loop.call_soon_threadsafe(stop.set)
        served.join(60)
        loop.close()

    verified = node.phase("verify")
    assert verified["failures"] == []
    assert verified["counts"] == [0, 0, 11, 3]
    assert {mq.job(QUEUE, job_id).state for job_id in ("g", "boom0", "boom1")} == {"failed"}
    assert check_queue(mq, QUEUE).ok
    # Every claim and every complete or fail, of either runtime, is in the latency histograms.
    claims = sum(1 for e in mq.events(QUEUE) if e.move == "claim")
    finishes = sum(1 for e in mq.events(QUEUE) if e.move in ("complete", "fail"))
    whole = mq.run(histogram(QUEUE, resolution="m", points=30)).whole()
    assert (whole.wait.total, whole.run.total) == (claims, finishes) and claims > 0
    assert "conform" in mq.queues()
