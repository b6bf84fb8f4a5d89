"""Who the API, /metrics and the schema take as the caller: one Bearer reader, 401 for nobody, sessions that end."""

from __future__ import annotations

import json
import time
from typing import Any

import ninja.main
import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.api.api import NO_CALLER, api
from dashboard.bearer import bearer_token
from dashboard.orders.tokens import api_token_create
from dashboard.session_limits import SEEN, STARTED
from queues import EchoMQ

pytestmark = pytest.mark.django_db(transaction=True)


def test_bearer_with_two_spaces_is_the_same_credential_for_metrics_the_api_and_orders(
        client: Client, viewer: User, console_mq: EchoMQ) -> None:
    token = api_token_create(user=viewer, name="api")

    for header in (f"Bearer {token}", f"Bearer  {token}", f"bearer {token}"):
        assert client.get("/api/queues", headers={"Authorization": header}).status_code == 200, header
        assert client.get("/metrics", headers={"Authorization": header}).status_code == 200, header
        # A viewer may not place orders: the token was read (403), not refused as malformed (401).
        assert client.post("/api/orders", "{}", content_type="application/json",
                           headers={"Authorization": header}).status_code == 403, header
    for header in (f"Bearer{token}", f"Bearer {token} {token}", f"Basic {token}", "Bearer "):
        assert client.get("/api/queues", headers={"Authorization": header}).status_code == 401, header
        assert client.get("/metrics", headers={"Authorization": header}).status_code == 401, header
    assert bearer_token(f"Bearer \t{token}") is None


def test_an_anonymous_api_write_answers_401_not_a_csrf_403(console_mq: EchoMQ) -> None:
    client = Client(enforce_csrf_checks=True)

    response = client.post("/api/queue/actions", json.dumps({"queue": "mail", "action": "retry_all"}),
                           content_type="application/json")

    assert response.status_code == 401 and response.json() == {"error": NO_CALLER}


def test_a_session_write_without_the_csrf_token_is_still_refused(viewer: User, console_mq: EchoMQ) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)

    response = client.post("/api/queue/actions", json.dumps({"queue": "mail", "action": "retry_all"}),
                           content_type="application/json")

    assert response.status_code == 403


def test_the_schema_needs_a_token_or_a_session_and_is_built_once(client: Client, viewer: User,
                                                                 viewer_client: Client,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    real = ninja.main.get_schema

    def counted(**kwargs: Any) -> Any:
        built.append(str(kwargs.get("path_prefix")))
        return real(**kwargs)

    monkeypatch.setattr(ninja.main, "get_schema", counted)
    monkeypatch.setattr(api, "schemas", {})
    token = api_token_create(user=viewer, name="api")

    anonymous = client.get("/api/schema")
    docs = client.get("/api/docs")
    answers = [client.get("/api/schema", headers={"Authorization": f"Bearer {token}"}),
               viewer_client.get("/api/schema"), viewer_client.get("/api/schema")]

    assert (anonymous.status_code, docs.status_code) == (401, 401)
    assert [a.status_code for a in answers] == [200, 200, 200]
    assert answers[0].json() == answers[2].json() and "/api/queues" in answers[0].json()["paths"]
    assert len(built) == 1


def test_a_session_idle_longer_than_the_timeout_is_signed_out(viewer_client: Client, console_mq: EchoMQ,
                                                              settings: object) -> None:
    assert viewer_client.get("/").status_code == 200
    session = viewer_client.session
    session[SEEN] = time.time() - 61 * 60
    session.save()

    response = viewer_client.get("/")

    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert "_auth_user_id" not in viewer_client.session


def test_a_session_older_than_its_maximum_age_is_signed_out_however_busy(viewer_client: Client,
                                                                         console_mq: EchoMQ) -> None:
    assert viewer_client.get("/").status_code == 200
    session = viewer_client.session
    session[STARTED] = time.time() - 13 * 3600
    session.save()

    assert viewer_client.get("/").status_code == 302


def test_a_session_used_within_the_timeout_stays(viewer_client: Client, console_mq: EchoMQ) -> None:
    assert viewer_client.get("/").status_code == 200
    session = viewer_client.session
    session[SEEN] = time.time() - 59 * 60
    session.save()

    assert viewer_client.get("/").status_code == 200
