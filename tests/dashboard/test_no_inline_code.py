"""Every page and fragment runs under a Content-Security-Policy without 'unsafe-inline': no inline script,
no event-handler attribute, no htmx hx-on (it evaluates code), no style attribute or element."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.actions import runner
from dashboard.actions.models import AuditEntry
from queues import EchoMQ
from tests.support.htmx import htmx_post
from tests.support.inline_code import inline_code


@pytest.fixture
def busy_queue(console_mq: EchoMQ) -> EchoMQ:
    console_mq.enqueue("mail", '{"n": 1}', job_id="due")
    console_mq.enqueue("mail", '{"n": 2}', job_id="later", delay_ms=60_000)
    console_mq.enqueue("mail", '{"n": 3}', job_id="gone-bad", max_attempts=1)
    [job] = [j for j in console_mq.claim("mail", count=10) if j.id == "gone-bad"]
    console_mq.fail("mail", job.id, job.token, error="boom", backoff_ms=0)
    console_mq.enqueue("mail", '{"n": 4}', job_id="running")
    console_mq.claim("mail", lease_ms=60_000)
    return console_mq


@pytest.mark.parametrize("url", [
    "/", "/?filter=ma", "/queue/?q=mail", "/queue/?q=mail&state=active", "/queue/?q=mail&state=failed",
    "/job/?q=mail&id=gone-bad", "/job/?q=mail&id=running", "/find/?id=nowhere", "/audit/", "/cluster/",
])
def test_no_page_holds_inline_code(operator_client: Client, busy_queue: EchoMQ, url: str) -> None:
    response = operator_client.get(url)

    assert response.status_code in (200, 404)
    assert inline_code(response.content.decode()) == []


def test_the_login_page_holds_no_inline_code(client: Client, db: None) -> None:
    assert inline_code(client.get("/login/").content.decode()) == []


@pytest.mark.parametrize("data", [
    {"q": "mail", "id": "gone-bad", "move": "delete", "state": "failed", "attempts": "1"},
    {"q": "mail", "id": "gone-bad", "move": "retry", "state": "failed", "attempts": "1"},
    {"q": "mail", "action": "purge_failed", "older_than_ms": "0"},
    {"q": "mail", "move": "cancel", "job": "pending:0:due"},
])
@pytest.mark.django_db(transaction=True)
def test_no_action_answer_holds_inline_code(operator_client: Client, busy_queue: EchoMQ,
                                             data: dict[str, str]) -> None:
    url = "/actions/job/" if "id" in data else "/actions/queue/" if "action" in data else "/actions/selection/"
    for response in (htmx_post(operator_client, url, data), operator_client.post(url, data, follow=True)):
        assert inline_code(response.content.decode()) == []
    for entry in AuditEntry.objects.all():
        assert runner.wait(entry.pk, timeout=60)
