"""API tokens: a scope (read, or act too), an optional expiry, listed and revoked from the command line, and gone
once their user loses a role or is deactivated."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import READ_ONLY, api_token_create
from dashboard.roles import VIEWERS, user_create
from queues import EchoMQ
from tests.support.jobs import failed_job

pytestmark = pytest.mark.django_db(transaction=True)

RETRY = {"queue": "mail", "id": "a", "move": "retry", "expect_state": "failed", "expect_attempts": "1"}


def bearer(secret: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {secret}"}


def retry(client: Client, secret: str) -> int:
    return client.post("/api/job/actions", json.dumps(RETRY), content_type="application/json",
                       headers=bearer(secret)).status_code


def command(*args: str) -> str:
    out = io.StringIO()
    call_command("api_token", *args, stdout=out)
    return out.getvalue().strip()


def test_a_read_token_of_an_operator_reads_but_may_not_act(client: Client, operator: User,
                                                           console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    secret = api_token_create(user=operator, name="dash", scope="read")

    assert client.get("/api/queues", headers=bearer(secret)).status_code == 200
    refused = client.post("/api/job/actions", json.dumps(RETRY), content_type="application/json",
                          headers=bearer(secret))

    assert refused.status_code == 403 and refused.json() == {"error": READ_ONLY}
    assert console_mq.job("mail", "a").state == "failed"
    assert retry(client, api_token_create(user=operator, name="ops", scope="act")) == 200


def test_an_expired_token_is_refused(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    lapsed = api_token_create(user=viewer, name="old", expires_at=timezone.now() - timedelta(seconds=1))
    fresh = api_token_create(user=viewer, name="new", expires_at=timezone.now() + timedelta(days=1))

    assert client.get("/api/queues", headers=bearer(lapsed)).status_code == 401
    assert client.get("/metrics", headers=bearer(lapsed)).status_code == 401
    assert client.get("/api/queues", headers=bearer(fresh)).status_code == 200


def test_the_command_makes_read_tokens_with_an_expiry_lists_them_without_secrets_and_revokes_them(
        client: Client, operator: User, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "mail", "a")
    secret = command("otto", "--name", "grafana", "--expires-days", "30")
    actor = command("otto", "--name", "deploy", "--scope", "act")

    listed = command("--list")

    assert retry(client, secret) == 403 and client.get("/api/queues", headers=bearer(secret)).status_code == 200
    assert [line.split("\t")[:3] for line in listed.splitlines()] == [["otto", "deploy", "act"],
                                                                       ["otto", "grafana", "read"]]
    assert "never" in listed.splitlines()[0] and "expires" in listed.splitlines()[1]
    assert secret not in listed and actor not in listed
    assert command("--revoke", "grafana") == "revoked 1 token named 'grafana'"
    assert client.get("/api/queues", headers=bearer(secret)).status_code == 401
    assert client.get("/api/queues", headers=bearer(actor)).status_code == 200


def test_a_demoted_or_deactivated_users_tokens_are_gone(client: Client, operator: User, viewer: User,
                                                        console_mq: EchoMQ) -> None:
    operators = api_token_create(user=operator, name="ops", scope="act")
    viewers = api_token_create(user=viewer, name="dash", scope="read")

    user_create(username="otto", password="otto-password-2", role=VIEWERS)  # otto is a viewer now
    viewer.is_active = False
    viewer.save()

    assert client.get("/api/queues", headers=bearer(operators)).status_code == 401
    assert client.get("/api/queues", headers=bearer(viewers)).status_code == 401
    assert not ApiToken.objects.exists()


def test_the_tokens_page_lists_a_users_own_tokens_without_secrets_and_revokes_only_their_own(
        viewer: User, viewer_client: Client, operator: User) -> None:
    mine = api_token_create(user=viewer, name="grafana", scope="read")
    theirs = api_token_create(user=operator, name="deploy")
    other = ApiToken.objects.get(name="deploy")

    page = viewer_client.get("/tokens/").content.decode()
    viewer_client.post("/tokens/revoke/", {"id": str(other.pk)})

    assert "grafana" in page and "read only" in page and "deploy" not in page
    assert mine not in page and theirs not in page
    assert ApiToken.objects.filter(pk=other.pk).exists()
    assert viewer_client.post("/tokens/revoke/", {"id": str(ApiToken.objects.get(name="grafana").pk)}).status_code == 302
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["deploy"]
