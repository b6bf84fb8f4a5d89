"""/metrics: who may scrape, that the gauges equal the sorted sets, and that a scrape reads no queue."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.monitoring.snapshot import walker_reset
from dashboard.orders.tokens import api_token_create
from queues import EchoMQ, QueueKeys, moves
from tests.support.eviction import evicting
from tests.support.jobs import done_jobs, failed_jobs
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


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def scrape(client: Client, token: str) -> Samples:
    response = client.get("/metrics", headers=bearer(token))
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return samples(response.content.decode())


def scraped_until(client: Client, token: str, condition: object, what: str) -> Samples:
    seen: list[Samples] = []

    def check() -> bool:
        seen.append(scrape(client, token))
        return bool(condition(seen[-1]))  # type: ignore[operator]

    wait_until(check, 20, what, interval=0.1)
    return seen[-1]


def test_it_answers_401_to_a_caller_without_a_token(client: Client, console_mq: EchoMQ) -> None:
    response = client.get("/metrics")

    assert response.status_code == 401 and response["WWW-Authenticate"].startswith("Bearer")


def test_it_answers_401_to_a_token_it_does_not_know(client: Client, console_mq: EchoMQ) -> None:
    assert client.get("/metrics", headers=bearer("emq_nope")).status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Basic dTpw"}).status_code == 401


def test_it_answers_403_to_the_token_of_a_user_who_may_not_view(client: Client, console_mq: EchoMQ) -> None:
    orders_only = User.objects.create_user("orders-bot")
    token = api_token_create(user=orders_only, name="orders")

    response = client.get("/metrics", headers=bearer(token))

    assert response.status_code == 403 and b"view_console" in response.content


def test_a_viewers_token_may_scrape(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    token = api_token_create(user=viewer, name="prometheus")

    assert value(scrape(client, token), "emq_redis_up") == 1


def test_an_address_in_the_allow_list_needs_no_token(client: Client, console_mq: EchoMQ,
                                                     settings: SettingsWrapper) -> None:
    settings.EMQ_METRICS_ALLOW = ["10.0.0.0/8", "127.0.0.1"]

    assert client.get("/metrics").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="192.168.1.9").status_code == 403
    assert client.get("/metrics", REMOTE_ADDR="::ffff:10.0.0.7").status_code == 200


def test_the_gauges_equal_the_sorted_sets(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    mq = console_mq
    for n in range(3):
        mq.enqueue("mail", f"{n}", job_id=f"due-{n}")
    mq.enqueue("mail", "later", job_id="delayed", delay_ms=3_600_000)
    held = mq.claim("mail", lease_ms=3_600_000)[0]
    lapsing = mq.claim("mail", lease_ms=3_600_000)[0]
    mq.redis.zadd(QueueKeys("mail").active, {lapsing.id: 1})  # its deadline long past
    mq.enqueue("thumbs", "x", job_id="t1", max_attempts=1)
    done_job = mq.claim("thumbs")[0]
    mq.complete("thumbs", done_job.id, done_job.token)
    mq.enqueue("thumbs", "y", job_id="t2", max_attempts=1)
    failing = mq.claim("thumbs")[0]
    mq.run(moves.fail("thumbs", failing.id, failing.token, error="boom", backoff_ms=0))
    assert held.id != lapsing.id
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_metrics_queues") == 2, "a walk over both queues")

    keys = QueueKeys("mail")
    now = mq.server_time_ms("mail")
    assert value(parsed, "emq_queue_jobs", queue="mail", state="due") == 1 == mq.redis.zcount(keys.pending, "-inf", now)
    assert value(parsed, "emq_queue_jobs", queue="mail", state="delayed") == 1
    assert value(parsed, "emq_queue_jobs", queue="mail", state="active") == 2 == mq.redis.zcard(keys.active)
    assert value(parsed, "emq_queue_active_leases", queue="mail") == 1
    assert value(parsed, "emq_queue_lapsed_leases", queue="mail") == 1
    assert value(parsed, "emq_queue_jobs", queue="thumbs", state="done") == 1 == mq.redis.zcard(QueueKeys("thumbs").done)
    assert value(parsed, "emq_queue_jobs", queue="thumbs", state="failed") == 1
    assert value(parsed, "emq_queue_oldest_due_age_seconds", queue="thumbs") == 0
    assert value(parsed, "emq_queue_oldest_due_age_seconds", queue="mail") >= 0  # type: ignore[operator]
    assert value(parsed, "emq_redis_maxmemory_policy_info", policy="noeviction") == 1
    assert value(parsed, "emq_redis_used_memory_bytes") > 0  # type: ignore[operator]
    assert value(parsed, "emq_queue_paused", queue="mail") == 0


def test_a_paused_queue_is_paused_1(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    console_mq.enqueue("thumbs", "x")
    console_mq.pause("mail", reason="rollback")
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_metrics_queues") == 2, "a walk")

    assert value(parsed, "emq_queue_paused", queue="mail") == 1
    assert value(parsed, "emq_queue_paused", queue="thumbs") == 0
    assert value(parsed, "emq_redis_used_memory_bytes") > 0  # type: ignore[operator]


def test_the_oldest_due_age_is_measured_on_the_servers_clock(client: Client, viewer: User,
                                                             console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "a", job_id="a")
    now = console_mq.server_time_ms("mail")
    console_mq.redis.zadd(QueueKeys("mail").pending, {"a": now - 90_000})
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_metrics_queues") == 1, "a walk")

    assert 90 <= value(parsed, "emq_queue_oldest_due_age_seconds", queue="mail") < 150  # type: ignore[operator]


def test_a_scrape_reads_no_queue(client: Client, viewer: User, console_mq: EchoMQ,
                                 settings: SettingsWrapper) -> None:
    settings.EMQ_METRICS_INTERVAL_S = 3600
    walker_reset()
    for name in ("a", "b", "c"):
        console_mq.enqueue(name, "x")
    token = api_token_create(user=viewer, name="prometheus")
    scrape(client, token)  # the first scrape waits for the first walk
    before = console_mq.redis.info("commandstats")

    for _ in range(20):
        scrape(client, token)

    after = console_mq.redis.info("commandstats")
    assert after.get("cmdstat_evalsha") == before.get("cmdstat_evalsha")
    assert after.get("cmdstat_sscan") == before.get("cmdstat_sscan")


def test_an_evicting_redis_is_named_by_its_policy(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    token = api_token_create(user=viewer, name="prometheus")
    with evicting(console_mq.redis):
        parsed = scraped_until(client, token,
                               lambda s: value(s, "emq_redis_maxmemory_policy_info", policy="allkeys-lru") == 1,
                               "the policy in a walk")

    assert value(parsed, "emq_redis_maxmemory_policy_info", policy="noeviction") is None


def test_a_redis_that_is_down_is_up_0_not_an_error(client: Client, viewer: User, settings: SettingsWrapper) -> None:
    settings.EMQ_REDIS_URL = "redis://127.0.0.1:1/0"
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scrape(client, token)

    assert value(parsed, "emq_redis_up") == 0
    assert not [key for key in parsed if key[0] == "emq_queue_jobs"]


def test_the_job_counters_equal_the_moves_made(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    done_jobs(console_mq, "mail", 3)
    failed_jobs(console_mq, "mail", 2)
    console_mq.retry("mail", console_mq.page("mail", "failed").rows[0].id)
    console_mq.enqueue("mail", "x", job_id="c")
    console_mq.cancel("mail", "c", expect_state="pending")
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_jobs_total", queue="mail", outcome="cancelled") == 1,
                           "the counters in a walk")

    expected = {"completed": 3, "failed": 2, "retried": 1, "recovered": 0, "cancelled": 1}
    assert {o: value(parsed, "emq_jobs_total", queue="mail", outcome=o) for o in expected} == expected
    assert value(parsed, "emq_jobs_enqueued_total", queue="mail") == 6
    assert value(parsed, "emq_jobs_claimed_total", queue="mail") == 5


def test_emq_workers_counts_the_live_entries(client: Client, viewer: User, console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x")
    facts = dict(ttl_ms=60_000, host="h", pid=1, runtime="python", concurrency=1, started_ms=1, held=[])
    console_mq.run(moves.register_worker("mail", "w:1", **facts))
    console_mq.run(moves.register_worker("mail", "w:2", **facts))
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_workers", queue="mail") == 2, "two workers")

    assert value(parsed, "emq_workers", queue="mail") == 2


def test_the_wait_and_run_histograms_count_each_claim_and_finish(client: Client, viewer: User,
                                                                 console_mq: EchoMQ) -> None:
    console_mq.enqueue("mail", "x", job_id="a")
    now = console_mq.server_time_ms("mail")
    console_mq.redis.zadd(QueueKeys("mail").pending, {"a": now - 20_000})  # due 20 s ago
    [job] = console_mq.claim("mail", lease_ms=60_000)
    # As if it ran 2 s: the run counts from the history's claim entry (PROTOCOL.md, section 9).
    console_mq.redis.hset(QueueKeys("mail").job("a"), "history", f"e{now - 2_000}\ttest\nc0.1")
    console_mq.complete("mail", job.id, job.token)
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_job_run_seconds_count", queue="mail") == 1,
                           "the histograms in a walk")

    assert value(parsed, "emq_job_wait_seconds_bucket", queue="mail", le="10") == 0
    assert value(parsed, "emq_job_wait_seconds_bucket", queue="mail", le="30") == 1
    assert value(parsed, "emq_job_wait_seconds_bucket", queue="mail", le="+Inf") == 1
    assert 19 <= value(parsed, "emq_job_wait_seconds_sum", queue="mail") < 60  # type: ignore[operator]
    assert value(parsed, "emq_job_run_seconds_bucket", queue="mail", le="1") == 0
    assert value(parsed, "emq_job_run_seconds_bucket", queue="mail", le="5") == 1
    assert 2 <= value(parsed, "emq_job_run_seconds_sum", queue="mail") < 30  # type: ignore[operator]


def test_emq_queues_by_reason_counts_the_queues_of_each_first_reason(client: Client, viewer: User,
                                                                     console_mq: EchoMQ) -> None:
    for name in ("mail", "thumbs"):
        console_mq.enqueue(name, "x")
        console_mq.pause(name, reason="deploy")
    console_mq.enqueue("billing", "x")  # due, and no worker registered
    console_mq.enqueue("later", "x", delay_ms=60_000)
    token = api_token_create(user=viewer, name="prometheus")

    parsed = scraped_until(client, token, lambda s: value(s, "emq_metrics_queues") == 4, "a walk")

    assert value(parsed, "emq_queues_by_reason", reason="paused") == 2
    assert value(parsed, "emq_queues_by_reason", reason="no_live_worker") == 1
    assert value(parsed, "emq_queues_by_reason", reason="not_due") == 1
    assert value(parsed, "emq_queues_by_reason", reason="at_capacity") == 0
