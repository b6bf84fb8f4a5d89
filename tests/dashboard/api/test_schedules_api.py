"""Schedules through the API: listed a page at a time, added (audited), and pressed as the page's buttons are
(428 first, then once with the confirmation; 409 on a version that moved on)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from queues.schedules import get_schedule
from tests.support.keyspace import keyspace_dump

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_token_create(user=user, name='api')}"}


def post(client: Client, path: str, body: dict[str, Any], user: User) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json", headers=bearer(user))


def test_a_schedule_added_is_listed_with_its_next_tick_and_a_second_add_is_refused(
        client: Client, operator: User, viewer: User, console_mq: EchoMQ) -> None:
    body = {"queue": "mail", "name": "nightly", "cron": "0 2 * * *", "tz": "Europe/Berlin", "payload": '{"r": 1}'}

    added = post(client, "/api/schedules", body, operator)
    again = post(client, "/api/schedules", body, operator)
    by_viewer = post(client, "/api/schedules", {**body, "name": "other"}, viewer)
    listed = client.get("/api/schedules?queue=mail", headers=bearer(viewer)).json()

    assert (added.status_code, again.status_code, by_viewer.status_code) == (201, 409, 403)
    [row] = listed["schedules"]
    assert (row["name"], row["describe"], row["version"], row["last_outcome"]) == (
        "nightly", "cron 0 2 * * * (Europe/Berlin)", 1, "")
    assert row["next_ms"] > listed["now_ms"] and listed["next"] is None
    assert [e.action for e in AuditEntry.objects.order_by("id")] == ["schedule_add"] * 3


def test_run_now_answers_428_then_enqueues_one_job_once(client: Client, operator: User, console_mq: EchoMQ) -> None:
    post(client, "/api/schedules", {"queue": "mail", "name": "beat", "every_ms": 60_000, "payload": "x"}, operator)
    before = keyspace_dump(console_mq.redis)

    asked = post(client, "/api/schedules/mail/beat/actions", {"action": "run", "version": 1}, operator)
    unchanged = keyspace_dump(console_mq.redis) == before
    ask = asked.json()
    confirm = {"action": "run", "version": 1, "stamp": ask["stamp"], "confirmation": ask["confirmation"]}
    done = post(client, "/api/schedules/mail/beat/actions", confirm, operator)
    replayed = post(client, "/api/schedules/mail/beat/actions", confirm, operator)

    assert asked.status_code == 428 and unchanged and f"beat:run:{ask['stamp']}" in ask["warning"]
    assert done.status_code == 200 and replayed.status_code == 409
    assert console_mq.stats("mail").counts["pending"] == 1


def test_pause_and_an_edit_on_a_stale_version(client: Client, operator: User, console_mq: EchoMQ) -> None:
    post(client, "/api/schedules", {"queue": "mail", "name": "beat", "every_ms": 60_000, "payload": "x"}, operator)

    def press(body: dict[str, Any]) -> Any:
        ask = post(client, "/api/schedules/mail/beat/actions", body, operator)
        token = ask.json().get("confirmation")
        return post(client, "/api/schedules/mail/beat/actions", {**body, "confirmation": token or ""}, operator)

    paused = press({"action": "pause", "version": 1})
    edit = {"action": "edit", "version": 1, "definition": {"every_ms": 120_000, "payload": "y"}}
    asked = post(client, "/api/schedules/mail/beat/actions", edit, operator)

    assert paused.status_code == 200 and get_schedule(console_mq, "mail", "beat").paused
    assert asked.status_code == 428 and asked.json()["confirmation"] is None
    assert "changed since it was shown" in asked.json()["nothing"]
