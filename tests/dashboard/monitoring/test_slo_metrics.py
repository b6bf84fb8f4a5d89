"""/metrics exports each latency objective: its target, attainment, error budget and burn rates."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.monitoring.snapshot import walker_reset
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from queues.slo import slo_set
from tests.support.latency import early_in_a_minute, record_latencies
from tests.support.metrics import Samples, samples, value
from tests.support.waiting import wait_until

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_walker(settings: SettingsWrapper) -> Iterator[None]:
    settings.EMQ_METRICS_INTERVAL_S = 0.1
    settings.EMQ_METRICS_ALLOW = []
    walker_reset()
    yield
    walker_reset()


def _scraped(client: Client, token: str, name: str, **labels: str) -> Samples:
    seen: list[Samples] = []

    def check() -> bool:
        response = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200
        seen.append(samples(response.content.decode()))
        return value(seen[-1], name, **labels) is not None

    wait_until(check, 20, f"{name} in a walk", interval=0.1)
    return seen[-1]


def test_an_objective_burning_its_budget_is_exported_with_its_burn_rates(client: Client, viewer: User,
                                                                        console_mq: EchoMQ) -> None:
    now = early_in_a_minute(console_mq, "mail")
    console_mq.enqueue("mail", "x")  # registers the queue
    # 1,000 waits two minutes ago, 50 of them over 30 s: 5 % over where 1 % is allowed, a burn rate of 5.
    record_latencies(console_mq, "mail", now - 120_000, "W", [2_000] * 950 + [45_000] * 50)
    console_mq.run(slo_set("mail", metric="wait", under_ms=30_000, target=99))
    token = api_token_create(user=viewer, name="prometheus")

    parsed = _scraped(client, token, "emq_slo_burn_rate", queue="mail", metric="wait", window="1h")

    assert value(parsed, "emq_slo_objective_ratio", queue="mail", metric="wait") == 0.99
    assert value(parsed, "emq_slo_threshold_seconds", queue="mail", metric="wait") == 30
    assert value(parsed, "emq_slo_attainment_ratio", queue="mail", metric="wait") == pytest.approx(0.95)
    assert value(parsed, "emq_slo_burn_rate", queue="mail", metric="wait", window="1h") == pytest.approx(5)
    assert value(parsed, "emq_slo_burn_rate", queue="mail", metric="wait", window="6h") == pytest.approx(5)
    assert value(parsed, "emq_slo_burn_rate", queue="mail", metric="wait", window="5m") == pytest.approx(5)
    assert value(parsed, "emq_slo_error_budget_remaining_ratio", queue="mail", metric="wait") == pytest.approx(-4)
