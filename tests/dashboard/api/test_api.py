"""The JSON API: the pages' reads and the buttons' moves, with the same roles, grants, confirmations and audit."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions import runner
from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from tests.support.jobs import done_jobs, failed_jobs
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_token_create(user=user, name='api')}"}


def get(client: Client, url: str, headers: dict[str, str]) -> Any:
    return client.get(url, headers=headers)


def post(client: Client, url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json", headers=headers or {})


# Who may call it ---------------------------------------------------------------------------------

def test_it_answers_401_in_json_to_a_caller_without_credentials(client: Client, console_mq: EchoMQ) -> None:
    response = client.get("/api/queues")

    assert response.status_code == 401 and response.json() == {"error": "send Authorization: Bearer <token>, or sign in"}


def test_it_answers_403_to_a_token_whose_user_may_not_view(client: Client, console_mq: EchoMQ) -> None:
    bot = User.objects.create_user("orders-bot")

    response = get(client, "/api/queues", bearer(bot))

    assert response.status_code == 403 and "view_console" in response.json()["error"]


def test_a_viewer_reads_through_the_session_too(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")

    assert viewer_client.get("/api/queue?q=mail").json()["stats"]["due"] == 1


def test_a_viewer_may_not_move_a_job_and_the_refusal_is_audited(client: Client, viewer: User,
                                                               console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 1)
    job_id = console_mq.page("mail", "failed").rows[0].id
    before = keyspace_dump(console_mq.redis)

    response = post(client, "/api/job/actions", {"queue": "mail", "id": job_id, "move": "retry",
                                                 "expect_state": "failed", "expect_attempts": "1"}, bearer(viewer))

    assert response.status_code == 403 and "viewers see everything and change nothing" in response.json()["error"]
    assert keyspace_dump(console_mq.redis) == before
    refusal = AuditEntry.objects.get()
    assert (refusal.username, refusal.action, refusal.outcome) == ("vera", "retry", "refused")


def test_an_operator_granted_other_queues_is_refused_on_this_one(client: Client, operator: User,
                                                                 console_mq: EchoMQ) -> None:
    QueueGrant.objects.create(user=operator, pattern="billing-*")
    failed_jobs(console_mq, "mail", 1)
    job_id = console_mq.page("mail", "failed").rows[0].id

    response = post(client, "/api/job/actions", {"queue": "mail", "id": job_id, "move": "retry",
                                                 "expect_state": "failed"}, bearer(operator))

    assert response.status_code == 403 and "billing-* only" in response.json()["error"]
    assert console_mq.job("mail", job_id).state == "failed"


def test_a_session_write_needs_the_csrf_token_and_a_token_write_does_not(operator: User, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 2)
    first, second = [row.id for row in console_mq.page("mail", "failed").rows]
    session = Client(enforce_csrf_checks=True)
    session.force_login(operator)

    refused = post(session, "/api/job/actions", {"queue": "mail", "id": first, "move": "retry", "expect_state": "failed"})
    tokened = post(Client(enforce_csrf_checks=True), "/api/job/actions",
                   {"queue": "mail", "id": second, "move": "retry", "expect_state": "failed"}, bearer(operator))

    assert refused.status_code == 403 and console_mq.job("mail", first).state == "failed"
    assert tokened.status_code == 200 and console_mq.job("mail", second).state == "pending"


def test_the_orders_endpoint_keeps_its_own_view(client: Client, operator: User, console_mq: EchoMQ) -> None:
    response = post(client, "/api/orders", {"client_order_id": "c-1"}, bearer(operator))

    assert response.status_code == 403 and "place orders" in response.json()["error"]


# Reads ------------------------------------------------------------------------------------------

def test_queues_come_with_their_counts_a_page_at_a_time(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    for name in ("a", "b", "c"):
        console_mq.enqueue(name, "x")
    console_mq.enqueue("b", "y", delay_ms=60_000)
    headers = bearer(viewer)

    first = get(client, "/api/queues?limit=2", headers).json()
    rest = get(client, f"/api/queues?limit=2&after={first['next_after']}", headers).json()

    assert [q["queue"] for q in first["queues"]] == ["a", "b"] and first["next_after"] == "b"
    assert first["queues"][1]["stats"]["due"] == 1 and first["queues"][1]["stats"]["delayed"] == 1
    assert [q["queue"] for q in rest["queues"]] == ["c"] and rest["next_after"] is None


def test_a_state_is_read_page_by_page_by_cursor(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    ids = done_jobs(console_mq, "mail", 5)
    headers = bearer(viewer)

    pages, after = [], ""
    while True:
        page = get(client, f"/api/queue/jobs?q=mail&state=done&limit=2{after}", headers).json()
        pages.append([row["id"] for row in page["rows"]])
        if page["next_after"] is None:
            break
        after = f"&after={page['next_after']}"

    assert [len(p) for p in pages] == [2, 2, 1]
    assert sorted(sum(pages, [])) == sorted(ids)


def test_a_job_comes_with_its_history(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    [job_id] = failed_jobs(console_mq, "mail", 1, payload='{"to": "a@example.com"}')

    job = get(client, f"/api/job?q=mail&id={job_id}", bearer(viewer)).json()

    assert (job["state"], job["attempts"], job["payload_encoding"]) == ("failed", 1, "json")
    assert json.loads(job["payload"]) == {"to": "a@example.com"}
    assert [e["move"] for e in job["history"]][-3:] in (["enqueue", "claim", "fail"], ["fail", "claim", "enqueue"])
    assert job["fields"]["last_error"] == "boom"


def test_a_payload_that_is_not_text_comes_as_hex(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", b"\xff\x00\xfe", job_id="bin")

    job = get(client, "/api/job?q=mail&id=bin", bearer(viewer)).json()

    assert (job["payload_encoding"], job["payload"]) == ("bytes", "ff 00 fe")
    assert "the payload is not UTF-8 text (shown as bytes)" in job["warnings"]


def test_bad_input_is_a_400_in_words(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    headers = bearer(viewer)

    assert get(client, "/api/queue?q=a{b}", headers).status_code == 400
    assert get(client, "/api/queue?q=a{b}", headers).json()["error"] == (
        "bad request: q holds a character that is not allowed (braces, spaces, control characters, "
        "or ':' in a queue name)")
    assert "longer than 128 bytes" in get(client, f"/api/queue?q={'é' * 100}", headers).json()["error"]
    assert get(client, "/api/queue/jobs?q=mail&state=gone", headers).status_code == 400
    assert get(client, "/api/queue/jobs?q=mail&state=done&after=nocolon", headers).status_code == 400
    assert get(client, "/api/queue/jobs?q=mail&state=done&limit=100000", headers).status_code == 400
    assert get(client, "/api/job?q=mail&id=missing", headers).status_code == 404
    assert get(client, f"/api/runs/{2**70}", headers).status_code == 400


def test_the_audit_log_reads_newest_first_with_filters(client: Client, operator: User, console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 3)
    headers = bearer(operator)
    for row in console_mq.page("mail", "failed").rows:
        post(client, "/api/job/actions", {"queue": "mail", "id": row.id, "move": "retry", "expect_state": "failed"},
             headers)

    first = get(client, "/api/audit?limit=2&queue=mail&action=retry", headers).json()
    rest = get(client, f"/api/audit?limit=2&before={first['next_before']}", headers).json()

    assert [e["outcome"] for e in first["entries"] + rest["entries"]] == ["moved"] * 3
    ids = [e["id"] for e in first["entries"] + rest["entries"]]
    assert ids == sorted(ids, reverse=True) and rest["next_before"] is None


# Moves ------------------------------------------------------------------------------------------

def test_a_job_moves_once_and_a_second_press_is_a_409(client: Client, operator: User, console_mq: EchoMQ) -> None:
    [job_id] = failed_jobs(console_mq, "mail", 1)
    body = {"queue": "mail", "id": job_id, "move": "retry", "expect_state": "failed", "expect_attempts": "1"}

    moved = post(client, "/api/job/actions", body, bearer(operator))
    again = post(client, "/api/job/actions", body, bearer(operator))

    assert moved.status_code == 200 and moved.json()["outcome"] == "moved"
    assert again.status_code == 409 and again.json()["text"] == f"refused: job {job_id} is now pending (attempts 1)"
    assert AuditEntry.objects.get(pk=moved.json()["audit_id"]).action == "retry"


def test_delete_answers_428_with_a_confirmation_and_runs_only_with_it(client: Client, operator: User,
                                                                      console_mq: EchoMQ) -> None:
    [job_id] = failed_jobs(console_mq, "mail", 1)
    body = {"queue": "mail", "id": job_id, "move": "delete", "expect_state": "failed", "expect_attempts": "1"}
    headers = bearer(operator)
    before = keyspace_dump(console_mq.redis)

    asked = post(client, "/api/job/actions", body, headers)

    assert asked.status_code == 428
    assert asked.json()["text"] == f"Delete job {job_id} (failed, attempts 1) from mail?"
    assert keyspace_dump(console_mq.redis) == before
    done = post(client, "/api/job/actions", {**body, "confirmation": asked.json()["confirmation"]}, headers)
    assert done.status_code == 200 and not console_mq.job("mail", job_id).exists
    replayed = post(client, "/api/job/actions", {**body, "confirmation": asked.json()["confirmation"]}, headers)
    assert replayed.status_code == 409 and "already been used" in replayed.json()["error"]


def test_a_confirmation_for_another_job_is_refused(client: Client, operator: User, console_mq: EchoMQ) -> None:
    first, second = failed_jobs(console_mq, "mail", 2)
    headers = bearer(operator)
    asked = post(client, "/api/job/actions", {"queue": "mail", "id": first, "move": "delete",
                                              "expect_state": "failed", "expect_attempts": "1"}, headers).json()

    response = post(client, "/api/job/actions", {"queue": "mail", "id": second, "move": "delete", "expect_state": "failed",
                                                 "expect_attempts": "1", "confirmation": asked["confirmation"]}, headers)

    assert response.status_code == 409 and "another action, queue or jobs" in response.json()["error"]
    assert console_mq.job("mail", second).exists and console_mq.job("mail", first).exists


def test_retry_all_says_how_many_then_runs_in_the_background(client: Client, operator: User,
                                                             console_mq: EchoMQ) -> None:
    failed_jobs(console_mq, "mail", 3)
    headers = bearer(operator)

    asked = post(client, "/api/queue/actions", {"queue": "mail", "action": "retry_all"}, headers)
    assert asked.status_code == 428 and asked.json()["count"] == 3 and asked.json()["text"] == "Retry 3 failed jobs of mail?"
    started = post(client, "/api/queue/actions", {"queue": "mail", "action": "retry_all",
                                                  "confirmation": asked.json()["confirmation"]}, headers)

    assert started.status_code == 202
    assert runner.wait(started.json()["id"], timeout=30)
    run = get(client, f"/api/runs/{started.json()['id']}", headers).json()
    assert (run["outcome"], run["moved"]) == ("finished", 3)
    assert console_mq.stats("mail").counts["failed"] == 0


def test_nothing_to_purge_is_said_without_a_confirmation(client: Client, operator: User, console_mq: EchoMQ) -> None:
    asked = post(client, "/api/queue/actions", {"queue": "mail", "action": "purge_done"}, bearer(operator))

    assert asked.status_code == 428 and asked.json()["confirmation"] is None
    assert "nothing to purge" in asked.json()["nothing"]


def test_ticked_jobs_move_only_if_still_as_seen(client: Client, operator: User, console_mq: EchoMQ) -> None:
    first, second = failed_jobs(console_mq, "mail", 2)
    console_mq.retry("mail", second)  # moved on since the caller saw it
    jobs = [{"id": first, "state": "failed", "attempts": "1"}, {"id": second, "state": "failed", "attempts": "1"}]

    started = post(client, "/api/queue/selection", {"queue": "mail", "move": "retry", "jobs": jobs}, bearer(operator))

    assert started.status_code == 202
    assert runner.wait(started.json()["id"], timeout=30)
    entry = AuditEntry.objects.get(pk=started.json()["id"])
    assert (entry.moved, entry.skipped) == (1, 1)


def test_a_running_bulk_run_can_be_cancelled(client: Client, operator: User, console_mq: EchoMQ) -> None:
    entry = AuditEntry.objects.create(username="someone", queue="mail", action="retry_all", scope="queue",
                                      outcome="running")

    response = post(client, f"/api/runs/{entry.pk}/cancel", {}, bearer(operator))

    assert response.status_code == 200 and response.json()["cancel_requested_by"] == "otto"


def test_pause_and_resume_are_confirmed_moves_that_claims_obey(client: Client, operator: User,
                                                               console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    headers = bearer(operator)

    asked = post(client, "/api/queue/pause", {"queue": "mail", "reason": "rollback"}, headers)
    assert asked.status_code == 428 and asked.json()["count"] == 1
    paused = post(client, "/api/queue/pause", {"queue": "mail", "reason": "rollback",
                                               "confirmation": asked.json()["confirmation"]}, headers)

    assert paused.status_code == 200 and paused.json()["action"] == "pause"
    stats = get(client, "/api/queue?q=mail", headers).json()["stats"]
    assert (stats["paused"], stats["paused_by"], stats["paused_reason"]) == (True, "console:otto", "rollback")
    again = post(client, "/api/queue/pause", {"queue": "mail"}, headers).json()
    assert again["confirmation"] is None and "paused already" in again["nothing"]
    asked = post(client, "/api/queue/resume", {"queue": "mail"}, headers).json()
    resumed = post(client, "/api/queue/resume", {"queue": "mail", "confirmation": asked["confirmation"]}, headers)
    assert resumed.status_code == 200 and console_mq.claim("mail")[0].id == "a"


def test_the_schema_is_openapi_3_and_names_every_endpoint(viewer_client: Client) -> None:
    schema = viewer_client.get("/api/schema").json()

    assert schema["openapi"].startswith("3.")
    assert {"/api/queues", "/api/queue", "/api/queue/jobs", "/api/job", "/api/audit", "/api/runs/{run_id}",
            "/api/job/actions", "/api/queue/selection", "/api/queue/actions", "/api/runs/{run_id}/cancel",
            "/api/queue/pause", "/api/queue/resume"} <= set(schema["paths"])
