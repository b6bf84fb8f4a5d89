"""A queue-wide confirmation binds its count: the run acts on no job that was not counted when it was shown.

Purge and retry all take only jobs whose score is at most the server time of
the count, and no queue-wide run moves more than the count; a confirmation
redeemed after the count grew asks again instead of acting. The races are
made by construction: the 500 completions happen between the confirmation
and the run, inside the real view.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions import runner, services, views
from dashboard.actions.bulk import drive, queue_steps
from dashboard.actions.models import AuditEntry
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from tests.support.confirm import confirmation_token
from tests.support.jobs import done_jobs, failed_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def finished(entry_id: int) -> AuditEntry:
    assert runner.wait(entry_id, timeout=60), "the run did not end"
    return AuditEntry.objects.get(pk=entry_id)


def ask(client: Client, data: dict[str, str]) -> str:
    asked = client.post("/actions/queue/", data, headers={"HX-Request": "true"})
    assert asked.status_code == 200
    return asked.content.decode()


def race_before_the_run(monkeypatch: pytest.MonkeyPatch, race: Callable[[], object]) -> None:
    """``race`` runs after the view checked the confirmation and the count, just before the run starts."""
    real = services.queue_act

    def raced(**kwargs: Any) -> AuditEntry:
        race()
        return real(**kwargs)

    monkeypatch.setattr(views.services, "queue_act", raced)


def test_a_purge_of_3_done_jobs_raced_by_500_completions_before_its_run_purges_the_3_only(
        operator_client: Client, console_mq: EchoMQ, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = set(done_jobs(console_mq, "mail", 3))
    data = {"q": "mail", "action": "purge_done", "older_than_ms": "0"}
    page = ask(operator_client, data)
    assert "Purge 3 done jobs of" in page
    time.sleep(0.002)  # the 500 finish in a later millisecond than the count was read in
    race_before_the_run(monkeypatch, lambda: done_jobs(console_mq, "mail", 500))

    started = operator_client.post("/actions/queue/", {**data, "confirmation": confirmation_token(page)},
                                   headers={"HX-Request": "true"})

    assert started.status_code == 200
    entry = finished(AuditEntry.objects.get(action="purge_done").pk)
    assert (entry.outcome, entry.moved) == ("finished", 3)
    assert entry.parameters["at_most"] == 3
    assert console_mq.stats("mail").counts["done"] == 500
    assert not any(console_mq.job("mail", job_id).exists for job_id in counted)


def test_a_retry_all_of_5_failed_jobs_raced_by_300_failures_before_its_run_retries_the_5_only(
        operator_client: Client, console_mq: EchoMQ, monkeypatch: pytest.MonkeyPatch) -> None:
    failed_jobs(console_mq, "mail", 5)
    data = {"q": "mail", "action": "retry_all"}
    page = ask(operator_client, data)
    assert "Retry 5 failed jobs of" in page
    time.sleep(0.002)
    race_before_the_run(monkeypatch, lambda: failed_jobs(console_mq, "mail", 300))

    operator_client.post("/actions/queue/", {**data, "confirmation": confirmation_token(page)},
                         headers={"HX-Request": "true"})

    entry = finished(AuditEntry.objects.get(action="retry_all").pk)
    assert entry.moved == 5
    assert console_mq.stats("mail").counts["failed"] == 300


def test_a_purge_confirmed_for_3_jobs_asks_again_when_500_more_finished_before_it_was_confirmed(
        operator_client: Client, console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 3)
    data = {"q": "mail", "action": "purge_done", "older_than_ms": "0"}
    page = ask(operator_client, data)
    done_jobs(console_mq, "mail", 500)

    again = operator_client.post("/actions/queue/", {**data, "confirmation": confirmation_token(page)},
                                 headers={"HX-Request": "true"})

    text = again.content.decode()
    assert again.status_code == 200 and "Purge 503 done jobs of" in text
    assert "More jobs are there now than when you were asked (503, not 3): nothing was done" in text
    assert not AuditEntry.objects.filter(action="purge_done").exists()
    assert console_mq.stats("mail").counts["done"] == 503
    # Confirming what it says now runs it.
    operator_client.post("/actions/queue/", {**data, "confirmation": confirmation_token(text)},
                         headers={"HX-Request": "true"})
    assert finished(AuditEntry.objects.get(action="purge_done").pk).moved == 503


def test_the_api_asks_again_when_the_count_grew_and_binds_the_run_to_the_count_it_confirmed(
        client: Client, operator: User, console_mq: EchoMQ) -> None:
    headers = {"Authorization": f"Bearer {api_token_create(user=operator, name='api')}"}
    failed_jobs(console_mq, "mail", 2)
    body = {"queue": "mail", "action": "retry_all"}
    asked = client.post("/api/queue/actions", body, content_type="application/json", headers=headers).json()
    failed_jobs(console_mq, "mail", 4)

    again = client.post("/api/queue/actions", {**body, "confirmation": asked["confirmation"]},
                        content_type="application/json", headers=headers)

    assert again.status_code == 428 and again.json()["count"] == 6
    assert "(6, not 2): nothing was done" in again.json()["warning"]
    assert console_mq.stats("mail").counts["failed"] == 6


def test_no_queue_wide_run_moves_more_than_its_count(console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 10)
    failed_jobs(console_mq, "mail", 10)
    console_mq.enqueue_many("mail", ["x"] * 10)
    console_mq.claim("mail", lease_ms=1, count=10)
    time.sleep(0.01)
    now = console_mq.server_time_ms("mail")

    ends = {action: drive(queue_steps(console_mq, action, "mail", at_most=3, as_of_ms=now, limit=2))
            for action in ("purge_done", "retry_all", "recover_all")}

    assert {action: end.tally.moved for action, end in ends.items()} == {
        "purge_done": 3, "retry_all": 3, "recover_all": 3}
    counts = console_mq.stats("mail").counts
    assert (counts["done"], counts["failed"], console_mq.stats("mail").lapsed) == (7, 7, 7)


def test_a_purge_bound_to_a_time_leaves_the_jobs_that_finished_after_it(console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 4)
    as_of = console_mq.server_time_ms("mail")
    time.sleep(0.002)
    later = set(done_jobs(console_mq, "mail", 6))

    end = drive(queue_steps(console_mq, "purge_done", "mail", as_of_ms=as_of))

    assert end.tally.moved == 4
    assert all(console_mq.job("mail", job_id).exists for job_id in later)
