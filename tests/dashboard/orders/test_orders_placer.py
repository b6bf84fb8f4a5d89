"""Who placed an order: the history and the audit log name the user (and the token or session); grants hold."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.orders.tokens import api_token_create
from dashboard.roles import OPERATORS, user_create
from queues import EchoMQ

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def orders_redis(settings: Any, redis_url: str) -> str:
    settings.EMQ_REDIS_URL = redis_url
    return redis_url


def order(**changes: Any) -> str:
    return json.dumps({"client_order_id": f"c-{uuid.uuid4().hex[:12]}", "side": "buy", "symbol": "ACME",
                       "type": "limit", "quantity": 5, "price": "10.25", "time_in_force": "GTC", **changes})


def placer(username: str, patterns: list[str] | None = None) -> User:
    user = user_create(username=username, password=f"{username}-password", role=OPERATORS)
    user.user_permissions.add(Permission.objects.get(codename="place_orders"))
    for pattern in patterns or []:
        QueueGrant.objects.create(user=user, pattern=pattern)
    return User.objects.get(pk=user.pk)


def post(client: Client, body: str, token: str | None = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post("/api/orders", data=body, content_type="application/json", headers=headers)


def test_an_order_placed_with_a_token_names_its_user_in_the_history_and_the_log(mq: EchoMQ) -> None:
    token = api_token_create(user=placer("trader"), name="desk-bot")

    response = post(Client(), order(), token)

    assert response.status_code == 201
    order_id = response.json()["order_id"]
    assert {e.actor for e in mq.job_events("orders", order_id)} == {"api:trader"}
    row = AuditEntry.objects.get(action=AuditEntry.Action.PLACE_ORDER)
    assert (row.username, row.queue, row.outcome, row.parameters) == (
        "trader", "orders", "moved", {"via": "token", "token": "desk-bot"})
    assert row.jobs == [{"id": order_id, "client_order_id": response.json()["client_order_id"]}]


def test_an_order_placed_from_a_session_names_its_user(mq: EchoMQ) -> None:
    client = Client()
    client.force_login(placer("olga"))

    response = post(client, order())

    assert response.status_code == 201
    assert {e.actor for e in mq.job_events("orders", response.json()["order_id"])} == {"console:olga"}
    row = AuditEntry.objects.get(action=AuditEntry.Action.PLACE_ORDER)
    assert (row.username, row.parameters) == ("olga", {"via": "session"})


def test_a_duplicate_is_logged_as_placing_nothing_new(mq: EchoMQ) -> None:
    token = api_token_create(user=placer("trader"), name="bot")
    body = order(client_order_id="c-same")

    first, again = post(Client(), body, token), post(Client(), body, token)

    assert (first.status_code, again.status_code) == (201, 200)
    outcomes = list(AuditEntry.objects.order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["moved", "finished"]
    assert "nothing new was placed" in AuditEntry.objects.order_by("id").last().result  # type: ignore[union-attr]


def test_an_operator_restricted_to_other_queues_may_not_place_orders(mq: EchoMQ) -> None:
    token = api_token_create(user=placer("ops-eu", ["billing-*"]), name="bot")

    response = post(Client(), order(), token)

    assert response.status_code == 403
    assert "billing-* only, not on orders" in response.json()["error"]
    assert mq.stats("orders").counts.get("pending", 0) == 0
    row = AuditEntry.objects.get(action=AuditEntry.Action.PLACE_ORDER)
    assert (row.username, row.outcome) == ("ops-eu", "refused")


def test_a_grant_that_covers_the_orders_queue_lets_him_place_them(mq: EchoMQ) -> None:
    token = api_token_create(user=placer("ops-eu", ["billing-*", "orders"]), name="bot")

    assert post(Client(), order(), token).status_code == 201


def test_refused_and_bad_orders_are_rows_too_and_stay_small(mq: EchoMQ) -> None:
    token = api_token_create(user=placer("trader"), name="bot")
    viewer = api_token_create(user=User.objects.create_user("watcher"), name="peek")

    bad = post(Client(), order(quantity="x" * 3000), token)
    forbidden = post(Client(), order(), viewer)

    assert (bad.status_code, forbidden.status_code) == (400, 403)
    rows = AuditEntry.objects.filter(action=AuditEntry.Action.PLACE_ORDER).order_by("id")
    assert [(r.username, r.outcome) for r in rows] == [("trader", "refused"), ("watcher", "refused")]
    assert all(len(r.result) <= 1000 for r in rows)
    assert "quantity" in rows[0].result


def test_an_unknown_caller_is_refused_without_a_row(mq: EchoMQ) -> None:
    assert post(Client(), order(), "emq_not-a-token").status_code == 401
    assert post(Client(), order()).status_code == 401
    assert not AuditEntry.objects.exists()
