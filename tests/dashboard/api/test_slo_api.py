"""``/api/queues/{q}/slo``: operators set and remove latency objectives (audited), viewers read them; the
queue read gives wait and run percentiles, rates and the time to drain."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.actions.models import AuditEntry
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ
from tests.support.jobs import done_jobs

pytestmark = pytest.mark.django_db(transaction=True)


def bearer(user: User) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_token_create(user=user, name='api')}"}


def put(client: Client, url: str, body: dict[str, object], user: User) -> object:
    return client.put(url, json.dumps(body), content_type="application/json", headers=bearer(user))


def test_the_queue_read_gives_percentiles_rates_and_the_time_to_drain(viewer_client: Client,
                                                                      console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 4)

    body = viewer_client.get("/api/queue?q=mail").json()

    assert set(body["latency"]["wait_ms"]) == {"p50", "p95", "p99"}
    assert body["latency"]["wait_measured"] == body["latency"]["run_measured"] == 4
    assert body["latency"]["time_to_drain_s"] == 0.0


def test_an_operator_sets_and_replaces_an_objective_and_each_change_is_audited(client: Client, operator: User,
                                                                              viewer_client: Client,
                                                                              console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 3)

    first = put(client, "/api/queues/mail/slo", {"metric": "wait", "under_ms": 30_000, "target": 95}, operator)
    second = put(client, "/api/queues/mail/slo", {"metric": "run", "under_ms": 500, "target": 99.9,
                                                  "window_days": 7}, operator)
    read = viewer_client.get("/api/queues/mail/slo").json()

    assert first.status_code == second.status_code == 200  # type: ignore[attr-defined]
    assert first.json()["previous"] is None  # type: ignore[attr-defined]
    assert second.json()["previous"]["metric"] == "wait"  # type: ignore[attr-defined]
    assert (read["slo"]["metric"], read["slo"]["under_ms"], read["slo"]["target"], read["slo"]["window_days"]) == (
        "run", 500, 99.9, 7)
    assert read["slo"]["measured"] == 3 and read["slo"]["attainment"] is not None
    entries = list(AuditEntry.objects.filter(action="slo_set").order_by("id"))
    assert [(e.username, e.queue, e.outcome) for e in entries] == [(operator.username, "mail", "moved")] * 2
    assert "was: 95 % of jobs wait under 30,000 ms over 30 d" in entries[1].result


def test_a_viewer_may_not_set_an_objective_and_the_refusal_is_audited(client: Client, viewer: User,
                                                                     console_mq: EchoMQ) -> None:
    response = put(client, "/api/queues/mail/slo", {"metric": "wait", "under_ms": 1000, "target": 95}, viewer)

    assert response.status_code == 403  # type: ignore[attr-defined]
    assert client.get("/api/queues/mail/slo", headers=bearer(viewer)).json()["slo"] is None
    assert AuditEntry.objects.filter(outcome="refused", username=viewer.username).exists()


def test_a_pattern_objective_applies_to_the_queues_it_matches_and_is_removed_by_its_name(client: Client,
                                                                                       operator: User,
                                                                                       console_mq: EchoMQ) -> None:
    put(client, "/api/queues/mail-*/slo", {"metric": "wait", "under_ms": 1000, "target": 90}, operator)

    applies = client.get("/api/queues/mail-eu/slo", headers=bearer(operator)).json()
    removed = client.delete("/api/queues/mail-*/slo", headers=bearer(operator))
    again = client.delete("/api/queues/mail-*/slo", headers=bearer(operator))

    assert applies["slo"]["name"] == "mail-*" and applies["slo"]["pattern"] is True
    assert removed.status_code == 200 and removed.json()["previous"]["under_ms"] == 1000
    assert again.status_code == 404 and again.json()["error"] == "refused: no objective is set for mail-*"
    assert AuditEntry.objects.filter(action="slo_delete").count() == 2


@pytest.mark.parametrize("body", [{"metric": "latency", "under_ms": 1000, "target": 95},
                                  {"metric": "wait", "under_ms": 0, "target": 95},
                                  {"metric": "wait", "under_ms": 1000, "target": 100},
                                  {"metric": "wait", "under_ms": 1000, "target": 95, "window_days": 91}])
def test_an_objective_out_of_bounds_is_refused_before_anything_is_written(client: Client, operator: User,
                                                                         console_mq: EchoMQ,
                                                                         body: dict[str, object]) -> None:
    response = put(client, "/api/queues/mail/slo", body, operator)

    assert response.status_code in (400, 422)  # type: ignore[attr-defined]
    assert not console_mq.redis.exists("emq:slos")
