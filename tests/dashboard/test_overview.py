from __future__ import annotations

from django.test import Client

from dashboard.presenters import dom_id
from queues import EchoMQ, QueueKeys
from tests.support.htmx import htmx_get


def test_it_lists_every_queue_with_its_counts_per_state(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a")
    console_mq.enqueue("mail", "b", delay_ms=60_000)
    console_mq.enqueue("thumbs", "c")
    claimed = console_mq.claim("thumbs", lease_ms=60_000)
    console_mq.complete("thumbs", claimed[0].id, claimed[0].token)

    response = viewer_client.get("/")

    assert response.status_code == 200
    rows = {row.name: row for row in response.context["rows"]}
    assert list(rows) == ["mail", "thumbs"]
    assert (rows["mail"].stats.due, rows["mail"].stats.delayed) == (1, 1)
    assert rows["thumbs"].stats.counts["done"] == 1
    assert response.context["totals"].counts["pending"] == 2
    assert f'id="{dom_id("q", "mail")}"'.encode() in response.content


def test_it_counts_lapsed_leases_and_shows_the_oldest_due_age(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a")
    console_mq.enqueue("mail", "b")
    console_mq.claim("mail", lease_ms=1)
    keys = QueueKeys("mail")
    console_mq.redis.zadd(keys.active, {console_mq.page("mail", "active").rows[0].id: 1})

    response = viewer_client.get("/")

    row = response.context["rows"][0]
    assert row.stats.lapsed == 1
    assert row.stats.oldest_due_ms is not None
    assert b'class="alarm"' in response.content
    assert f'data-since="{row.stats.oldest_due_ms}"'.encode() in response.content


def test_the_filter_returns_only_the_rows_fragment_to_htmx(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a")
    console_mq.enqueue("thumbs", "b")

    response = htmx_get(viewer_client, "/?filter=thu", "overview-rows")

    assert response.status_code == 200  # type: ignore[attr-defined]
    html = response.content.decode()  # type: ignore[attr-defined]
    assert html.startswith('<tbody id="overview-rows"')
    assert "thumbs" in html and "mail" not in html
    assert "<html" not in html


def test_an_empty_keyspace_says_how_to_get_a_queue(viewer_client: Client, console_mq: EchoMQ) -> None:
    response = viewer_client.get("/")

    assert response.status_code == 200
    assert b"No queues yet" in response.content


def test_queue_names_are_escaped(viewer_client: Client, console_mq: EchoMQ) -> None:
    console_mq.enqueue("<b>bold</b>", "a")

    response = viewer_client.get("/")

    assert b"<b>bold</b>" not in response.content
    assert b"&lt;b&gt;bold&lt;/b&gt;" in response.content
