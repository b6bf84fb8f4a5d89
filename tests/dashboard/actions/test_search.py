"""Acting on what a search found: asked first with the query and the count, then run as a bulk run with an audit row."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions import runner, services
from dashboard.actions.bulk import Tally
from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.search.requests import SearchRequest, count_token, counts_token
from queues import EchoMQ
from queues.integrity import check_queue
from queues.search import Query
from tests.support.confirm import confirmation_token
from tests.support.jobs import failed_jobs
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)


def finished(entry_id: int) -> AuditEntry:
    assert runner.wait(entry_id, timeout=60), "the run did not end"
    return AuditEntry.objects.get(pk=entry_id)


SEARCH = {"q": "mail", "state": "failed", "error": "timeout"}


def ask(client: Client, data: dict[str, Any]) -> Any:
    return client.post("/actions/search/", data, headers={"HX-Request": "true"})


def test_the_confirmation_states_the_query_and_how_many_the_search_found(operator_client: Client,
                                                                         operator: User, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 30, "{}", error="timeout after 3012 ms")
    failed_jobs(console_mq, "mail", 5, "{}", error="card declined")
    counted = count_token(SearchRequest.parse(SEARCH, now_ms=0), count=30, user_id=operator.pk)

    asked = ask(operator_client, {**SEARCH, "move": "retry", "counted": counted})

    html = asked.content.decode()
    assert asked.status_code == 200 and "<dialog" in html
    assert "Retry the 30 jobs the search found: failed jobs whose error contains &#x27;timeout&#x27;" in html
    assert AuditEntry.objects.count() == 0 and console_mq.stats("mail").counts["failed"] == 35


def test_without_a_signed_count_the_confirmation_counts_now(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 12, "{}", error="timeout")
    forged = count_token(SearchRequest.parse({**SEARCH, "error": "other"}, now_ms=0), count=99, user_id=1)

    html = ask(operator_client, {**SEARCH, "move": "delete", "counted": forged}).content.decode()

    assert "Delete the 12 jobs matching now" in html and "This cannot be undone." in html


def test_a_confirmed_retry_moves_the_matches_and_writes_the_query_in_the_audit_row(operator_client: Client,
                                                                                   console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 30, "{}", error="timeout")
    declined = failed_jobs(console_mq, "mail", 5, "{}", error="card declined")
    token = confirmation_token(ask(operator_client, {**SEARCH, "move": "retry"}).content.decode())
    asked_fields = {**SEARCH, "move": "retry", "at_most": "30", "confirmation": token}

    started = ask(operator_client, asked_fields)

    assert started.status_code == 200
    entry = finished(AuditEntry.objects.get().pk)
    assert (entry.scope, entry.action, entry.outcome, entry.moved, entry.skipped, entry.missing) == (
        "search", "retry", "finished", 30, 0, 0)
    assert entry.parameters["query"] == {"state": "failed", "error": "timeout"}
    assert entry.parameters["describe"] == "failed jobs whose error contains 'timeout'"
    assert entry.parameters["at_most"] == 30
    assert {console_mq.job("mail", i).state for i in declined} == {"failed"}
    assert console_mq.stats("mail").counts["pending"] == 30


def test_a_confirmation_for_a_larger_count_or_another_query_is_refused(operator_client: Client,
                                                                       console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 3, "{}", error="timeout")
    token = confirmation_token(ask(operator_client, {**SEARCH, "move": "retry"}).content.decode())

    bigger = ask(operator_client, {**SEARCH, "move": "retry", "at_most": "3000", "confirmation": token})
    other = ask(operator_client, {**SEARCH, "error": "time", "move": "retry", "at_most": "3", "confirmation": token})

    assert bigger.status_code == 409 and other.status_code == 409
    assert console_mq.stats("mail").counts["failed"] == 3
    assert not AuditEntry.objects.exclude(outcome="refused").exists()


@pytest.mark.parametrize(("data", "message"), [
    ({**SEARCH, "move": "promote"}, "promote applies to pending"),
    ({**SEARCH, "q": "", "move": "retry"}, "one queue"),
    ({"q": "mail", "state": "failed", "move": "retry"}, "give at least one filter"),
    ({**SEARCH, "field": "a..b=1", "move": "retry"}, "cannot read field path"),
])
def test_a_bad_request_is_refused_in_words_and_changes_nothing(operator_client: Client, console_mq: EchoMQ,
                                                              data: dict[str, str], message: str) -> None:
    failed_jobs(console_mq, "mail", 2, "{}", error="timeout")

    response = ask(operator_client, data)

    assert response.status_code == 400 and message in response.content.decode()
    assert console_mq.stats("mail").counts["failed"] == 2 and not AuditEntry.objects.exists()


def test_a_viewer_may_not_act_on_a_search(viewer_client: Client, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 2, "{}", error="timeout")

    response = ask(viewer_client, {**SEARCH, "move": "delete"})

    assert response.status_code == 403 and console_mq.stats("mail").counts["failed"] == 2


def test_a_bulk_over_a_search_cancelled_half_way_leaves_every_job_in_one_state_with_an_audit_row(
        operator: User, console_mq: EchoMQ, monkeypatch: pytest.MonkeyPatch) -> None:
    total = 2000
    failed_jobs(console_mq, "mail", total, "{}", error="timeout")
    gate, first_step_done = threading.Event(), threading.Event()
    real_steps = services.search_steps

    def held_after_the_first_chunk(*args: Any, **kwargs: Any) -> Iterator[Tally]:
        steps = real_steps(*args, **kwargs)
        yield next(steps)
        first_step_done.set()
        gate.wait(30)  # held until the operator has cancelled: the cancel lands half-way by construction
        yield from steps

    monkeypatch.setattr(services, "search_steps", held_after_the_first_chunk)
    entry = services.search_act(user=operator, move="retry", queue="mail", query=Query("failed", error="timeout"),
                                at_most=total)
    assert first_step_done.wait(30)
    services.run_cancel(user=operator, entry_id=entry.pk)
    gate.set()

    entry = finished(entry.pk)
    counts = console_mq.stats("mail").counts
    assert entry.outcome == "cancelled" and 0 < entry.moved < total
    assert counts == {"pending": entry.moved, "active": 0, "done": 0, "failed": total - entry.moved}
    assert check_queue(console_mq, "mail").ok
    assert entry.scope == "search" and entry.parameters["describe"] == "failed jobs whose error contains 'timeout'"


MANY = {"state": "failed", "error": "timeout"}


def ask_many(client: Client, counts: dict[str, int], **extra: str) -> Any:
    return ask(client, {**MANY, "counts": json.dumps(counts), **extra})


def test_acting_on_a_search_of_many_asks_once_with_the_query_the_total_and_each_queues_count(
        operator_client: Client, operator: User, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 3, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 2, "{}", error="timeout")
    counts = {"mail": 3, "sms": 2}
    counted = counts_token(SearchRequest.parse(MANY, now_ms=0), counts=counts, user_id=operator.pk)
    before = keyspace_dump(console_mq.redis)

    html = ask_many(operator_client, counts, move="delete", counted=counted).content.decode()

    assert "Delete the 5 jobs the search found: failed jobs whose error contains &#x27;timeout&#x27;, in" in html
    assert "2 queues (mail 3, sms 2)?" in html and "This cannot be undone." in html
    assert keyspace_dump(console_mq.redis) == before and not AuditEntry.objects.exists()


def test_without_signed_counts_a_search_of_many_counts_each_queue_now(operator_client: Client,
                                                                     console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 4, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 1, "{}", error="timeout")

    html = ask_many(operator_client, {"mail": 99, "sms": 99}, move="retry").content.decode()

    assert "Retry the 5 jobs matching now" in html and "2 queues (mail 4, sms 1)?" in html


def test_a_confirmed_act_on_a_search_of_many_is_one_run_with_one_audit_row_holding_the_query(
        operator_client: Client, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 3, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 2, "{}", error="timeout")
    declined = failed_jobs(console_mq, "sms", 2, "{}", error="card declined")
    asked = ask_many(operator_client, {"mail": 0, "sms": 0}, move="retry").content.decode()
    counts = json.loads(unescape(re.search(r'name="counts" value="([^"]*)"', asked).group(1)))  # type: ignore[union-attr]

    started = ask_many(operator_client, counts, move="retry", confirmation=confirmation_token(asked))

    assert started.status_code == 200 and counts == {"mail": 3, "sms": 2}
    entry = finished(AuditEntry.objects.get().pk)
    assert (entry.scope, entry.action, entry.outcome, entry.moved, entry.skipped, entry.missing) == (
        "search", "retry", "finished", 5, 0, 0)
    assert (entry.queue, entry.where, entry.queues) == ("", "2 queues", ["mail", "sms"])
    assert entry.parameters["query"] == {"state": "failed", "error": "timeout"}
    assert entry.parameters["counts"] == {"mail": 3, "sms": 2} and entry.parameters["at_most"] == 5
    assert {console_mq.job("sms", i).state for i in declined} == {"failed"}
    assert console_mq.stats("mail").counts["pending"] == 3 and console_mq.stats("sms").counts["pending"] == 2
    assert 'title="mail, sms">2 queues</td>' in operator_client.get("/audit/").content.decode()
    assert [e.pk for e in operator_client.get("/audit/?queue=sms").context["page"]] == [entry.pk]
    assert "on <span class=\"mono\">2 queues</span>" in operator_client.get(f"/actions/runs/{entry.pk}/").content.decode()


def test_each_queue_moves_at_most_what_it_matched_when_confirmed(operator_client: Client,
                                                                console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 2, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 2, "{}", error="timeout")
    asked = ask_many(operator_client, {"mail": 0, "sms": 0}, move="retry").content.decode()
    failed_jobs(console_mq, "mail", 3, "{}", error="timeout")  # came to match after the confirmation was asked

    ask_many(operator_client, {"mail": 2, "sms": 2}, move="retry", confirmation=confirmation_token(asked))

    entry = finished(AuditEntry.objects.get().pk)
    assert entry.moved == 4
    assert console_mq.stats("mail").counts == {"pending": 2, "active": 0, "done": 0, "failed": 3}
    assert console_mq.stats("sms").counts["pending"] == 2


def test_a_confirmation_of_a_search_of_many_for_other_counts_or_queues_is_refused_and_changes_nothing(
        operator_client: Client, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 2, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 2, "{}", error="timeout")
    token = confirmation_token(ask_many(operator_client, {"mail": 0, "sms": 0}, move="retry").content.decode())
    before = keyspace_dump(console_mq.redis)

    larger = ask_many(operator_client, {"mail": 2, "sms": 200}, move="retry", confirmation=token)
    other = ask_many(operator_client, {"mail": 2, "sms": 2, "billing": 1}, move="retry", confirmation=token)

    assert larger.status_code == 409 and other.status_code == 409
    assert keyspace_dump(console_mq.redis) == before
    assert not AuditEntry.objects.exclude(outcome="refused").exists()


@pytest.mark.parametrize(("counts", "message"), [
    ("not json", "name the queues"), ("{}", "name the queues"), ('{"a b": 1}', "queue name"),
    ('{"mail": -1}', "whole number"), ('{"mail": true}', "whole number"),
    (json.dumps({f"q{n}": 1 for n in range(101)}), "at most 100 queues"),
])
def test_a_search_of_many_with_bad_counts_is_refused_in_words(operator_client: Client, console_mq: EchoMQ,
                                                             counts: str, message: str) -> None:
    failed_jobs(console_mq, "mail", 2, "{}", error="timeout")
    before = keyspace_dump(console_mq.redis)

    response = ask(operator_client, {**MANY, "counts": counts, "move": "retry"})

    assert response.status_code == 400 and message in response.content.decode()
    assert keyspace_dump(console_mq.redis) == before and not AuditEntry.objects.exists()


def test_an_operator_kept_from_one_of_the_queues_may_not_act_on_the_search_of_many(
        operator_client: Client, operator: User, console_mq: EchoMQ) -> None:
    QueueGrant.objects.create(user=operator, pattern="mail")
    failed_jobs(console_mq, "mail", 2, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 2, "{}", error="timeout")
    before = keyspace_dump(console_mq.redis)

    response = ask_many(operator_client, {"mail": 2, "sms": 2}, move="retry")

    assert response.status_code == 403 and "not on sms" in response.content.decode()
    assert keyspace_dump(console_mq.redis) == before


def test_a_run_over_a_search_of_many_cancelled_half_way_leaves_every_job_in_one_state(
        operator: User, console_mq: EchoMQ, monkeypatch: pytest.MonkeyPatch) -> None:
    failed_jobs(console_mq, "mail", 300, "{}", error="timeout")
    failed_jobs(console_mq, "sms", 300, "{}", error="timeout")
    gate, first_step_done = threading.Event(), threading.Event()
    real_steps = services.search_steps_many

    def held_after_the_first_chunk(*args: Any, **kwargs: Any) -> Iterator[Tally]:
        steps = real_steps(*args, **kwargs)
        yield next(steps)
        first_step_done.set()
        gate.wait(30)  # held until the operator has cancelled: the cancel lands half-way by construction
        yield from steps

    monkeypatch.setattr(services, "search_steps_many", held_after_the_first_chunk)
    entry = services.search_act_many(user=operator, move="retry", query=Query("failed", error="timeout"),
                                     counts={"mail": 300, "sms": 300})
    assert first_step_done.wait(30)
    services.run_cancel(user=operator, entry_id=entry.pk)
    gate.set()

    entry = finished(entry.pk)
    pending = sum(console_mq.stats(q).counts["pending"] for q in ("mail", "sms"))
    failed_now = sum(console_mq.stats(q).counts["failed"] for q in ("mail", "sms"))
    assert entry.outcome == "cancelled" and 0 < entry.moved < 600
    assert (pending, failed_now) == (entry.moved, 600 - entry.moved)
    assert check_queue(console_mq, "mail").ok and check_queue(console_mq, "sms").ok
    assert entry.parameters["describe"] == "failed jobs whose error contains 'timeout'"
