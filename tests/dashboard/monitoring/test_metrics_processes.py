"""Two daphne processes behind one load balancer report the same gauges, read from Redis, restart or not."""

from __future__ import annotations

import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from queues import EchoMQ, QueueKeys
from tests.support.daphne import console_env, manage, start_daphne, stop_daphne
from tests.support.jobs import done_jobs, failed_jobs
from tests.support.metrics import Samples, samples, value
from tests.support.redis_servers import RedisServer
from tests.support.waiting import wait_until


@pytest.fixture
def two_consoles(redis_server: RedisServer) -> Iterator[tuple[list[str], dict[str, str], Path]]:
    redis_server.client().flushall()
    workdir = Path(tempfile.mkdtemp(prefix="emq-metrics-"))
    env = console_env(redis_server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0", EMQ_METRICS_ALLOW="127.0.0.1",
                      EMQ_METRICS_INTERVAL_S="0.2")
    manage(env, "migrate", "-v0")
    started = [start_daphne(env, workdir, f"daphne-{n}") for n in range(2)]
    try:
        yield [url for url, _ in started], env, workdir
    finally:
        for _, daphne in started:
            stop_daphne(daphne)


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url + "metrics", timeout=10) as response:
        return samples(response.read().decode())


def jobs_by_state(parsed: Samples, queue: str) -> dict[str, float | None]:
    return {state: value(parsed, "emq_queue_jobs", queue=queue, state=state)
            for state in ("due", "delayed", "active", "done", "failed")}


def outcomes(parsed: Samples, queue: str) -> dict[str, float | None]:
    return {o: value(parsed, "emq_jobs_total", queue=queue, outcome=o)
            for o in ("completed", "failed", "retried", "recovered", "cancelled")}


def from_the_sets(mq: EchoMQ, queue: str) -> dict[str, float | None]:
    keys, now = QueueKeys(queue), mq.server_time_ms(queue)
    due = mq.redis.zcount(keys.pending, "-inf", now)
    return {"due": due, "delayed": mq.redis.zcard(keys.pending) - due, "active": mq.redis.zcard(keys.active),
            "done": mq.redis.zcard(keys.done), "failed": mq.redis.zcard(keys.failed)}


def test_both_processes_report_what_the_sorted_sets_hold(two_consoles: tuple[list[str], dict[str, str], Path],
                                                         redis_server: RedisServer) -> None:
    urls, _, _ = two_consoles
    mq = EchoMQ.from_url(redis_server.url, actor="test")
    try:
        done_jobs(mq, "mail", 4)
        failed_jobs(mq, "mail", 2)
        mq.enqueue("mail", "later", delay_ms=3_600_000)
        mq.enqueue("mail", "now")
        mq.claim("mail", lease_ms=3_600_000)
        mq.enqueue("thumbs", "x")
        expected = {q: from_the_sets(mq, q) for q in ("mail", "thumbs")}

        for url in urls:
            wait_until(lambda: all(jobs_by_state(scrape(url), q) == expected[q] for q in expected), 30,
                       f"{url} to report the sets")

        mq.enqueue("mail", "another")
        expected["mail"] = from_the_sets(mq, "mail")
        for url in urls:
            wait_until(lambda: jobs_by_state(scrape(url), "mail") == expected["mail"], 30, f"{url} to follow a move")
        assert expected["mail"] == {"due": 1, "delayed": 1, "active": 1, "done": 4, "failed": 2}
        counters = {"completed": 4, "failed": 2, "retried": 0, "recovered": 0, "cancelled": 0}
        assert [outcomes(scrape(url), "mail") for url in urls] == [counters, counters]
    finally:
        mq.close()


def test_a_restarted_process_reports_the_same_gauges_and_counters(two_consoles: tuple[list[str], dict[str, str], Path],
                                                     redis_server: RedisServer) -> None:
    urls, env, workdir = two_consoles
    mq = EchoMQ.from_url(redis_server.url, actor="test")
    try:
        done_jobs(mq, "mail", 3)
        failed_jobs(mq, "mail", 1)
        expected = from_the_sets(mq, "mail")
        wait_until(lambda: jobs_by_state(scrape(urls[0]), "mail") == expected, 30, "the first process")
        counted = outcomes(scrape(urls[0]), "mail")
        assert counted == {"completed": 3, "failed": 1, "retried": 0, "recovered": 0, "cancelled": 0}
        url, daphne = start_daphne(env, workdir, "daphne-restarted")
        try:
            wait_until(lambda: jobs_by_state(scrape(url), "mail") == expected, 30, "a freshly started process")
            assert outcomes(scrape(url), "mail") == counted
        finally:
            stop_daphne(daphne)
    finally:
        mq.close()
