"""/healthz and /readyz: no login, only words, and a Redis that is down or evicting is said so."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from queues import EchoMQ
from queues.scripts import script
from tests.support.eviction import evicting
from tests.support.redis_servers import RedisServer

pytestmark = pytest.mark.django_db


def lines(response: object) -> list[str]:
    return response.content.decode().splitlines()  # type: ignore[attr-defined]


def test_healthz_answers_ok_to_anyone(client: Client) -> None:
    response = client.get("/healthz")

    assert (response.status_code, response.content) == (200, b"ok\n")
    assert "no-cache" in response["Cache-Control"]


def test_readyz_is_ready_with_redis_migrations_and_scripts(client: Client, console_mq: EchoMQ) -> None:
    console_mq.redis.script_flush()

    response = client.get("/readyz")

    assert response.status_code == 200
    assert lines(response) == ["redis: ok", "migrations: ok", "scripts: ok", "eviction policy: ok", "ready"]
    # Loading them is the check, and it leaves them cached: the first move after a flush goes by EVALSHA.
    assert console_mq.redis.script_exists(script("claim").sha, script("complete").sha) == [True, True]


def test_readyz_says_an_evicting_redis_is_not_ok_but_stays_ready(client: Client, console_mq: EchoMQ) -> None:
    with evicting(console_mq.redis):
        response = client.get("/readyz")

    assert response.status_code == 200
    assert "eviction policy: not ok" in lines(response)
    assert b"allkeys-lru" not in response.content  # words only: no server facts to an unauthenticated caller


def test_readyz_is_not_ready_while_redis_is_down(client: Client, settings: SettingsWrapper) -> None:
    server = RedisServer().start()
    settings.EMQ_REDIS_URL = server.url
    client.get("/readyz")
    server.cleanup()

    response = client.get("/readyz")

    assert response.status_code == 503
    assert lines(response) == ["redis: not ok", "migrations: ok", "scripts: not ok", "eviction policy: unknown",
                               "not ready"]
    assert b"127.0.0.1" not in response.content and str(server.port).encode() not in response.content


def test_healthz_answers_while_redis_is_down(client: Client, settings: SettingsWrapper) -> None:
    settings.EMQ_REDIS_URL = "redis://127.0.0.1:1/0"

    assert client.get("/healthz").status_code == 200


def test_readyz_is_not_ready_with_migrations_left_to_apply(client: Client, console_mq: EchoMQ,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from dashboard.monitoring import views

    monkeypatch.setattr(views, "_migrations_ok_at", -views.MIGRATIONS_OK_FOR_S)
    # The app's newest migration: one before it left unapplied is not in a plan that starts from applied leaves.
    (leaf,) = MigrationLoader(connection).graph.leaf_nodes("emq_console")
    MigrationRecorder(connection).record_unapplied(*leaf)

    response = client.get("/readyz")

    assert response.status_code == 503 and "migrations: not ok" in lines(response)


def test_the_probes_refuse_posts(client: Client) -> None:
    assert client.post("/healthz").status_code == 405
    assert client.post("/readyz").status_code == 405
