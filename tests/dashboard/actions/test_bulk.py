"""Bulk actions: bounded steps in a background run, live progress, cancellable, a per-item tally in the audit row."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from dashboard.actions import runner, services
from dashboard.actions.bulk import Selected, drive, queue_steps
from dashboard.actions.models import AuditEntry
from queues import EchoMQ
from queues.integrity import check_queue
from tests.support.confirm import confirmed_post
from tests.support.htmx import htmx_post
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def finished(entry_id: int) -> AuditEntry:
    assert runner.wait(entry_id, timeout=60), "the run did not end"
    return AuditEntry.objects.get(pk=entry_id)


def test_retry_all_retries_every_failed_job_in_batches_and_records_the_tally(operator_client: Client,
                                                                            console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 450)

    response = confirmed_post(operator_client, "/actions/queue/", {"q": "mail", "action": "retry_all"})

    assert response.status_code == 200
    entry = AuditEntry.objects.get()
    assert f'ws-connect="/ws/actions/run/?id={entry.pk}"'.encode() in response.content
    entry = finished(entry.pk)
    assert (entry.outcome, entry.moved, entry.skipped, entry.missing) == ("finished", 450, 0, 0)
    assert entry.result.startswith("finished in") and "450 moved" in entry.result
    assert entry.parameters["from_state"] == "failed"
    assert console_mq.stats("mail").counts == {"pending": 450, "active": 0, "done": 0, "failed": 0}


def test_recover_all_brings_back_every_lapsed_lease_but_no_live_one(operator_client: Client,
                                                                   console_mq: EchoMQ) -> None:
    console_mq.enqueue_many("mail", ["x"] * 30)
    console_mq.claim("mail", lease_ms=1, count=20)
    console_mq.claim("mail", lease_ms=60_000, count=10)
    time.sleep(0.01)

    confirmed_post(operator_client, "/actions/queue/", {"q": "mail", "action": "recover_all"})

    entry = finished(AuditEntry.objects.get().pk)
    assert entry.moved == 20
    assert console_mq.stats("mail").counts["active"] == 10


def test_purge_removes_only_jobs_older_than_the_chosen_age(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 5)

    young = htmx_post(operator_client, "/actions/queue/", {"q": "mail", "action": "purge_failed",
                                                           "older_than_ms": "3600000"})
    assert young.status_code == 200
    assert "has no failed job older than 1 hour: nothing to purge" in young.content.decode()
    assert not AuditEntry.objects.exists()
    assert console_mq.stats("mail").counts["failed"] == 5

    confirmed_post(operator_client, "/actions/queue/", {"q": "mail", "action": "purge_failed", "older_than_ms": "0"})

    entry = finished(AuditEntry.objects.latest("id").pk)
    assert (entry.action, entry.moved, entry.parameters["older_than_ms"]) == ("purge_failed", 5, 0)
    assert console_mq.stats("mail").counts["failed"] == 0


def test_a_selection_acts_on_exactly_the_ticked_jobs_as_shown(operator_client: Client, console_mq: EchoMQ) -> None:
    a, b, c, d = failed_jobs(console_mq, "mail", 4)
    console_mq.retry("mail", b)  # moved on after the page was drawn
    console_mq.delete("mail", c, expect_state="failed")  # gone

    response = htmx_post(operator_client, "/actions/selection/", {
        "q": "mail", "move": "retry", "job": [f"failed:1:{a}", f"failed:1:{b}", f"failed:1:{c}"]})

    assert response.status_code == 200
    entry = finished(AuditEntry.objects.get().pk)
    assert (entry.scope, entry.moved, entry.skipped, entry.missing) == ("selection", 1, 1, 1)
    assert [(o["id"], o["outcome"]) for o in entry.outcomes] == [(a, "moved"), (b, "skipped"), (c, "missing")]
    assert console_mq.job("mail", d).state == "failed", "an unticked job was touched"
    assert console_mq.job("mail", a).state == "pending"


def test_a_job_ticked_twice_is_acted_on_once(operator_client: Client, console_mq: EchoMQ) -> None:
    [a] = failed_jobs(console_mq, "mail", 1)

    htmx_post(operator_client, "/actions/selection/", {"q": "mail", "move": "retry",
                                                       "job": [f"failed:1:{a}", f"failed:1:{a}"]})

    entry = finished(AuditEntry.objects.get().pk)
    assert (entry.moved, entry.skipped, len(entry.jobs)) == (1, 0, 1)


def test_a_selection_with_a_malformed_item_is_refused_whole(operator_client: Client, console_mq: EchoMQ) -> None:
    [a] = failed_jobs(console_mq, "mail", 1)

    response = htmx_post(operator_client, "/actions/selection/", {"q": "mail", "move": "retry",
                                                                  "job": [f"failed:1:{a}", "nonsense"]})

    assert response.status_code == 400
    assert b"state:attempts:id" in response.content
    assert console_mq.job("mail", a).state == "failed"
    assert not AuditEntry.objects.exists()


def test_a_retry_all_cancelled_half_way_leaves_every_job_in_exactly_one_state(operator: User,
                                                                             console_mq: EchoMQ) -> None:
    total = 30_000
    failed_jobs(console_mq, "mail", total)

    # Small batches make the run long enough to be caught half-way on any machine.
    entry = services.queue_act(user=operator, action="retry_all", queue="mail", limit=10)
    deadline = time.monotonic() + 30
    while AuditEntry.objects.get(pk=entry.pk).moved == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    services.run_cancel(user=operator, entry_id=entry.pk)

    entry = finished(entry.pk)
    counts = console_mq.stats("mail").counts
    assert entry.outcome == "cancelled" and entry.cancel_requested_by == "otto"
    assert 0 < entry.moved < total, "the cancel did not land half-way"
    assert counts == {"pending": entry.moved, "active": 0, "done": 0, "failed": total - entry.moved}
    report = check_queue(console_mq, "mail")
    assert report.ok, report.problems
    assert entry.result.startswith("cancelled after")


def test_a_run_stops_when_another_process_asks_through_the_audit_row(operator: User, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 5_000)
    entry = services.queue_act(user=operator, action="retry_all", queue="mail", limit=1)

    AuditEntry.objects.filter(pk=entry.pk).update(cancel_requested_by="someone-elsewhere")

    entry = finished(entry.pk)
    assert entry.outcome == "cancelled" and entry.moved < 5_000


def test_the_run_page_shows_progress_and_the_per_item_outcomes(operator_client: Client, viewer_client: Client,
                                                              console_mq: EchoMQ) -> None:
    a, b = failed_jobs(console_mq, "mail", 2)
    console_mq.retry("mail", b)
    htmx_post(operator_client, "/actions/selection/", {"q": "mail", "move": "retry",
                                                       "job": [f"failed:1:{a}", f"failed:1:{b}"]})
    entry = finished(AuditEntry.objects.get().pk)

    page = viewer_client.get(f"/actions/runs/{entry.pk}/").content.decode()

    assert "1 moved, 1 skipped because they had moved on, 0 missing" in page
    assert f"retried: job {a} is now pending" in page and "it has moved on since it was shown" not in page
    assert f"refused: job {b} is now pending (attempts 1)" in page
    assert "Cancel</button>" not in page


def test_the_steps_stop_between_two_calls_and_never_inside_one(console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 1000)
    calls = 0

    def stop_after_three() -> bool:
        return calls >= 3

    def count(_: object) -> None:
        nonlocal calls
        calls += 1

    end = drive(queue_steps(console_mq, "retry_all", "mail", limit=100), should_stop=stop_after_three,
                on_progress=count)

    assert end.cancelled and end.tally.moved == 300
    assert console_mq.stats("mail").counts["failed"] == 700


def test_a_selected_job_is_written_state_attempts_id_and_the_id_may_hold_colons() -> None:
    assert Selected.parse("failed:3:order:42") == Selected("order:42", "failed", "3")
    assert Selected.parse("pending::a") == Selected("a", "pending", "")


def test_a_run_whose_process_stopped_is_shown_as_stalled(viewer_client: Client, console_mq: EchoMQ) -> None:
    entry = AuditEntry.objects.create(username="otto", queue="mail", action="retry_all", scope="queue",
                                      outcome="running", moved=40,
                                      updated_at=timezone.now() - timedelta(minutes=5))

    page = viewer_client.get(f"/actions/runs/{entry.pk}/").content.decode()

    assert "has most likely stopped" in page and "40 moved" in page
