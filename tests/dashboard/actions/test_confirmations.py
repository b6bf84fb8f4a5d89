"""Destructive or large actions run only with a confirmation the server issued: to this user, for this action
and these parameters, within two minutes, once. Asking changes nothing; a bad confirmation is refused in words."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from dashboard.actions import confirmations, runner
from dashboard.actions.models import AuditEntry
from dashboard.roles import OPERATORS, user_create
from queues import EchoMQ
from tests.support.confirm import confirmation_token
from tests.support.htmx import htmx_post
from tests.support.jobs import done_jobs, failed_jobs
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def busy(console_mq: EchoMQ) -> dict[str, list[str]]:
    """A queue with jobs in every state: 4 done, 3 failed, 2 running (1 of them lapsed), 5 pending."""
    jobs = {"done": done_jobs(console_mq, "mail", 4), "failed": failed_jobs(console_mq, "mail", 3)}
    jobs["active"] = console_mq.enqueue_many("mail", ["x"] * 2)
    console_mq.claim("mail", lease_ms=1, count=1)
    console_mq.claim("mail", lease_ms=60_000, count=1)
    jobs["pending"] = console_mq.enqueue_many("mail", ["x"] * 5)
    time.sleep(0.01)
    return jobs


def _ticked(mq: EchoMQ, state: str, ids: list[str]) -> list[str]:
    return [f"{state}:{mq.job('mail', j).attempts}:{j}" for j in ids]


# Every destructive or large action, as its button posts it, and the count its confirmation must state.
def destructive(mq: EchoMQ, jobs: dict[str, list[str]]) -> list[tuple[str, dict[str, Any], str]]:
    running = jobs["active"][1]
    return [
        ("/actions/queue/", {"q": "mail", "action": "purge_done", "older_than_ms": "0"},
         "Purge 4 done jobs of <span class=\"mono\">mail</span>, of any age?"),
        ("/actions/queue/", {"q": "mail", "action": "purge_failed", "older_than_ms": "0"},
         "Purge 3 failed jobs of <span class=\"mono\">mail</span>, of any age?"),
        ("/actions/queue/", {"q": "mail", "action": "retry_all"}, "Retry 3 failed jobs of"),
        ("/actions/queue/", {"q": "mail", "action": "recover_all"}, "Recover 1 lapsed lease of"),
        ("/actions/job/", {"q": "mail", "id": jobs["failed"][0], "move": "delete", "state": "failed",
                           "attempts": "1"}, f"Delete job {jobs['failed'][0]} (failed, attempts 1) from"),
        ("/actions/job/", {"q": "mail", "id": running, "move": "cancel", "state": "active", "attempts": "1"},
         f"Cancel running job {running} (active, attempts 1) of"),
        ("/actions/selection/", {"q": "mail", "move": "delete", "job": _ticked(mq, "done", jobs["done"][:2])},
         "Delete 2 jobs ticked in"),
        ("/actions/selection/", {"q": "mail", "move": "cancel", "job": _ticked(mq, "pending", jobs["pending"])},
         "Cancel 5 jobs ticked in"),
    ]


def test_every_destructive_action_first_states_what_it_would_do_and_changes_nothing(
        operator_client: Client, console_mq: EchoMQ, busy: dict[str, list[str]]) -> None:
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]

    for url, data, question in destructive(console_mq, busy):
        for answer in (htmx_post(operator_client, url, data), operator_client.post(url, data)):
            html = answer.content.decode()
            assert answer.status_code == 200, html
            assert question in html, (question, html)
            assert confirmation_token(html)

    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]
    assert not AuditEntry.objects.exists()


def test_posting_without_the_confirmation_step_or_with_a_forged_one_changes_nothing_and_is_audited(
        operator_client: Client, console_mq: EchoMQ, busy: dict[str, list[str]]) -> None:
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]
    cases = destructive(console_mq, busy)

    for url, data, _ in cases:
        for forged in ("yes", "eyJuIjoiMDAifQ:1tXyZa:forged-signature"):
            answer = htmx_post(operator_client, url, {**data, "confirmation": forged})
            assert answer.status_code == 409
            assert "refused: this confirmation was not issued by the console: nothing was done" in answer.content.decode()

    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]
    # Each case's two forgeries are the same refusal: one row counting both.
    refusals = AuditEntry.objects.all()
    assert refusals.count() == len(cases)
    assert set(refusals.values_list("outcome", flat=True)) == {"refused"}
    assert [r.parameters.get("repeats") for r in refusals] == [1] * len(cases)


def test_a_confirmed_action_runs_once_and_its_replay_is_refused(operator_client: Client, console_mq: EchoMQ,
                                                                busy: dict[str, list[str]]) -> None:
    data = {"q": "mail", "action": "purge_done", "older_than_ms": "0"}
    token = confirmation_token(htmx_post(operator_client, "/actions/queue/", data).content.decode())

    ran = htmx_post(operator_client, "/actions/queue/", {**data, "confirmation": token})
    entry = AuditEntry.objects.get()
    assert ran.status_code == 200 and runner.wait(entry.pk, timeout=30)
    assert console_mq.stats("mail").counts["done"] == 0
    for job in console_mq.claim("mail", lease_ms=60_000, count=2):  # two of the pending jobs finish
        console_mq.complete("mail", job.id, job.token)
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]

    replayed = htmx_post(operator_client, "/actions/queue/", {**data, "confirmation": token})

    assert replayed.status_code == 409
    assert "refused: this confirmation has already been used" in replayed.content.decode()
    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]
    refusal = AuditEntry.objects.latest("id")
    assert (refusal.action, refusal.queue, refusal.outcome) == ("purge_done", "mail", "refused")
    assert refusal.result.startswith("refused: this confirmation has already been used")


def test_another_users_confirmation_is_refused(operator_client: Client, console_mq: EchoMQ,
                                               busy: dict[str, list[str]]) -> None:
    data = {"q": "mail", "action": "retry_all"}
    token = confirmation_token(htmx_post(operator_client, "/actions/queue/", data).content.decode())
    other = Client()
    other.force_login(user_create(username="olga", password="olga-password", role=OPERATORS))
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]

    answer = htmx_post(other, "/actions/queue/", {**data, "confirmation": token})

    assert answer.status_code == 409
    assert "refused: this confirmation was issued to another user" in answer.content.decode()
    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]
    assert AuditEntry.objects.get().username == "olga"
    # Still good for the one it was issued to.
    assert htmx_post(operator_client, "/actions/queue/", {**data, "confirmation": token}).status_code == 200
    assert runner.wait(AuditEntry.objects.latest("id").pk, timeout=30)


def test_a_confirmation_for_other_parameters_is_refused(operator_client: Client, console_mq: EchoMQ,
                                                        busy: dict[str, list[str]]) -> None:
    young = {"q": "mail", "action": "purge_failed", "older_than_ms": "3600000"}
    token = confirmation_token(htmx_post(operator_client, "/actions/queue/",
                                         {**young, "older_than_ms": "1"}).content.decode())
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]

    for data in ({**young, "older_than_ms": "0"}, {**young, "action": "purge_done", "older_than_ms": "1"},
                 {**young, "q": "other", "older_than_ms": "1"}):
        answer = htmx_post(operator_client, "/actions/queue/", {**data, "confirmation": token})
        assert answer.status_code == 409
        assert "refused: this confirmation was for another action, queue or jobs" in answer.content.decode()

    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]


def test_a_ticked_selection_confirmed_for_some_jobs_does_not_run_on_others(
        operator_client: Client, console_mq: EchoMQ, busy: dict[str, list[str]]) -> None:
    ticked = _ticked(console_mq, "done", busy["done"][:2])
    data = {"q": "mail", "move": "delete", "job": ticked}
    token = confirmation_token(htmx_post(operator_client, "/actions/selection/", data).content.decode())
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]

    more = htmx_post(operator_client, "/actions/selection/",
                     {**data, "job": [*ticked, *_ticked(console_mq, "done", busy["done"][2:3])], "confirmation": token})

    assert more.status_code == 409
    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]


def test_an_expired_confirmation_is_refused(operator_client: Client, console_mq: EchoMQ,
                                            busy: dict[str, list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    data = {"q": "mail", "id": busy["failed"][0], "move": "delete", "state": "failed", "attempts": "1"}
    token = confirmation_token(htmx_post(operator_client, "/actions/job/", data).content.decode())
    later = time.time() + confirmations.MAX_AGE_S + 5

    class Later:
        @staticmethod
        def time() -> float:
            return later

    monkeypatch.setattr("django.core.signing.time", Later)
    answer = htmx_post(operator_client, "/actions/job/", {**data, "confirmation": token})

    assert answer.status_code == 409
    assert "refused: this confirmation has expired" in answer.content.decode()
    assert console_mq.job("mail", busy["failed"][0]).exists


def test_without_javascript_the_two_steps_are_plain_forms(operator_client: Client, console_mq: EchoMQ,
                                                          busy: dict[str, list[str]]) -> None:
    data = {"q": "mail", "action": "purge_failed", "older_than_ms": "0"}
    asked = operator_client.post("/actions/queue/", data, headers={"Referer": "http://testserver/queue/?q=mail"})
    html = asked.content.decode()

    assert "<dialog class=\"confirm-dialog\" aria-labelledby=\"confirm-question\" open>" in html
    assert 'method="post" action="/actions/queue/"' in html
    assert 'href="http://testserver/queue/?q=mail" data-dismiss' in html  # "Keep them" goes back
    ran = operator_client.post("/actions/queue/", {**data, "confirmation": confirmation_token(html)})

    entry = AuditEntry.objects.get()
    assert ran.status_code == 302 and ran["Location"] == f"/actions/runs/{entry.pk}/"
    assert runner.wait(entry.pk, timeout=30)
    assert console_mq.stats("mail").counts["failed"] == 0


def test_small_undoable_moves_run_at_once(operator_client: Client, console_mq: EchoMQ,
                                          busy: dict[str, list[str]]) -> None:
    pending = busy["pending"][0]

    retry = htmx_post(operator_client, "/actions/job/", {"q": "mail", "id": busy["failed"][0], "move": "retry",
                                                          "state": "failed", "attempts": "1"})
    cancel = htmx_post(operator_client, "/actions/job/", {"q": "mail", "id": pending, "move": "cancel",
                                                           "state": "pending", "attempts": "0"})
    ticked = htmx_post(operator_client, "/actions/selection/", {"q": "mail", "move": "retry",
                                                                "job": _ticked(console_mq, "failed", busy["failed"][1:])})

    assert "retried: job" in retry.content.decode() and "cancelled: job" in cancel.content.decode()
    assert "ws-connect" in ticked.content.decode()
    assert runner.wait(AuditEntry.objects.latest("id").pk, timeout=30)


def test_a_large_selection_asks_whatever_the_move(operator_client: Client, console_mq: EchoMQ) -> None:
    ids = failed_jobs(console_mq, "mail", 25)

    asked = htmx_post(operator_client, "/actions/selection/", {"q": "mail", "move": "retry",
                                                               "job": [f"failed:1:{j}" for j in ids]})

    assert "Retry 25 jobs ticked in" in asked.content.decode()
    assert "and 15 more" in asked.content.decode()
    assert console_mq.stats("mail").counts["failed"] == 25


def test_a_queue_action_with_nothing_to_do_says_so_and_offers_no_confirmation(operator_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    answer = htmx_post(operator_client, "/actions/queue/", {"q": "mail", "action": "recover_all"})

    assert "No lease of mail has lapsed now: nothing to recover." in answer.content.decode()
    assert 'name="confirmation"' not in answer.content.decode()
