"""The demo's seed: every demo queue, Exchange orders, and the odd jobs whose warnings the console shows."""

from __future__ import annotations

import pytest
from django.test import Client

from dashboard.management.commands.demo import FOREIGN_JOBS, QUEUES, Command
from queues import EchoMQ
from tests.support.keyspace import keyspace_dump


def test_the_seed_fills_every_demo_queue_places_orders_and_writes_odd_jobs(console_mq: EchoMQ) -> None:
    Command()._seed(console_mq)

    names = console_mq.queues()
    assert {q.name for q in QUEUES} | {"orders", "legacy"} <= set(names)
    assert console_mq.stats("orders").counts["pending"] == 12
    assert console_mq.stats("legacy").counts["pending"] == len(FOREIGN_JOBS)


def test_the_odd_jobs_show_their_warnings_and_the_xss_payload_stays_inert(
        console_mq: EchoMQ, viewer_client: Client) -> None:
    Command()._seed(console_mq)

    attempts = viewer_client.get("/job/?q=legacy&id=attempts-not-a-number").content.decode()
    state = viewer_client.get("/job/?q=legacy&id=unknown-state").content.decode()
    xss = viewer_client.get("/job/?q=legacy&id=xss-payload")
    listing = viewer_client.get("/queue/?q=legacy")

    assert "attempts is not a number" in attempts
    assert "unknown state &#x27;limbo&#x27;" in state
    assert xss.status_code == 200 and listing.status_code == 200
    assert "<img src=x" not in xss.content.decode() + listing.content.decode()
    assert "&lt;img src=x onerror=alert(1)&gt;" in xss.content.decode()


def test_the_demo_refuses_a_redis_that_holds_keys_and_writes_nothing(console_mq: EchoMQ, db: None) -> None:
    from django.core.management import CommandError, call_command

    console_mq.redis.set("someone:else", "x")
    before = keyspace_dump(console_mq.redis)  # type: ignore[arg-type]

    with pytest.raises(CommandError, match="already holds 1 keys.*--force"):
        call_command("demo", "--no-serve")

    assert keyspace_dump(console_mq.redis) == before  # type: ignore[arg-type]
