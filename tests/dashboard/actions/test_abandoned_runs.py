"""A bulk run whose console process died is marked abandoned by the sweep, its sockets stop following it, and a
cancel on it answers in words."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.actions import runner, services
from dashboard.actions.models import AuditEntry
from dashboard.asgi import application
from queues import EchoMQ, InvalidInput
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


def run_row(*, silent_for: timedelta) -> AuditEntry:
    """A running bulk run's row whose last progress was ``silent_for`` ago (as its process left it)."""
    entry = AuditEntry.objects.create(username="otto", queue="mail", action="retry_all", scope="queue",
                                      outcome="running", moved=7)
    AuditEntry.objects.filter(pk=entry.pk).update(updated_at=timezone.now() - silent_for)
    return AuditEntry.objects.get(pk=entry.pk)


def test_the_sweep_marks_a_run_silent_past_the_limit_abandoned_and_leaves_a_live_one(
        settings: SettingsWrapper) -> None:
    settings.EMQ_RUN_ABANDONED_MINUTES = 5
    dead, alive = run_row(silent_for=timedelta(minutes=6)), run_row(silent_for=timedelta(seconds=1))

    marked = runner.abandoned_sweep()

    dead.refresh_from_db()
    alive.refresh_from_db()
    assert marked == 1
    assert (dead.outcome, dead.moved, dead.finished_at is not None) == ("error", 7, True)
    assert dead.result.startswith("abandoned: no progress for 5 minutes: the console process that ran it stopped")
    assert alive.outcome == "running"


def test_every_console_process_runs_the_sweep_in_the_background(settings: SettingsWrapper) -> None:
    settings.EMQ_RUN_ABANDONED_MINUTES = 1
    dead = run_row(silent_for=timedelta(minutes=2))
    stop = threading.Event()
    thread = threading.Thread(target=runner.abandoned_sweep_forever, args=(stop, 0.05), daemon=True)
    thread.start()
    try:
        wait_until(lambda: AuditEntry.objects.get(pk=dead.pk).outcome == "error", timeout=20,
                   what="the run marked abandoned")
    finally:
        stop.set()
        thread.join(10)


def test_a_cancel_on_an_abandoned_run_answers_that_there_is_nothing_to_cancel(
        operator: User, operator_client: Client, settings: SettingsWrapper) -> None:
    dead = run_row(silent_for=timedelta(minutes=10))
    runner.abandoned_sweep()

    with pytest.raises(InvalidInput, match=f"run {dead.pk} is not running .*abandoned: .*nothing to cancel"):
        services.run_cancel(user=operator, entry_id=dead.pk)
    answer = operator_client.post(f"/actions/runs/{dead.pk}/cancel/", headers={"HX-Request": "true"})

    assert answer.status_code == 400 and "there is nothing to cancel" in answer.content.decode()
    assert AuditEntry.objects.get(pk=dead.pk).cancel_requested_by == ""


async def test_a_runs_socket_stops_following_it_once_the_sweep_marks_it(
        console_mq: EchoMQ, operator_cookie: bytes, settings: SettingsWrapper) -> None:
    dead = await sync_to_async(run_row)(silent_for=timedelta(minutes=10))
    socket = WebsocketCommunicator(application, f"/ws/actions/run/?id={dead.pk}", headers=[
        (b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", operator_cookie)])
    connected, _ = await socket.connect(timeout=20)  # a bound, not a speed
    assert connected
    first = await socket.receive_output(timeout=20)
    assert "No progress for over a minute" in first["text"]

    await sync_to_async(runner.abandoned_sweep)()

    # Looked at every STALLED_PUSH_EVERY_S while stalled; once marked: one last render, then closed.
    last = await socket.receive_output(timeout=30)
    closed = await socket.receive_output(timeout=30)
    assert "abandoned: no progress" in last["text"]
    assert closed == {"type": "websocket.close", "code": 1000}
