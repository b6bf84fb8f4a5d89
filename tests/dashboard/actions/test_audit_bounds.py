"""A refused press cannot flood the audit log or plant text in it: only validated, bounded fields are kept."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from dashboard.actions.audit import FORBIDDEN_JOBS_KEPT
from dashboard.actions.models import RESULT_LIMIT, AuditEntry, bounded
from queues import EchoMQ

pytestmark = pytest.mark.django_db

BIG = 200_000


def _row_bytes(entry: AuditEntry) -> int:
    return sum(len(json.dumps(value, default=str)) for value in (
        entry.username, entry.queue, entry.action, entry.scope, entry.jobs, entry.parameters, entry.outcome,
        entry.result, entry.outcomes, entry.cancel_requested_by))


def test_twenty_huge_refused_posts_leave_twenty_small_rows(viewer_client: Client, console_mq: EchoMQ) -> None:
    for _ in range(20):
        response = viewer_client.post("/actions/selection/", {
            "q": "mail", "move": "retry", "id": "", "note": "x" * BIG,
            "job": [f"failed:1:job-{i}-" + "y" * 200 for i in range(300)] + ["z" * BIG]})
        assert response.status_code == 403

    rows = list(AuditEntry.objects.all())
    assert len(rows) == 20
    assert max(_row_bytes(r) for r in rows) < 60_000
    first = rows[0]
    assert len(first.jobs) == FORBIDDEN_JOBS_KEPT and first.parameters == {"ticked": 301}
    assert first.jobs[0] == {"id": "job-0-" + "y" * 200, "state": "failed", "attempts": "1"}


def test_a_refused_job_press_keeps_only_what_validates(viewer_client: Client, console_mq: EchoMQ) -> None:
    viewer_client.post("/actions/job/", {"q": "mail", "id": "a" * 5000, "move": "retry", "state": "s" * 5000,
                                         "attempts": "9" * 5000})
    viewer_client.post("/actions/job/", {"q": "mail", "id": "a", "move": "retry", "state": "s" * 5000,
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
