"""The per-job buttons: each is one compare-and-move script, answered in place and recorded."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from dashboard.actions.models import AuditEntry
from queues import EchoMQ, Refused
from tests.support.confirm import confirmation_token, post_confirming
from tests.support.htmx import htmx_post
from tests.support.jobs import failed_job
from tests.support.redis_servers import free_port

URL = "/actions/job/"


def act(client: Client, mq: EchoMQ, move: str, job_id: str, **extra: Any) -> Any:
    view = mq.job("mail", job_id)
    data = {"q": "mail", "id": job_id, "move": move, "state": view.state, "attempts": view.attempts, **extra}
    return htmx_post(client, URL, data)


def test_retry_moves_a_failed_job_to_pending_and_says_so_in_place(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")

    response = act(operator_client, console_mq, "retry", "a")

    assert response.status_code == 200
    assert response.content.decode().startswith('<p class="action-result moved"')
    assert "retried: job a is now pending (attempts 1)" in response.content.decode()
    assert console_mq.job("mail", "a").state == "pending"
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.queue, entry.outcome) == ("otto", "retry", "mail", "moved")
    assert entry.jobs == [{"id": "a", "state": "failed", "attempts": "1"}]
    assert entry.result == "retried: job a is now pending (attempts 1)"


def test_the_queue_history_names_the_operator_who_moved_the_job(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")

    act(operator_client, console_mq, "retry", "a")

    assert [e.actor for e in console_mq.job_events("mail", "a") if e.move == "retry"] == ["console:otto"]


def test_promote_makes_a_delayed_job_due_now(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="later", delay_ms=3_600_000)

    response = act(operator_client, console_mq, "promote", "later")

    assert "promoted: job later is now pending" in response.content.decode()
    assert console_mq.stats("mail").due == 1


def test_recover_brings_back_a_lapsed_lease_and_refuses_a_live_one(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="lapsed")
    console_mq.enqueue("mail", "x", job_id="live")
    console_mq.claim("mail", lease_ms=1, count=1)
    console_mq.claim("mail", lease_ms=60_000, count=1)
    time.sleep(0.01)

    lapsed = act(operator_client, console_mq, "recover", "lapsed")
    live = act(operator_client, console_mq, "recover", "live")

    assert "recovered: job lapsed is now pending" in lapsed.content.decode()
    assert "refused: its lease has not lapsed yet: job live is now active (attempts 1)" in live.content.decode()
    assert console_mq.job("mail", "live").state == "active"
    assert list(AuditEntry.objects.order_by("id").values_list("outcome", flat=True)) == ["moved", "refused"]


def test_cancel_fails_an_active_job_and_its_worker_is_refused_at_completion(operator_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    job = console_mq.claim("mail", lease_ms=60_000)[0]

    asked = act(operator_client, console_mq, "cancel", "a")
    assert "Cancel running job a (active, attempts 1) of" in asked.content.decode()
    assert console_mq.job("mail", "a").state == "active"

    response = act(operator_client, console_mq, "cancel", "a", confirmation=confirmation_token(asked.content.decode()))

    assert "cancelled: job a is now failed (attempts 1)" in response.content.decode()
    assert console_mq.job("mail", "a").text("last_error") == "cancelled"
    with pytest.raises(Refused):
        console_mq.complete("mail", "a", job.token)
    assert console_mq.job("mail", "a").state == "failed"


def test_delete_asks_for_confirmation_first_and_changes_nothing_until_confirmed(operator_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")

    asked = act(operator_client, console_mq, "delete", "a")

    assert asked.status_code == 200
    assert b"Delete job a (pending, attempts 0) from" in asked.content and b"cannot be undone" in asked.content
    assert console_mq.job("mail", "a").exists
    assert not AuditEntry.objects.exists()

    done = act(operator_client, console_mq, "delete", "a", confirmation=confirmation_token(asked.content.decode()))

    assert "deleted: job a is now deleted (attempts 0)" in done.content.decode()
    assert not console_mq.job("mail", "a").exists
    assert AuditEntry.objects.get().action == "delete"


def test_a_job_that_moved_on_since_the_page_was_drawn_is_refused_and_recorded(operator_client: Client,
                                                                            console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    shown = console_mq.job("mail", "a")
    console_mq.retry("mail", "a")
    job = console_mq.claim("mail")[0]
    console_mq.complete("mail", "a", job.token)

    response = htmx_post(operator_client, URL, {"q": "mail", "id": "a", "move": "retry", "state": shown.state,
                                               "attempts": shown.attempts})

    assert response.status_code == 200
    assert "refused: job a is now done (attempts 2)" in response.content.decode()
    assert console_mq.job("mail", "a").state == "done"
    entry = AuditEntry.objects.get()
    assert (entry.outcome, entry.jobs[0]["state"], entry.jobs[0]["attempts"]) == ("refused", "failed", "1")


def test_the_same_attempts_in_another_state_is_refused(operator_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")

    response = post_confirming(operator_client, URL, {"q": "mail", "id": "a", "move": "cancel", "state": "active",
                                                     "attempts": "0"})

    assert "refused: job a is now pending (attempts 0)" in response.content.decode()
    assert console_mq.job("mail", "a").state == "pending"


def test_a_missing_job_is_refused_in_words(operator_client: Client, console_mq: EchoMQ) -> None:
    response = htmx_post(operator_client, URL, {"q": "mail", "id": "ghost", "move": "retry", "state": "failed",
                                               "attempts": "1"})

    assert "refused: job ghost does not exist" in response.content.decode()
    assert AuditEntry.objects.get().outcome == "refused"


@pytest.mark.parametrize("data, words", [
    ({"q": "mail", "id": "a", "move": "explode", "state": "failed"}, "unknown action"),
    ({"q": "ma{il", "id": "a", "move": "retry", "state": "failed"}, "queue name"),
    ({"q": "mail", "id": "a", "move": "retry", "state": "failed", "attempts": "one"}, "attempts"),
    ({"q": "mail", "id": "a", "move": "retry", "state": ""}, "state the page showed"),
])
def test_bad_input_is_a_readable_400_that_changes_and_records_nothing(operator_client: Client, console_mq: EchoMQ,
                                                                    data: dict[str, str], words: str) -> None:
    failed_job(console_mq, "mail", "a")

    response = htmx_post(operator_client, URL, data)

    assert response.status_code == 400
    assert words in response.content.decode() and "not done" in response.content.decode()
    assert console_mq.job("mail", "a").state == "failed"
    assert not AuditEntry.objects.exists()


def test_a_plain_form_post_without_htmx_gets_a_whole_page(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")

    response = operator_client.post(URL, {"q": "mail", "id": "a", "move": "retry", "state": "failed", "attempts": "1"})

    assert response.status_code == 200
    assert b"<html" in response.content and b"retried: job a is now pending" in response.content


def test_the_buttons_carry_the_state_and_attempts_the_page_shows(operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")

    job_page = operator_client.get("/job/?q=mail&id=a").content.decode()
    queue_page = operator_client.get("/queue/?q=mail&state=failed").content.decode()

    for html in (job_page, queue_page):
        assert 'name="state" value="failed"' in html and 'name="attempts" value="1"' in html
        assert 'value="retry"' in html and 'value="delete"' in html and 'value="cancel"' not in html
    assert 'value="failed:1:a"' in queue_page
    assert 'id="action-results"' in job_page and 'id="action-results"' in queue_page


def test_with_redis_unreachable_the_press_is_answered_in_words_and_recorded(operator_client: Client,
                                                                           settings: Any) -> None:
    settings.EMQ_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = htmx_post(operator_client, URL, {"q": "mail", "id": "a", "move": "retry", "state": "failed",
                                               "attempts": "1"})

    assert response.status_code == 200
    assert "not known whether it ran: redis unreachable" in response.content.decode()
    assert AuditEntry.objects.get().outcome == "error"


def test_with_redis_unreachable_a_bulk_action_is_refused_before_it_starts(operator_client: Client,
                                                                         settings: Any) -> None:
    settings.EMQ_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = htmx_post(operator_client, "/actions/queue/", {"q": "mail", "action": "retry_all"})

    assert response.status_code == 503
    assert "not done: redis unreachable" in response.content.decode()
    assert not AuditEntry.objects.exists()
