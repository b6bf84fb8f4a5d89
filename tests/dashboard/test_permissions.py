"""Who may do what, enforced on the server for every path: HTTP views and the run WebSocket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions import runner
from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.asgi import application
from queues import EchoMQ, moves
from tests.support.confirm import post_confirming

pytestmark = pytest.mark.django_db(transaction=True)


def failed_job(mq: EchoMQ, job_id: str = "a", queue: str = "mail") -> None:
    mq.enqueue(queue, "x", job_id=job_id, max_attempts=1)
    job = mq.claim(queue)[0]
    mq.run(moves.fail(queue, job.id, job.token, error="boom", backoff_ms=0))


def running_entry(queue: str = "mail") -> AuditEntry:
    """A bulk run's row as a running run leaves it (no thread behind it: only the row is under test)."""
    return AuditEntry.objects.create(username="someone", queue=queue, action="retry_all", scope="queue",
                                     outcome="running")


def actions(entry: AuditEntry) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("/actions/job/", {"q": "mail", "id": "a", "move": "retry", "state": "failed", "attempts": "1"}),
        ("/actions/job/", {"q": "mail", "id": "a", "move": "delete", "state": "failed", "attempts": "1"}),
        ("/actions/queue/", {"q": "mail", "action": "retry_all"}),
        ("/actions/queue/", {"q": "mail", "action": "purge_failed", "older_than_ms": "0"}),
        ("/actions/selection/", {"q": "mail", "move": "retry", "job": "failed:1:a"}),
        (f"/actions/runs/{entry.pk}/cancel/", {}),
    ]


def unchanged(mq: EchoMQ, entry: AuditEntry) -> bool:
    entry.refresh_from_db()
    return (mq.job("mail", "a").state == "failed" and entry.cancel_requested_by == ""
            and not AuditEntry.objects.exclude(outcome=AuditEntry.Outcome.REFUSED).exclude(pk=entry.pk).exists())


def test_anonymous_requests_are_sent_to_the_login_page_and_change_nothing(client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq)
    entry = running_entry()

    for url, data in actions(entry):
        response = client.post(url, data)
        assert response.status_code == 302 and response["Location"].startswith("/login/?next="), url
        htmx = client.post(url, data, headers={"HX-Request": "true"})
        assert htmx.status_code == 401 and htmx["HX-Redirect"].startswith("/login/"), url
    assert client.get("/audit/").status_code == 302
    assert client.get(f"/actions/runs/{entry.pk}/").status_code == 302
    assert unchanged(console_mq, entry)
    assert AuditEntry.objects.count() == 1  # nobody to name: an anonymous request writes no row


def test_a_viewer_gets_a_readable_403_for_every_action_and_nothing_changes(viewer_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    failed_job(console_mq)
    entry = running_entry()

    for url, data in actions(entry):
        page = viewer_client.post(url, data)
        fragment = viewer_client.post(url, data, headers={"HX-Request": "true"})
        for response in (page, fragment):
            assert response.status_code == 403, url
            assert "viewers see everything and change nothing" in response.content.decode(), url
        assert b"<html" in page.content and b"<html" not in fragment.content
    assert unchanged(console_mq, entry)
    # Each refused press is in the log, as refused, with who tried what: two per action that
    # names one (the page post and the htmx post), none for the cancel, which names no action.
    refusals = AuditEntry.objects.filter(outcome=AuditEntry.Outcome.REFUSED)
    assert refusals.count() == 2 * (len(actions(entry)) - 1)
    assert {(r.username, r.queue) for r in refusals} == {("vera", "mail")}
    assert all(r.result.startswith("forbidden: You are signed in as a viewer") for r in refusals)
    assert set(refusals.values_list("action", flat=True)) == {"retry", "delete", "retry_all", "purge_failed"}


def test_a_viewer_may_read_the_audit_log_and_follow_a_run(viewer_client: Client, console_mq: EchoMQ) -> None:
    entry = running_entry()

    assert viewer_client.get("/audit/").status_code == 200
    run = viewer_client.get(f"/actions/runs/{entry.pk}/")
    assert run.status_code == 200 and b"Cancel</button>" not in run.content


def test_no_action_happens_through_get(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq)
    entry = running_entry()

    for url, data in actions(entry):
        assert operator_client.get(url, data).status_code == 405, url
    assert unchanged(console_mq, entry)


def test_an_operator_may_do_every_action(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq)
    entry = running_entry()

    for url, data in actions(entry):
        assert post_confirming(operator_client, url, data).status_code == 200, url
    entry.refresh_from_db()
    assert entry.cancel_requested_by == "otto"
    for run in AuditEntry.objects.exclude(pk=entry.pk):
        assert runner.wait(run.pk, timeout=30)
    recorded = AuditEntry.objects.exclude(pk=entry.pk).order_by("id").values_list("action", "outcome")
    # The retry moved the job on, so the delete that showed it failed was refused: compare-and-move at work;
    # retry all then found no failed job, and the purge's confirmation said there was nothing to purge.
    assert list(recorded) == [("retry", "moved"), ("delete", "refused"), ("retry", "finished")]


def test_a_post_without_the_csrf_token_is_refused(operator: User, console_mq: EchoMQ) -> None:
    failed_job(console_mq)
    entry = running_entry()
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)

    for url, data in actions(entry):
        assert client.post(url, data).status_code == 403, url
    assert unchanged(console_mq, entry)

    client.get("/queue/?q=mail&state=failed")
    token = client.cookies["csrftoken"].value
    response = client.post("/actions/job/", actions(entry)[0][1], headers={"X-CSRFToken": token, "HX-Request": "true"})
    assert response.status_code == 200 and console_mq.job("mail", "a").state == "pending"


def test_an_operator_restricted_to_some_queues_is_refused_on_the_others(operator: User, operator_client: Client,
                                                                       console_mq: EchoMQ) -> None:
    QueueGrant.objects.create(user=operator, pattern="billing-*")
    failed_job(console_mq, queue="mail")
    failed_job(console_mq, queue="billing-eu")

    refused = operator_client.post("/actions/job/", {"q": "mail", "id": "a", "move": "retry", "state": "failed",
                                                     "attempts": "1"})
    allowed = operator_client.post("/actions/job/", {"q": "billing-eu", "id": "a", "move": "retry",
                                                     "state": "failed", "attempts": "1"})
    bulk = operator_client.post("/actions/queue/", {"q": "mail", "action": "retry_all"})
    bulk_confirmed = operator_client.post("/actions/queue/", {"q": "mail", "action": "retry_all",
                                                              "confirmation": "anything"})

    assert refused.status_code == 403 and "billing-* only, not on mail" in refused.content.decode()
    logged = AuditEntry.objects.get(action="retry", queue="mail")
    assert (logged.outcome, logged.jobs) == ("refused", [{"id": "a", "state": "failed", "attempts": "1"}])
    assert bulk.status_code == bulk_confirmed.status_code == 403
    assert allowed.status_code == 200
    assert console_mq.job("mail", "a").state == "failed"
    assert console_mq.job("billing-eu", "a").state == "pending"


# The WebSocket ---------------------------------------------------------------

def _session_cookie(user: User) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


async def _connect(entry_id: int, user: User | None, origin: str = "http://localhost") -> WebsocketCommunicator:
    headers = [(b"origin", origin.encode()), (b"host", b"localhost")]
    if user is not None:
        headers.append((b"cookie", f"sessionid={await sync_to_async(_session_cookie)(user)}".encode()))
    return WebsocketCommunicator(application, f"/ws/actions/run/?id={entry_id}", headers=headers)


async def test_the_run_socket_closes_on_anonymous_visitors(console_mq: EchoMQ) -> None:
    entry = await sync_to_async(running_entry)()
    communicator = await _connect(entry.pk, None)

    connected, _ = await communicator.connect()

    assert connected
    assert (await communicator.receive_output(2))["code"] == 4401
    await communicator.disconnect()


async def test_the_run_socket_refuses_a_foreign_origin(operator: User, console_mq: EchoMQ) -> None:
    entry = await sync_to_async(running_entry)()
    communicator = await _connect(entry.pk, operator, origin="https://evil.example")

    connected, _ = await communicator.connect()

    assert not connected
    await communicator.disconnect()


async def test_a_viewer_on_the_run_socket_sees_progress_but_cannot_cancel(viewer: User, console_mq: EchoMQ) -> None:
    entry = await sync_to_async(running_entry)()
    communicator = await _connect(entry.pk, viewer)
    assert (await communicator.connect())[0]
    progress = await communicator.receive_from(2)
    assert f'id="run-{entry.pk}"' in progress and "Cancel</button>" not in progress

    await communicator.send_to(text_data=json.dumps({"action": "cancel"}))

    note = await communicator.receive_from(2)
    assert "refused:" in note and "viewers see everything and change nothing" in note
    await sync_to_async(entry.refresh_from_db)()
    assert entry.cancel_requested_by == "" and entry.outcome == "running"
    await communicator.disconnect()


async def test_an_operator_on_the_run_socket_can_cancel(operator: User, console_mq: EchoMQ) -> None:
    entry = await sync_to_async(running_entry)()
    communicator = await _connect(entry.pk, operator)
    assert (await communicator.connect())[0]
    assert "Cancel</button>" in await communicator.receive_from(2)

    await communicator.send_to(text_data=json.dumps({"action": "cancel", "HEADERS": {"HX-Request": "true"}}))

    assert "cancel requested by otto" in await communicator.receive_from(2)
    await sync_to_async(entry.refresh_from_db)()
    assert entry.cancel_requested_by == "otto"
    await communicator.disconnect()


# Settings ----------------------------------------------------------------------

def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "EMQ_DEMO"}}
    return subprocess.run([sys.executable, "-c", "import django; django.setup()"], capture_output=True, text=True,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "dashboard.settings", **env}, timeout=60)


@pytest.mark.parametrize("env, refusal", [
    ({}, "SECRET_KEY is required"),
    ({"SECRET_KEY": "s" * 50, "DEBUG": "1", "ALLOWED_HOSTS": "console.example.com"}, "DEBUG must be off"),
])
def test_outside_the_demo_the_console_refuses_to_start_unsafely(env: dict[str, str], refusal: str) -> None:
    started = _start(env)

    assert started.returncode != 0 and refusal in started.stderr


@pytest.mark.parametrize("env", [
    {"EMQ_DEMO": "1"},
    {"SECRET_KEY": "s" * 50, "ALLOWED_HOSTS": "console.example.com"},
    {"SECRET_KEY": "s" * 50, "DEBUG": "1"},
])
def test_the_console_starts_with_safe_settings_or_in_the_demo(env: dict[str, str]) -> None:
    started = _start(env)

    assert started.returncode == 0, started.stderr
