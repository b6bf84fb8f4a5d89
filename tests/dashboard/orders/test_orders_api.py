from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.middleware.csrf import get_token
from django.test import Client, RequestFactory

from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from tests.support.redis_servers import free_port

URL = "/api/orders"
pytestmark = pytest.mark.django_db


def order(**changes: Any) -> dict[str, Any]:
    return {"client_order_id": "c-1", "side": "buy", "symbol": "ACME", "type": "limit", "quantity": 5,
            "price": "10.25", "time_in_force": "GTC", **changes}


@pytest.fixture(autouse=True)
def orders_redis(settings: Any, redis_url: str) -> str:
    settings.EMQ_REDIS_URL = redis_url
    return redis_url


@pytest.fixture
def trader() -> User:
    user = User.objects.create_user("trader", password="pw-trader-1")
    user.user_permissions.add(Permission.objects.get(codename="place_orders"))
    return user


@pytest.fixture
def token(trader: User) -> str:
    return api_token_create(user=trader, name="bot")


@pytest.fixture
def api() -> Client:
    return Client(enforce_csrf_checks=True)


def post(client: Client, body: Any, token: str | None = None, **extra: Any) -> Any:
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return client.post(URL, data=data, content_type=extra.pop("content_type", "application/json"),
                       headers=headers, **extra)


def test_it_returns_201_and_the_order_id_when_admitted(api: Client, token: str, mq: EchoMQ) -> None:
    response = post(api, order(), token)

    assert response.status_code == 201
    body = response.json()
    assert body["status"] == "admitted" and body["order_id"].startswith("ORD-")
    assert mq.job("orders", body["order_id"]).state == "pending"


def test_it_returns_200_and_the_first_order_id_on_a_duplicate(api: Client, token: str, mq: EchoMQ) -> None:
    first = post(api, order(), token).json()["order_id"]

    again = post(api, order(), token)

    assert again.status_code == 200
    assert again.json() == {"order_id": first, "client_order_id": "c-1", "status": "duplicate"}
    assert mq.stats("orders").counts["pending"] == 1


def test_a_reused_client_order_id_with_other_values_is_a_409_naming_them(api: Client, token: str, mq: EchoMQ) -> None:
    first = post(api, order(), token).json()["order_id"]

    other = post(api, order(quantity=9, price="11.00"), token)

    assert other.status_code == 409
    assert other.json()["differs"] == ["price", "quantity"] and other.json()["order_id"] == first
    assert "other values (price, quantity)" in other.json()["error"]
    assert mq.stats("orders").counts["pending"] == 1
    assert b'"quantity":5' in mq.job("orders", first).payload


def test_the_same_order_written_differently_is_still_a_duplicate(api: Client, token: str, mq: EchoMQ) -> None:
    post(api, order(price="10.25"), token)

    again = post(api, json.dumps(order(price="10.250"), indent=2), token)

    assert again.status_code == 200 and again.json()["status"] == "duplicate"


def test_it_returns_400_naming_every_bad_field(api: Client, token: str, mq: EchoMQ) -> None:
    response = post(api, order(side="hold", price="1.001", extra=1), token)

    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"side", "price", "extra"}
    assert mq.redis.dbsize() == 0


def test_it_returns_400_for_a_body_that_is_not_json(api: Client, token: str) -> None:
    response = post(api, b"\xff{", token)

    assert response.status_code == 400
    assert "UTF-8" in response.json()["errors"]["body"]


def test_it_returns_413_for_a_body_over_the_limit(api: Client, token: str, mq: EchoMQ) -> None:
    response = post(api, order(client_order_id="c", note="x" * 5000), token)

    assert response.status_code == 413
    assert mq.redis.dbsize() == 0


def test_it_returns_415_for_a_form_post(api: Client, token: str) -> None:
    response = post(api, "side=buy", token, content_type="application/x-www-form-urlencoded")

    assert response.status_code == 415


def test_it_returns_503_with_a_clear_message_when_redis_is_unreachable(
        api: Client, token: str, settings: Any) -> None:
    settings.EMQ_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = post(api, order(), token)

    assert response.status_code == 503
    assert "retry with the same client_order_id" in response.json()["error"]


def test_it_returns_503_and_writes_nothing_when_a_key_has_the_wrong_type(
        api: Client, token: str, mq: EchoMQ) -> None:
    mq.redis.set("emq:{orders}:client_ids", "squatter")

    response = post(api, order(), token)

    assert response.status_code == 503
    assert "emq:{orders}:client_ids holds a string" in response.json()["error"]
    assert mq.redis.dbsize() == 1


def test_it_returns_401_for_anonymous_requests(api: Client, mq: EchoMQ) -> None:
    response = post(api, order())

    assert response.status_code == 401
    assert mq.redis.dbsize() == 0


@pytest.mark.parametrize("header", ["Bearer emq_not-a-token", "Basic dHJhZGVyOnB3", "Bearer "])
def test_it_returns_401_for_a_bad_authorization_header(api: Client, header: str) -> None:
    response = api.post(URL, data=json.dumps(order()), content_type="application/json",
                        headers={"Authorization": header})

    assert response.status_code == 401


def test_it_returns_401_for_the_token_of_a_deactivated_user(api: Client, token: str, trader: User) -> None:
    trader.is_active = False
    trader.save()

    assert post(api, order(), token).status_code == 401


def test_it_returns_403_for_a_user_without_the_place_orders_permission(api: Client) -> None:
    viewer = User.objects.create_user("viewer", password="pw-viewer-1")

    response = post(api, order(), api_token_create(user=viewer, name="x"))

    assert response.status_code == 403
    assert "orders.place_orders" in response.json()["error"]


def test_a_session_request_without_a_csrf_token_is_refused(api: Client, trader: User, mq: EchoMQ) -> None:
    api.force_login(trader)

    response = post(api, order())

    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]
    assert mq.redis.dbsize() == 0


def test_a_session_request_with_the_csrf_token_is_admitted(api: Client, trader: User) -> None:
    api.force_login(trader)
    page = RequestFactory().get("/")
    masked = get_token(page)
    api.cookies["csrftoken"] = page.META["CSRF_COOKIE"]

    response = post(api, order(), HTTP_X_CSRFTOKEN=masked)

    assert response.status_code == 201


def test_a_token_request_needs_no_csrf_token(api: Client, token: str) -> None:
    assert post(api, order(), token).status_code == 201


def test_it_returns_405_for_get(api: Client, token: str) -> None:
    response = api.get(URL, headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 405 and response["Allow"] == "POST"


def test_an_admitted_order_shows_on_the_console_like_any_job(api: Client, token: str, trader: User,
                                                            viewer: User) -> None:
    order_id = post(api, order(), token).json()["order_id"]
    # The trader places orders but holds no console role: a viewer looks.
    assert Client().get(f"/job/?q=orders&id={order_id}").status_code == 302
    console = Client()
    console.force_login(viewer)

    page = console.get(f"/job/?q=orders&id={order_id}")

    assert page.status_code == 200
    assert [(f.name, f.text) for f in page.context["detail"].core] == [("state", "pending"), ("attempts", "0")]
    assert b"c-1" in page.content


def test_the_api_token_command_prints_a_token_that_places_orders(api: Client, trader: User) -> None:
    out = io.StringIO()
    call_command("api_token", "trader", "--name", "bot", "--scope", "act", stdout=out)

    assert post(api, order(), out.getvalue().strip()).status_code == 201


def test_the_api_token_command_can_grant_the_permission(api: Client) -> None:
    User.objects.create_user("newbie", password="pw-newbie-1")
    out = io.StringIO()
    call_command("api_token", "newbie", "--grant", "--scope", "act", stdout=out)

    assert post(api, order(), out.getvalue().strip()).status_code == 201
