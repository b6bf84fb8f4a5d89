"""The job page and the API name, per attempt, the worker, its host and its release (or "release unknown")."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.orders.tokens import api_token_create
from queues import EchoMQ, moves

pytestmark = pytest.mark.django_db

REGISTER: dict[str, Any] = dict(ttl_ms=60_000, pid=1, runtime="python", concurrency=1, started_ms=1, held=[])


def test_each_attempt_shows_its_host_and_release_or_that_the_release_is_unknown(
        viewer_client: Client, viewer: User, console_mq: EchoMQ, redis_url: str) -> None:
    known, unknown = EchoMQ.from_url(redis_url, actor="web-1:9"), EchoMQ.from_url(redis_url, actor="php-worker")
    known.run(moves.register_worker("mail", "web-1:9", host="web-1", release="v2.0.1", **REGISTER))
    console_mq.enqueue("mail", "{}", job_id="a")
    [job] = unknown.claim("mail")
    unknown.fail("mail", "a", job.token, error="boom", backoff_ms=0)
    known.claim("mail")
    known.close()
    unknown.close()

    page = viewer_client.get("/job/?q=mail&id=a").content.decode()
    events = viewer_client.get("/api/job?q=mail&id=a", headers={
        "Authorization": f"Bearer {api_token_create(user=viewer, name='t')}"}).json()["history"]

    assert "web-1 · v2.0.1" in page and "host unknown · <span class=\"muted\">release unknown</span>" in page
    assert [(e["release"], e["host"]) for e in events if e["move"] == "claim"] == [("v2.0.1", "web-1"), ("", "")]
