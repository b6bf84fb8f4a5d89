"""A fixed corpus of what other writers leave in Redis: no page, fragment or API read answers 5xx for it,
the odd value is shown with a warning, and the operator can still delete the job that holds it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.monitoring.snapshot import walker_reset
from queues import EchoMQ
from tests.support.odd_keyspace import REGISTRY, as_str, console_urls, deep_json, job_key, prefix, server_errors, write_job

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def metrics_from_loopback(settings: SettingsWrapper) -> Iterator[None]:
    settings.EMQ_METRICS_ALLOW = ["127.0.0.1"]
    settings.EMQ_METRICS_INTERVAL_S = 0.1
    walker_reset()
    yield
    walker_reset()


@pytest.fixture
def raw(console_mq: EchoMQ) -> redis.Redis:
    return console_mq.redis  # type: ignore[return-value]


def every_page_answers(client: Client, queues: list[bytes], jobs: list[tuple[bytes, bytes]]) -> None:
    urls = list(console_urls([as_str(q) for q in queues], [(as_str(q), as_str(j)) for q, j in jobs]))
    bad = server_errors(client, urls)
    assert not bad, "\n".join(f"{url}: {problem}" for url, problem in bad)


def test_a_registry_name_with_a_space_leaves_every_page_working(operator_client: Client, console_mq: EchoMQ,
                                                                raw: redis.Redis) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")
    raw.sadd(REGISTRY, b"bad name")

    every_page_answers(operator_client, [b"mail", b"bad name"], [(b"mail", b"j1")])
    overview = operator_client.get("/").content.decode()
    assert "mail" in overview and "bad name" in overview and "not a queue name" in overview


def test_a_registry_name_that_is_not_utf8_leaves_every_page_working(operator_client: Client, console_mq: EchoMQ,
                                                                    raw: redis.Redis) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")
    raw.sadd(REGISTRY, b"caf\xe9")

    every_page_answers(operator_client, [b"mail", b"caf\xe9"], [(b"mail", b"j1")])
    overview = operator_client.get("/").content.decode()
    assert "mail" in overview and r"caf\xe9" in overview


def test_an_infinite_score_leaves_every_tab_working(operator_client: Client, console_mq: EchoMQ,
                                                    raw: redis.Redis) -> None:
    console_mq.enqueue("mail", "{}", job_id="good")
    for state in (b"pending", b"active", b"done", b"failed"):
        write_job(raw, b"mail", b"inf-" + state, state, float("inf"))
        write_job(raw, b"mail", b"ninf-" + state, state, float("-inf"))

    every_page_answers(operator_client, [b"mail"],
                       [(b"mail", b"good"), (b"mail", b"inf-active"), (b"mail", b"ninf-done")])


def test_a_stream_event_with_an_odd_time_or_odd_bytes_leaves_the_job_pages_working(
        operator_client: Client, console_mq: EchoMQ, raw: redis.Redis) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")
    events = prefix(b"mail") + b"events"
    raw.xadd(events, {b"move": b"enqueue", b"id": b"j1", b"ts": "²".encode()})
    raw.xadd(events, {b"move": b"\xff", b"id": b"j\xff", b"ts": b"1", b"actor": b"\xfe"})
    raw.xadd(events, {b"only": b"this"})

    every_page_answers(operator_client, [b"mail"], [(b"mail", b"j1"), (b"mail", b"j\xff")])


def test_a_deeply_nested_payload_is_shown_as_text(operator_client: Client, console_mq: EchoMQ,
                                                  raw: redis.Redis) -> None:
    write_job(raw, b"mail", b"deep", b"pending", 1, {b"payload": deep_json()})

    every_page_answers(operator_client, [b"mail"], [(b"mail", b"deep")])
    assert operator_client.get("/job/?q=mail&id=deep").status_code == 200


def test_a_job_id_that_is_not_utf8_is_shown_escaped(operator_client: Client, console_mq: EchoMQ,
                                                    raw: redis.Redis) -> None:
    write_job(raw, b"mail", b"j\xff1", b"pending", 1, {b"last_error": b"bad \xfe", b"\xfdname": b"v\xfc"})

    every_page_answers(operator_client, [b"mail"], [(b"mail", b"j\xff1")])
    page = operator_client.get("/queue/?q=mail").content.decode()
    assert r"j\xff1" in page


@pytest.mark.parametrize("kind", ["string", "list", "set", "zset", "stream"])
def test_a_key_of_the_wrong_type_leaves_every_page_working(operator_client: Client, console_mq: EchoMQ,
                                                          raw: redis.Redis, kind: str) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")
    console_mq.enqueue("mail", "{}", job_id="j2")
    for name in (b"pending", b"active", b"done", b"failed", b"events", b"workers", b"counts", b"paused",
                 b"job:j2"):
        key = prefix(b"mail") + name
        raw.delete(key)
        _write_as(raw, key, kind)
    raw.delete(REGISTRY)
    _write_as(raw, REGISTRY, kind)
    raw.sadd(b"emq:registered-by-hand", b"x")

    every_page_answers(operator_client, [b"mail"], [(b"mail", b"j1"), (b"mail", b"j2")])


def _write_as(client: redis.Redis, key: bytes, kind: str) -> None:
    if kind == "string":
        client.set(key, b"x")
    elif kind == "list":
        client.rpush(key, b"x")
    elif kind == "set":
        client.sadd(key, b"x")
    elif kind == "zset":
        client.zadd(key, {b"x": 1})
    else:
        client.xadd(key, {b"x": b"1"})


def test_a_job_hash_missing_its_fields_shows_why_and_offers_delete(operator_client: Client,
                                                              console_mq: EchoMQ,
                                                              raw: redis.Redis) -> None:
    raw.sadd(REGISTRY, b"mail")
    raw.hset(job_key(b"mail", b"bare"), b"note", b"x")
    raw.zadd(prefix(b"mail") + b"failed", {b"bare": 5})

    every_page_answers(operator_client, [b"mail"], [(b"mail", b"bare")])
    page = operator_client.get("/job/?q=mail&id=bare").content.decode()
    assert "the core field &#x27;state&#x27; is missing" in page and 'value="delete"' in page


@pytest.mark.parametrize("offset", ["²", "①", "١٢٣", "99999999999999999999", "-1", "1e3", " 5"])
def test_an_odd_offset_is_refused_in_words(operator_client: Client, console_mq: EchoMQ, offset: str) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")

    response = operator_client.get("/queue/", {"q": "mail", "offset": offset})

    assert response.status_code == 400 and "offset" in response.content.decode()


@pytest.mark.parametrize("older", ["²", "①", "١٢٣", "99999999999999999999"])
def test_an_odd_age_to_purge_is_refused_in_words(operator_client: Client, console_mq: EchoMQ, older: str) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")

    response = operator_client.post("/actions/queue/", {"q": "mail", "action": "purge_done", "older_than_ms": older})

    assert response.status_code == 400 and "older than" in response.content.decode()
    assert console_mq.redis.exists("emq:{mail}:job:j1")


@pytest.mark.parametrize("name, value", [("limit", "²"), ("limit", "١٢٣"), ("after", "²:x"), ("before", "١:x"),
                                         ("range", "²"), ("page", "²")])
def test_other_odd_numbers_in_the_query_do_not_answer_500(operator_client: Client, console_mq: EchoMQ,
                                                          name: str, value: str) -> None:
    console_mq.enqueue("mail", "{}", job_id="j1")

    for path in ("/queue/", "/audit/", "/workers/", "/api/queue/jobs"):
        response = operator_client.get(path, {"q": "mail", "state": "pending", name: value})
        assert response.status_code < 500, (path, response.status_code)
