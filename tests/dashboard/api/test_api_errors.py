"""Every answer under /api/ is JSON: unknown paths, wrong methods, faults and body limits, with DEBUG off and on."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.actions.models import AuditEntry
from dashboard.asgi import application
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_token_create(user=user, name='api')}"}


@pytest.fixture(params=[False, True], ids=["production", "demo-debug"])
def debug(request: pytest.FixtureRequest, settings: SettingsWrapper) -> bool:
    settings.DEBUG = request.param
    return bool(request.param)


@pytest.mark.parametrize("path", ["/api/nope", "/api/", "/api/queue/jobs/extra", "/api/runs/x/y"])
def test_an_unknown_path_is_a_json_404_in_production_and_in_the_demo(client: Client, debug: bool, path: str) -> None:
    response = client.get(path)

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert response.json()["error"].startswith(f"no such path: {path}")


def test_a_wrong_method_is_a_json_405_that_names_the_right_one(client: Client, debug: bool, viewer: User) -> None:
    response = client.delete("/api/queues", headers=bearer(viewer))

    assert response.status_code == 405 and response["Allow"] == "GET"
    assert response.json() == {"error": "/api/queues answers GET"}


def test_a_fault_of_the_console_is_a_json_500_without_the_traceback(client: Client, debug: bool, viewer: User,
                                                                   console_mq: EchoMQ,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug in the console")

    monkeypatch.setattr("dashboard.api.api.read", broken)
    client.raise_request_exception = False

    response = client.get("/api/queue?q=mail", headers=bearer(viewer))

    assert response.status_code == 500 and response["Content-Type"] == "application/json"
    assert "in its log" in response.json()["error"] and b"Traceback" not in response.content


async def _asgi_post(path: str, body: bytes, *, length: int | None) -> tuple[int, dict[bytes, bytes], bytes]:
    headers = [(b"host", b"localhost"), (b"content-type", b"application/json")]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000)}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await communicator.receive_output(10)
    answer = await communicator.receive_output(10)
    await communicator.wait(10)
    return start["status"], dict(start["headers"]), answer.get("body", b"")


async def test_a_body_over_the_limit_is_a_json_413_under_api(settings: SettingsWrapper) -> None:
    settings.EMQ_MAX_BODY_BYTES = 64 * 1024

    by_length = await _asgi_post("/api/job/actions", b"", length=200 * 1024 * 1024)
    by_count = await _asgi_post("/api/orders", b"{" + b" " * 5000 + b"}", length=None)

    for status, headers, body in (by_length, by_count):
        assert status == 413 and headers[b"content-type"] == b"application/json"
        assert "larger than" in json.loads(body)["error"]
        assert headers[b"content-length"] == str(len(body)).encode()


async def test_a_body_over_the_limit_elsewhere_keeps_its_plain_text(settings: SettingsWrapper) -> None:
    status, headers, body = await _asgi_post("/login/", b"", length=200 * 1024 * 1024)

    assert status == 413 and headers[b"content-type"].startswith(b"text/plain") and b"larger than" in body


async def test_with_debug_on_a_foreign_address_is_refused_in_json_under_api(settings: SettingsWrapper) -> None:
    settings.DEBUG = True
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/queues", "raw_path": b"/api/queues", "query_string": b"", "root_path": "",
             "headers": [(b"host", b"localhost")], "client": ("10.0.0.9", 40000), "server": ("10.0.0.2", 8000)}
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(10)
    body = await communicator.receive_output(10)

    assert start["status"] == 403 and "loopback" in json.loads(body["body"])["error"]


# The docs and the schema -----------------------------------------------------------------------------------------

def test_the_docs_page_is_swagger_from_the_consoles_own_static_files(viewer_client: Client) -> None:
    response = viewer_client.get("/api/docs")

    assert response.status_code == 200
    page = response.content.decode()
    assert "/static/ninja/swagger-ui-bundle.js" in page and "cdn" not in page
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "unsafe" not in policy


def test_the_schema_names_post_orders_with_its_body_and_answers(viewer_client: Client) -> None:
    orders = viewer_client.get("/api/schema").json()["paths"]["/api/orders"]["post"]

    body = orders["requestBody"]["content"]["application/json"]["schema"]
    assert {"client_order_id", "side", "symbol", "type", "quantity", "time_in_force"} <= set(body["required"])
    assert {"200", "201", "400", "401", "409", "413", "503"} <= set(orders["responses"])


def test_attempts_are_numbers_in_rows_jobs_history_and_audit(client: Client, operator: User,
                                                             console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    console_mq.claim("mail")
    console_mq.redis.hset("emq:{mail}:job:a", "attempts", "lots")  # odd data: no number there
    headers = bearer(operator)
    console_mq.enqueue("mail", "y", job_id="b")

    rows = client.get("/api/queue/jobs?q=mail&state=pending", headers=headers).json()["rows"]
    job = client.get("/api/job?q=mail&id=a", headers=headers).json()
    moved = client.post("/api/job/actions", json.dumps({"queue": "mail", "id": "b", "move": "promote",
                                                        "expect_state": "pending", "expect_attempts": 0}),
                        content_type="application/json", headers=headers)

    assert [r["attempts"] for r in rows] == [0]
    assert job["attempts"] is None and any("attempts" in w for w in job["warnings"])
    assert [e["attempts"] for e in job["history"]] == [1, 0]
    entry = client.get(f"/api/runs/{moved.json()['audit_id']}", headers=headers).json()
    assert entry["jobs"][0]["attempts"] == 0


def test_cancelling_a_finished_run_says_nothing_was_cancelled(client: Client, operator: User,
                                                              console_mq: EchoMQ) -> None:
    entry = AuditEntry.objects.create(username="someone", queue="mail", action="retry_all", scope="queue",
                                      outcome="finished", result="retried 3")

    response = client.post(f"/api/runs/{entry.pk}/cancel", "{}", content_type="application/json",
                           headers=bearer(operator))

    assert response.status_code == 409 and response.json()["error"].startswith("nothing was cancelled")
    entry.refresh_from_db()
    assert entry.cancel_requested_by == ""


@pytest.mark.parametrize(("headers", "message"), [
    ({}, "send Authorization: Bearer <token>, or sign in"),
    ({"Authorization": "Bearer emq_not-a-token"}, "the API token is not valid"),
    ({"Authorization": "Basic dmVyYTp2ZXJh"}, "the Authorization header must be: Bearer <token>"),
])
def test_a_wrong_token_and_a_missing_token_get_different_messages(client: Client, console_mq: EchoMQ,
                                                                  headers: dict[str, str], message: str) -> None:
    response = client.get("/api/queues", headers=headers)

    assert response.status_code == 401 and response.json()["error"].startswith(message)
