"""``emq alert``: the CLI makes, lists, silences and deletes rules through the console's API (a real HTTP server)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User

from dashboard.actions.models import AuditEntry
from dashboard.alerts.models import AlertRule, AlertSilence
from dashboard.orders.tokens import api_token_create
from dashboard.roles import OPERATORS, VIEWERS, user_create
from queues import EchoMQ
from queues.cli import main

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def console(live_server: object, monkeypatch: pytest.MonkeyPatch, console_mq: EchoMQ) -> str:
    url = str(live_server.url)  # type: ignore[attr-defined]
    monkeypatch.setenv("EMQ_CONSOLE_URL", url)
    return url


def _as(monkeypatch: pytest.MonkeyPatch, user: User, scope: str = "act") -> None:
    monkeypatch.setenv("EMQ_CONSOLE_TOKEN", api_token_create(user=user, name=f"cli-{scope}", scope=scope))


def test_an_operator_adds_lists_silences_and_deletes_a_rule(console: str, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    otto = user_create(username="otto", password="otto-password", role=OPERATORS)
    _as(monkeypatch, otto)

    added = main(["alert", "add", "mail stalled", "--kind", "why", "--queue", "mail", "--codes", "no_consumer",
                  "--webhook", "http://127.0.0.1:9/hook"])
    made = capsys.readouterr().out
    listed = main(["alert", "list", "--json"])
    rules = json.loads(capsys.readouterr().out)
    silenced = main(["alert", "silence", "mail stalled", "--for", "2h", "--reason", "deploy"])
    silence_line = capsys.readouterr().out
    deleted = main(["alert", "delete", "mail stalled"])

    assert (added, listed, silenced, deleted) == (0, 0, 0, 0)
    assert "made alert rule" in made and "webhook secret (shown once): " in made
    assert [r["name"] for r in rules["rules"]] == ["mail stalled"] and "secret" not in rules["rules"][0]
    assert "mail stalled until" in silence_line
    assert not AlertRule.objects.exists() and not AlertSilence.objects.exists()
    actions = list(AuditEntry.objects.filter(username="otto").order_by("id").values_list("action", flat=True))
    assert actions == ["alert_add", "alert_silence", "alert_delete"]


def test_a_viewer_is_refused_with_exit_4_and_a_bad_duration_is_exit_2(console: str, monkeypatch: pytest.MonkeyPatch,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    vera = user_create(username="vera", password="vera-password", role=VIEWERS)
    otto = user_create(username="otto", password="otto-password", role=OPERATORS)
    _as(monkeypatch, vera)
    refused = main(["alert", "add", "x", "--kind", "why", "--queue", "mail", "--webhook", "http://127.0.0.1:9/h"])
    said = capsys.readouterr().err
    _as(monkeypatch, otto)
    main(["alert", "add", "x", "--kind", "why", "--queue", "mail", "--webhook", "http://127.0.0.1:9/h"])
    bad = main(["alert", "silence", "x", "--for", "a while"])
    missing = main(["alert", "delete", "no-such-rule"])

    assert refused == 4 and "403" in said and "viewer" in said
    assert bad == 2 and missing == 7
    assert AlertRule.objects.count() == 1


def test_without_a_token_it_says_how_to_get_one(console: str, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("EMQ_CONSOLE_TOKEN", raising=False)

    assert main(["alert", "list"]) == 2
    assert "EMQ_CONSOLE_TOKEN" in capsys.readouterr().err
