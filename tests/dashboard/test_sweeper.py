"""The console's lease sweeper: off in tests unless started, one process at a time, patient with a Redis that is down."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.sweeper import running_sweeper, sweeper_start, sweeper_status, sweeper_stop
from queues import EchoMQ, moves
from queues.scripts import script
from queues.sweeper import sweeper_lock
from tests.support.redis_servers import RedisServer
from tests.support.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_PROCESS = """
import os, sys, time
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
import django
django.setup()
from dashboard.sweeper import sweeper_start
sweeper_start(url=sys.argv[1], lock_urls=[], interval_s=0.2, holder=sys.argv[2])
time.sleep(60)
"""


@pytest.fixture(autouse=True)
def no_sweeper_left() -> Iterator[None]:
    yield
    sweeper_stop()


def _lapse(mq: EchoMQ, queue: str, n: int = 1) -> None:
    mq.enqueue_many(queue, [f"job {i}" for i in range(n)])
    mq.claim(queue, lease_ms=50, count=n)
    time.sleep(0.1)


def test_no_console_process_sweeps_in_tests_unless_a_test_starts_one(mq: EchoMQ) -> None:
    _lapse(mq, "mail")

    assert sweeper_start() is None
    time.sleep(0.3)

    assert running_sweeper() is None
    assert mq.stats("mail").lapsed == 1


def test_a_started_sweeper_recovers_lapsed_leases_and_shows_itself_as_the_holder(
        mq: EchoMQ, redis_url: str, settings: SettingsWrapper) -> None:
    settings.EMQ_REDIS_URL = redis_url
    settings.EMQ_SWEEPER_INTERVAL_S = 0.2
    _lapse(mq, "mail", 3)

    sweeper_start(url=redis_url, lock_urls=[], holder="console-a")
    wait_until(lambda: mq.stats("mail").counts["pending"] == 3, 20, "the sweeper to recover the lapsed leases")

    status = sweeper_status()
    assert status.holder is not None and status.holder.holder == "console-a" and status.ours
    assert 0 < status.holder.until - time.time() <= 1.0
    assert {e.actor for e in mq.events("mail") if e.move == "recover"} == {"console-a"}


def test_the_console_starts_while_redis_is_down_and_sweeps_once_it_answers() -> None:
    server = RedisServer()

    starter = sweeper_start(url=server.url, lock_urls=[], interval_s=0.2, holder="patient", retry_s=0.1)
    time.sleep(0.3)
    assert starter is not None and starter.is_alive() and running_sweeper() is None

    server.start()
    try:
        mq = EchoMQ.from_url(server.url, actor="test")
        _lapse(mq, "mail")
        wait_until(lambda: mq.stats("mail").counts["pending"] == 1, 20, "the sweeper to start and recover")
        sweeper = running_sweeper()
        assert sweeper is not None and sweeper.lock.holder == "patient"
    finally:
        sweeper_stop()
        server.cleanup()


def test_the_pages_say_so_when_the_sweeper_lock_cannot_be_read(settings: SettingsWrapper) -> None:
    server = RedisServer()
    settings.EMQ_REDIS_URL = server.url

    status = sweeper_status()

    assert status.holder is None and status.error.startswith("cannot read the sweeper lock")


def _console(url: str, holder: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", CONSOLE_PROCESS, url, holder], cwd=ROOT)


def test_of_two_console_processes_one_sweeps_and_the_other_takes_over_when_it_dies(
        mq: EchoMQ, redis_url: str) -> None:
    consoles = {name: _console(redis_url, name) for name in ("console-a", "console-b")}
    lock = sweeper_lock(url=redis_url, lock_urls=[])
    try:
        wait_until(lambda: lock.holder_info() is not None, 20, "one console to take the sweeper lock")
        first = lock.holder_info().holder  # type: ignore[union-attr]
        for _ in range(5):
            _lapse(mq, "mail", 4)
            time.sleep(0.3)
        wait_until(lambda: mq.stats("mail").lapsed == 0, 20, "every lapsed lease to be recovered")
        assert {e.actor for e in mq.events("mail", count=1000) if e.move == "recover"} == {first}

        consoles[first].kill()
        other = next(name for name in consoles if name != first)
        wait_until(lambda: getattr(lock.holder_info(), "holder", "") == other, 20, "the other console to take over")
        _lapse(mq, "mail", 2)
        wait_until(lambda: mq.stats("mail").lapsed == 0, 20, "the new holder to recover the lapsed leases")
        recovered_by = [e.actor for e in mq.events("mail", count=1000) if e.move == "recover"]
        assert recovered_by[:2] == [other, other]
    finally:
        for process in consoles.values():
            process.kill()
            process.wait()


def test_the_sweeping_console_registers_a_queue_that_its_writer_never_registered(
        mq: EchoMQ, redis_url: str, settings: SettingsWrapper) -> None:
    settings.EMQ_DISCOVERY_SCANS_PER_S = 5
    settings.EMQ_DISCOVERY_SCAN_COUNT = 10
    mq.enqueue("known", "x")
    call = moves.enqueue("ghost", "written by a runtime that does not SADD emq:queues")
    mq.redis.eval(script(call.script).source, len(call.keys), *call.keys, *call.args)
    assert mq.queues() == ["known"]

    sweeper_start(url=redis_url, lock_urls=[], interval_s=0.2, holder="finder")

    wait_until(lambda: "ghost" in mq.queues(), 20, "the console's discovery to register the queue")
    sweeper = running_sweeper()
    assert sweeper is not None and sweeper.discovery.count == 10
