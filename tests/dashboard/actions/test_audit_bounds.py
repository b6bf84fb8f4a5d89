"""A refused press cannot flood the audit log or plant text in it: only validated, bounded fields are kept."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dashboard.actions.audit import FOLD_WINDOW, FORBIDDEN_JOBS_KEPT, REFUSALS_PER_WINDOW
from dashboard.actions.bulk import MAX_SELECTION
from dashboard.actions.models import RESULT_LIMIT, AuditEntry, bounded
from queues import EchoMQ

pytestmark = pytest.mark.django_db

BIG = 200_000


def _row_bytes(entry: AuditEntry) -> int:
    return sum(len(json.dumps(value, default=str)) for value in (
        entry.username, entry.queue, entry.action, entry.scope, entry.jobs, entry.parameters, entry.outcome,
        entry.result, entry.outcomes, entry.cancel_requested_by))


def test_twenty_huge_refused_posts_leave_one_small_row_that_counts_them(viewer_client: Client,
                                                                      console_mq: EchoMQ) -> None:
    for _ in range(20):
        response = viewer_client.post("/actions/selection/", {
            "q": "mail", "move": "retry", "id": "", "note": "x" * BIG,
            "job": [f"failed:1:job-{i}-" + "y" * 200 for i in range(300)] + ["z" * BIG]})
        assert response.status_code == 403

    [row] = AuditEntry.objects.all()
    assert _row_bytes(row) < 4_000
    assert len(row.jobs) == FORBIDDEN_JOBS_KEPT and row.parameters == {"ticked": 301, "repeats": 19}
    assert row.jobs[0] == {"id": "job-0-" + "y" * 200, "state": "failed", "attempts": "1"}


def test_a_selection_over_the_limit_is_refused_before_anything_is_recorded(viewer_client: Client,
                                                                           operator_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    data = {"q": "mail", "move": "retry", "job": [f"failed:1:j{i}" for i in range(MAX_SELECTION + 1)]}

    answers = [client.post("/actions/selection/", data) for client in (viewer_client, operator_client)]

    assert [a.status_code for a in answers] == [400, 400]
    assert f"at most {MAX_SELECTION} jobs can be ticked at once, not {MAX_SELECTION + 1}" in answers[0].content.decode()
    assert not AuditEntry.objects.exists()


def test_a_user_writes_at_most_the_stated_refused_rows_a_minute_however_they_vary_what_they_post(
        viewer_client: Client, console_mq: EchoMQ) -> None:
    for n in range(50):
        viewer_client.post("/actions/queue/", {"q": f"mail-{n}", "action": "retry_all"})

    rows = AuditEntry.objects.order_by("id")
    assert rows.count() == REFUSALS_PER_WINDOW
    assert [r.queue for r in rows] == [f"mail-{n}" for n in range(REFUSALS_PER_WINDOW)]
    assert rows.last().parameters["repeats"] == 50 - REFUSALS_PER_WINDOW  # type: ignore[union-attr]


def test_a_refusal_after_the_window_is_a_row_of_its_own(viewer_client: Client, console_mq: EchoMQ) -> None:
    data = {"q": "mail", "action": "retry_all"}
    viewer_client.post("/actions/queue/", data)
    AuditEntry.objects.update(created_at=timezone.now() - FOLD_WINDOW - timedelta(seconds=1))

    viewer_client.post("/actions/queue/", data)

    assert AuditEntry.objects.count() == 2
    assert all("repeats" not in r.parameters for r in AuditEntry.objects.all())


def test_a_refused_job_press_keeps_only_what_validates(viewer_client: Client, console_mq: EchoMQ) -> None:
    viewer_client.post("/actions/job/", {"q": "mail", "id": "a" * 5000, "move": "retry", "state": "s" * 5000,
                                         "attempts": "9" * 5000})
    viewer_client.post("/actions/job/", {"q": "mail-2", "id": "a", "move": "retry", "state": "s" * 5000,
                                         "attempts": "1; DROP"})

    too_long, odd = AuditEntry.objects.order_by("id")
    assert (too_long.jobs, too_long.parameters) == ([], {"invalid_ids": 1})
    assert odd.jobs == [{"id": "a", "state": "", "attempts": ""}]


def test_an_unknown_action_or_a_bad_queue_is_recorded_as_such_not_as_sent(viewer_client: Client,
                                                                           console_mq: EchoMQ) -> None:
    viewer_client.post("/actions/queue/", {"q": "mail\nforbidden: approved by admin", "action": "<b>approve</b>"})

    row = AuditEntry.objects.get()
    assert (row.action, row.queue, row.outcome) == ("unknown", "", "refused")
    assert row.result.startswith("forbidden: You are signed in as a viewer")
    assert "approve" not in json.dumps(row.parameters) + json.dumps(row.jobs)


def test_free_text_is_cut_to_the_stated_limit_saying_so() -> None:
    assert bounded("short") == "short"
    cut = bounded("r" * 50_000)
    assert len(cut) == RESULT_LIMIT and cut.endswith("more characters not kept)")


def test_a_row_saved_with_long_text_keeps_the_bounded_text(db: None) -> None:
    entry = AuditEntry.objects.create(username="u" * 500, queue="mail", action="retry", scope="job",
                                      outcome="refused", result="r" * 50_000)

    entry.refresh_from_db()
    assert len(entry.result) == RESULT_LIMIT and len(entry.username) == 150
