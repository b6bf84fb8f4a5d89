"""Over maxmemory every move is refused whole before it runs; the lease holder's heartbeat still runs."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from queues import EchoMQ
from queues.cli import main
from queues.errors import OutOfMemory
from queues.worker import Worker
from tests.support.redis_servers import RedisServer

BALLAST = "ballast"


@pytest.fixture
def server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.cleanup()


def _fill_memory(client: redis.Redis) -> None:
    """Puts the server over maxmemory (noeviction): one large value, then a limit below what it uses."""
    client.set(BALLAST, b"x" * (3 * 1024 * 1024))
    used = int(client.info("memory")["used_memory"])
    client.config_set("maxmemory", used - 1024 * 1024)


def _free_memory(client: redis.Redis) -> None:
    client.delete(BALLAST)
    client.config_set("maxmemory", 0)


def test_every_move_is_refused_whole_and_reads_and_the_heartbeat_still_run(server: RedisServer) -> None:
    mq = EchoMQ.from_url(server.url, actor="test")
    mq.enqueue_many("q", ["a", "b"], )
    [held] = mq.claim("q")
    client = server.client()
    _fill_memory(client)
    before = {key: client.dump(key) for key in client.scan_iter(match="emq:*")}
    try:
        for move in (lambda: mq.claim("q"), lambda: mq.complete("q", held.id, held.token),
                     lambda: mq.fail("q", held.id, held.token, error="x"), lambda: mq.enqueue("q", "c"),
                     lambda: mq.recover_expired("q"), lambda: mq.cancel("q", held.id, expect_state="active")):
            with pytest.raises(OutOfMemory):
                move()
        assert {key: client.dump(key) for key in client.scan_iter(match="emq:*")} == before

        assert mq.stats("q").counts == {"pending": 1, "active": 1, "done": 0, "failed": 0}
        assert mq.extend("q", held.id, held.token, lease_ms=60_000) > 0
    finally:
        _free_memory(client)
    mq.complete("q", held.id, held.token)
    assert mq.job("q", held.id).state == "done"
    mq.close()


def test_the_cli_reports_out_of_memory_with_its_own_exit_code(server: RedisServer,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    client = server.client()
    _fill_memory(client)
    try:
        code = main(["--url", server.url, "enqueue", "q", "{}"])
    finally:
        _free_memory(client)

    assert code == OutOfMemory.exit_code == 6
    assert "out of memory" in capsys.readouterr().err


def test_no_job_whose_handler_returned_ok_ends_failed_under_memory_pressure(server: RedisServer) -> None:
    """Handlers finish while Redis is over maxmemory for longer than a lease: their completions wait,
    the heartbeat keeps the leases (a sweeper meanwhile is refused too), and once memory is freed every
    job is done, each run once."""
    mq = EchoMQ.from_url(server.url, actor="test")
    ids = mq.enqueue_many("q", [f"job {n}" for n in range(12)], max_attempts=1)
    client = server.client()
    running, release = threading.Semaphore(0), threading.Event()
    runs: list[str] = []

    def handler(job) -> None:  # type: ignore[no-untyped-def]
        runs.append(job.id)
        running.release()
        release.wait(30)

    # Long enough that a heartbeat delayed by a loaded machine still lands in time; the refused window is 2.5 leases.
    lease_ms = 4000
    worker = Worker(queue="q", handler=handler, url=server.url, concurrency=4, lease_ms=lease_ms, poll_ms=50)
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()
    served = threading.Thread(target=lambda: loop.run_until_complete(worker.serve(stop)))
    served.start()
    sweeper = EchoMQ.from_url(server.url, actor="sweeper")
    sweeps_refused = 0
    try:
        for _ in range(4):
            assert running.acquire(timeout=30)
        _fill_memory(client)
        client.config_resetstat()
        release.set()  # the four handlers return OK while every move but extend is refused
        window_end = time.monotonic() + 2.5 * lease_ms / 1000
        while time.monotonic() < window_end:
            try:
                sweeper.recover_expired("q")
            except OutOfMemory:
                sweeps_refused += 1
            time.sleep(0.1)
        refused_calls = int(client.info("commandstats").get("cmdstat_evalsha", {}).get("rejected_calls", 0))
        _free_memory(client)
        deadline = time.monotonic() + 60
        while mq.stats("q").counts["done"] < len(ids) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        release.set()
        _free_memory(client)
        loop.call_soon_threadsafe(stop.set)
        served.join(60)
        loop.close()

    counts = mq.stats("q").counts
    assert counts == {"pending": 0, "active": 0, "done": len(ids), "failed": 0}
    assert sorted(runs) == sorted(ids)  # each run once: no lease lapsed and came back
    assert sweeps_refused > 0 and worker.stats.out_of_memory > 0
    # Backing off, the worker sent a few refused rounds over the window, not a claim loop's thousands.
    assert refused_calls < 60
    sweeper.close()
    mq.close()
