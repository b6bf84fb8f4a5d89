"""Deploy marks through the API (audited, one per label and minute) and on the queue page's charts."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_token_create(user=user, name='api')}"}


def test_a_deploy_mark_is_audited_and_a_second_in_the_minute_is_the_same_mark(
        client: Client, operator: User, viewer: User, console_mq: EchoMQ) -> None:
    at = console_mq.server_time_ms("mail") // 60_000 * 60_000
    body = json.dumps({"label": "v1.5.0", "at_ms": at})

    first = client.post("/api/deploys", body, content_type="application/json", headers=bearer(operator))
    again = client.post("/api/deploys", body, content_type="application/json", headers=bearer(operator))
    refused = client.post("/api/deploys", body, content_type="application/json", headers=bearer(viewer))
    listed = client.get("/api/deploys", headers=bearer(viewer)).json()

    assert (first.status_code, again.status_code, refused.status_code) == (201, 200, 403)
    assert listed["marks"] == [{"at_ms": at, "label": "v1.5.0"}]
    rows = list(AuditEntry.objects.order_by("id").values_list("username", "action", "outcome"))
    assert rows == [("otto", "mark_deploy", "moved"), ("otto", "mark_deploy", "finished"),
                    ("vera", "mark_deploy", "refused")]


def test_the_queue_pages_charts_draw_the_marks_of_their_range(viewer_client: Client, operator: User,
                                                               console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "{}")
    now = console_mq.server_time_ms("mail")
    Client().post("/api/deploys", json.dumps({"label": "v9", "at_ms": now - 600_000}),
                  content_type="application/json", headers=bearer(operator))
    Client().post("/api/deploys", json.dumps({"label": "old", "at_ms": now - 5 * 3_600_000}),
                  content_type="application/json", headers=bearer(operator))

    page = viewer_client.get("/queue/?q=mail&range=1h").content.decode()
    history, latency = page.split('id="queue-history"'), page.split('id="queue-latency"')

    # One line on the history chart and one on each latency chart (wait, run); the mark of 5 h ago is out of range.
    assert len(history) == len(latency) == 2 and page.count('class="deploy"') == 3
    assert page.count("<title>deploy v9 at") == 3 and "deploy old at" not in page
    wide = viewer_client.get("/queue/?q=mail&range=24h").content.decode()
    assert wide.count("<title>deploy old at") == 3


def test_the_console_button_marks_a_deploy_as_an_audited_operator_action(operator_client: Client, viewer_client: Client,
                                                                          console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "{}")

    shown_to_viewer = 'name="label"' in viewer_client.get("/queue/?q=mail").content.decode()
    pressed = operator_client.post("/actions/deploy/", {"q": "mail", "label": "v2.0"}, headers={"HX-Request": "true"})

    assert not shown_to_viewer and 'name="label"' in operator_client.get("/queue/?q=mail").content.decode()
    assert pressed.status_code == 200 and "marked the deploy of v2.0" in pressed.content.decode()
    entry = AuditEntry.objects.get()
    assert (entry.username, entry.action, entry.queue, entry.outcome) == ("otto", "mark_deploy", "mail", "moved")
    assert "deploy v2.0 at" in operator_client.get("/queue/?q=mail&range=1h").content.decode()
