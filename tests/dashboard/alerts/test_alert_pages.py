"""``/alerts/``: rules made from the pages that offer them, the secret shown once, silences from the page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.alerts.models import AlertRule, AlertSilence
from dashboard.roles import OPERATORS, VIEWERS, user_create
from queues import EchoMQ
from queues.failures import groups
from tests.support.jobs import failed_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def otto(db: None) -> User:
    return user_create(username="otto", password="otto-password", role=OPERATORS)


def test_a_failure_group_offers_its_alert_and_the_form_comes_filled_in(console_mq: EchoMQ, otto: User) -> None:
    failed_jobs(console_mq, "mail", 2, error="smtp timeout")
    group = console_mq.run(groups("mail")).groups[0].id
    client = _client(otto)

    failures = client.get("/failures/", {"q": "mail"}).content.decode()
    form = client.get("/alerts/new/", {"kind": "failure_group", "q": "mail", "group": group}).content.decode()

    assert f"/alerts/new/?kind=failure_group&amp;q=mail&amp;group={group}" in failures
    assert f'name="group" value="{group}"' in form and '<option value="failure_group" selected>' in form


def test_a_rule_made_on_the_page_shows_its_secret_once(console_mq: EchoMQ, otto: User) -> None:
    client = _client(otto)

    made = client.post("/alerts/new/", {"name": "mail stalled", "kind": "why", "q": "mail", "codes": "not_draining",
                                        "webhook_url": "http://127.0.0.1:9/hook"})
    rule = AlertRule.objects.get()
    listed = client.get("/alerts/").content.decode()

    assert made.status_code == 201 and rule.secret in made.content.decode()
    assert "mail stalled" in listed and rule.secret not in listed


def test_a_bad_rule_is_refused_in_words_and_nothing_is_made(console_mq: EchoMQ, otto: User) -> None:
    answer = _client(otto).post("/alerts/new/", {"name": "r", "kind": "why", "q": "mail", "codes": "sad"})

    assert answer.status_code == 400 and "a why rule watches not_draining" in answer.content.decode()
    assert not AlertRule.objects.exists()


def test_viewers_see_the_rules_but_no_control_and_are_refused_a_silence(console_mq: EchoMQ, otto: User) -> None:
    vera = user_create(username="vera", password="vera-password", role=VIEWERS)
    _client(otto).post("/alerts/new/", {"name": "mail stalled", "kind": "why", "q": "mail",
                                        "webhook_url": "http://127.0.0.1:9/hook"})
    rule = AlertRule.objects.get()
    client = _client(vera)

    page = client.get("/alerts/").content.decode()
    refused = client.post("/alerts/silence/", {"rule": str(rule.pk), "duration": "2h"})
    silenced = _client(otto).post("/alerts/silence/", {"rule": str(rule.pk), "duration": "2h", "reason": "deploy"})

    assert "mail stalled" in page and 'action="/alerts/silence/"' not in page
    assert refused.status_code == 403 and silenced.status_code == 302
    assert list(AlertSilence.objects.values_list("reason", flat=True)) == ["deploy"]
    assert "silenced until" in _client(otto).get("/alerts/").content.decode()
