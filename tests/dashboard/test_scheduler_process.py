"""A console process runs the schedules' ticks under the scheduler lock, and lets it go when it stops."""

from __future__ import annotations

from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.scheduler import running_scheduler, scheduler_start, scheduler_stop
from queues import EchoMQ
from queues.keys import SCHEDULER_LOCK
from queues.schedules import Definition, add_schedule, get_schedule
from tests.support.waiting import wait_until


def test_a_console_process_enqueues_each_tick_and_releases_the_lock_when_it_stops(
        console_mq: EchoMQ, settings: SettingsWrapper) -> None:
    settings.EMQ_LOCK_URLS = []
    add_schedule(console_mq, "mail", "beat", Definition.of(every_ms=1000, payload="x"))
    starter = scheduler_start(interval_s=0.2)
    assert starter is not None
    try:
        wait_until(lambda: get_schedule(console_mq, "mail", "beat").ticks >= 2, 20, "two ticks enqueued")
        holder = console_mq.redis.get(SCHEDULER_LOCK)
        assert running_scheduler() is not None
    finally:
        scheduler_stop()

    found = get_schedule(console_mq, "mail", "beat")
    assert holder is not None and b"/scheduler@" in holder
    assert console_mq.redis.exists(SCHEDULER_LOCK) == 0
    assert found.last_job == f"beat:{found.last_tick_ms}" and console_mq.stats("mail").counts["pending"] == found.ticks
