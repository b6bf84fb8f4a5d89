"""``GET /api/queues/{q}/why`` and ``GET /api/jobs/{q}/{id}/why``: the why read as JSON, in the OpenAPI schema."""

from __future__ import annotations

import pytest
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from queues import EchoMQ
from tests.support.redis_servers import free_port

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_answers_why_a_queue_is_not_draining_in_the_documented_shape(viewer_client: Client,
                                                                        console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    console_mq.pause("mail", reason="deploy")

    body = viewer_client.get("/api/queues/mail/why").json()

    assert set(body) == {"reasons", "as_of_ms"} and body["as_of_ms"] > 0
    assert body["reasons"][0]["code"] == "paused" and body["reasons"][0]["evidence"]["paused_reason"] == "deploy"


def test_it_answers_why_a_job_is_not_moving_for_an_id_with_colons_and_slashes(viewer_client: Client,
                                                                            console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="user:42/welcome", delay_ms=60_000)

    response = viewer_client.get("/api/jobs/mail/user:42/welcome/why")

    assert response.status_code == 200
    assert response.json()["reasons"][0]["code"] == "delayed"
    assert viewer_client.get("/api/jobs/mail/nobody/why").json()["reasons"][0]["code"] == "missing"


def test_it_answers_503_with_the_reason_unknown_when_redis_does_not_answer(viewer_client: Client, db: None,
                                                                           settings: SettingsWrapper) -> None:
    settings.EMQ_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"

    response = viewer_client.get("/api/queues/mail/why")

    assert response.status_code == 503
    assert response.json()["reasons"][0]["code"] == "unknown" and response.json()["as_of_ms"] is None


def test_it_refuses_anonymous_callers_and_a_bad_queue_name(client: Client, viewer_client: Client,
                                                           console_mq: EchoMQ) -> None:
    assert client.get("/api/queues/mail/why").status_code == 401
    assert viewer_client.get("/api/queues/a%20b/why").status_code == 400


def test_both_routes_are_in_the_openapi_schema(viewer_client: Client) -> None:
    paths = viewer_client.get("/api/schema").json()["paths"]

    assert "/api/queues/{q}/why" in paths and "/api/jobs/{q}/{id}/why" in paths
    assert paths["/api/queues/{q}/why"]["get"]["responses"]["200"]
