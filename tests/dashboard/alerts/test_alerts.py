"""Alert rules: a queue that stops draining fires one signed webhook; no second while firing; silences; retries; mail.

Rounds are driven by calling ``evaluate_round`` (and ``deliver_due`` with a later ``now`` for a retry's
backoff), so nothing waits on a clock; one test runs the evaluator's own thread and waits for its webhook.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core import mail
from django.test import Client
from django.utils import timezone
from pytest_django.fixtures import Settings as SettingsWrapper

from dashboard.actions.models import AuditEntry, QueueGrant
from dashboard.alerts.conditions import schedule_grace_ms
from dashboard.alerts.delivery import backoff_s, deliver_due
from dashboard.alerts.evaluator import evaluate_round
from dashboard.alerts.models import AlertDelivery, AlertRule
from dashboard.alerts.runner import AlertEvaluator, alerts_lock
from dashboard.alerts.services import parse_silence_end, rule_create, silence_create
from dashboard.roles import OPERATORS, VIEWERS, user_create
from dashboard.saved_views.services import view_save
from queues import EchoMQ, moves, slo
from queues.failures import groups
from queues.scheduler import Ticker
from queues.schedules import Definition, add_schedule, delete_schedule, pause_schedule
from tests.support.jobs import failed_jobs
from tests.support.redis_servers import RedisServer
from tests.support.webhook_receiver import Receiver, webhook_receiver

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "receiver-shared-secret-0123456789"


@pytest.fixture
def otto(db: None) -> User:
    return user_create(username="otto", password="otto-password", role=OPERATORS)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver(SECRET) as found:
        yield found


def _stalled(mq: EchoMQ, queue: str = "mail") -> str:
    """A due job and no worker: the queue does not drain (why: no_live_worker)."""
    return mq.enqueue(queue, '{"to": "a@example.com"}')


def _drain(mq: EchoMQ, queue: str = "mail") -> None:
    for job in mq.claim(queue, lease_ms=60_000, count=100):
        mq.run(moves.complete(queue, job.id, job.token))


def _why_rule(user: User, url: str, **options: Any) -> AlertRule:
    return rule_create(user=user, name=options.pop("name", "mail stalled"), kind="why", queue="mail",
                       webhook_url=url, secret=SECRET, **options).rule


def _actions(rule: AlertRule) -> list[tuple[str, str]]:
    rows = AuditEntry.objects.filter(parameters__rule=rule.pk).order_by("id")
    return [(row.action, row.outcome) for row in rows]


def test_a_queue_that_stops_draining_fires_one_webhook_that_its_receiver_verifies(
        console_mq: EchoMQ, otto: User, receiver: Receiver) -> None:
    rule = _why_rule(otto, receiver.url)
    assert evaluate_round().fired == []  # nothing waits yet

    _stalled(console_mq)
    report = evaluate_round()

    assert report.fired == ["mail stalled"] and report.delivered == 1
    [hook] = receiver.received
    assert hook.signed
    assert hook.headers["X-Emq-Event"] == "firing" and hook.headers["X-Emq-Delivery"] == f"{rule.pk}-1-firing"
    assert hook.data["rule"]["name"] == "mail stalled" and hook.data["details"]["code"] == "no_live_worker"
    assert "no live worker" in hook.data["summary"]
    assert _actions(rule) == [("alert_add", "moved"), ("alert_fire", "moved"), ("alert_deliver", "moved")]


def test_a_receiver_with_another_secret_cannot_verify_the_signature(console_mq: EchoMQ, otto: User) -> None:
    with webhook_receiver("not-the-rules-secret-at-all") as stranger:
        _why_rule(otto, stranger.url)
        _stalled(console_mq)
        evaluate_round()

    assert [hook.signed for hook in stranger.received] == [False]


def test_the_same_condition_does_not_fire_twice_while_it_holds(console_mq: EchoMQ, otto: User,
                                                              receiver: Receiver) -> None:
    rule = _why_rule(otto, receiver.url)
    _stalled(console_mq)

    reports = [evaluate_round() for _ in range(4)]
    firing_hooks = [h for h in receiver.received if h.data["event"] == "firing"]
    _drain(console_mq)
    resolved = evaluate_round()
    _stalled(console_mq)
    again = evaluate_round()

    assert [r.fired for r in reports] == [["mail stalled"], [], [], []]
    assert len(firing_hooks) == 1
    assert resolved.resolved == ["mail stalled"]
    assert again.fired == ["mail stalled"]
    assert [(h.data["event"], h.data["firing"]) for h in receiver.received] == [
        ("firing", 1), ("resolved", 1), ("firing", 2)]
    assert AlertRule.objects.get(pk=rule.pk).firings == 2


def test_a_silenced_rule_records_its_firing_and_delivers_nothing(console_mq: EchoMQ, otto: User,
                                                                 receiver: Receiver) -> None:
    rule = _why_rule(otto, receiver.url, emails=["oncall@example.com"])
    silence_create(user=otto, rule=rule, ends_at=parse_silence_end(duration="2h"), reason="deploy window")
    _stalled(console_mq)

    report = evaluate_round()

    assert report.fired == ["mail stalled"] and report.delivered == 0
    assert receiver.received == [] and mail.outbox == []
    assert set(AlertDelivery.objects.values_list("status", flat=True)) == {"silenced"}
    assert _actions(rule) == [("alert_add", "moved"), ("alert_silence", "moved"), ("alert_fire", "moved"),
                              ("alert_deliver", "refused")]


def test_a_silence_that_ends_lets_the_next_firing_through(console_mq: EchoMQ, otto: User, receiver: Receiver) -> None:
    rule = _why_rule(otto, receiver.url)
    silence = silence_create(user=otto, rule=rule, ends_at=parse_silence_end(duration="30m"))
    _stalled(console_mq)
    evaluate_round()
    silence.ends_at = timezone.now() - timedelta(seconds=1)
    silence.save()
    _drain(console_mq)
    evaluate_round()

    assert [h.data["event"] for h in receiver.received] == ["resolved"]


def test_a_receiver_that_answers_500_is_retried_with_backoff_until_it_takes_it(
        console_mq: EchoMQ, otto: User) -> None:
    with webhook_receiver(SECRET, statuses=[500, 500, 200]) as flaky:
        _why_rule(otto, flaky.url)
        _stalled(console_mq)
        now = timezone.now()
        first = evaluate_round(now=now)
        [delivery] = AlertDelivery.objects.all()
        early = deliver_due(now=now + timedelta(seconds=backoff_s(1) - 1))
        second = deliver_due(now=now + timedelta(seconds=backoff_s(1)))
        third = deliver_due(now=now + timedelta(seconds=backoff_s(1) + backoff_s(2)))

    assert first.failed == 1 and early == []
    assert [d.status for d in second] == ["pending"] and [d.status for d in third] == ["delivered"]
    assert [h.headers["X-Emq-Delivery"] for h in flaky.received] == [delivery.delivery_id] * 3
    assert all(h.signed for h in flaky.received)
    assert AlertDelivery.objects.get().attempts == 3
    outcomes = list(AuditEntry.objects.filter(action="alert_deliver").order_by("id").values_list("outcome", flat=True))
    assert outcomes == ["error", "error", "moved"]


def test_mail_goes_out_through_djangos_mail_settings(console_mq: EchoMQ, otto: User, settings: SettingsWrapper) -> None:
    settings.DEFAULT_FROM_EMAIL = "alerts@example.com"
    rule_create(user=otto, name="mail stalled", kind="why", queue="mail", emails="oncall@example.com, lead@example.com")
    _stalled(console_mq)

    evaluate_round()

    [message] = mail.outbox
    assert message.to == ["oncall@example.com", "lead@example.com"] and message.from_email == "alerts@example.com"
    assert message.subject == "[EchoMQ] FIRING: mail stalled"
    assert "no live worker consumes it" in message.body and "Queue: mail" in message.body


def test_a_failure_group_rule_fires_when_the_group_reaches_its_count(console_mq: EchoMQ, otto: User,
                                                                     receiver: Receiver) -> None:
    failed_jobs(console_mq, "mail", 2, error="smtp timeout after 30 s")
    group = console_mq.run(groups("mail")).groups[0].id
    rule_create(user=otto, name="smtp", kind="failure_group", queue="mail", parameters={"group": group, "at_least": 3},
                webhook_url=receiver.url, secret=SECRET)

    quiet = evaluate_round()
    failed_jobs(console_mq, "mail", 1, error="smtp timeout after 31 s")
    loud = evaluate_round()

    assert quiet.fired == [] and loud.fired == ["smtp"]
    assert receiver.received[0].data["details"]["count"] == 3


def test_a_saved_view_rule_fires_when_the_view_finds_jobs(console_mq: EchoMQ, otto: User, receiver: Receiver) -> None:
    view = view_save(user=otto, name="payment errors", kind="search",
                     data={"q": "mail", "state": "failed", "error": "payment"})
    rule_create(user=otto, name="payments", kind="view", view_id=view.pk, webhook_url=receiver.url, secret=SECRET)

    quiet = evaluate_round()
    failed_jobs(console_mq, "mail", 1, error="payment declined")
    loud = evaluate_round()

    assert quiet.fired == [] and loud.fired == ["payments"]
    assert receiver.received[0].data["details"] == {"count": 1, "at_least": 1, "view": view.pk}


def test_a_rule_whose_redis_stops_answering_keeps_its_state(otto: User, receiver: Receiver,
                                                            settings: SettingsWrapper) -> None:
    server = RedisServer().start()
    try:
        settings.EMQ_REDIS_URL = server.url
        mq = EchoMQ.from_url(server.url, socket_timeout=0.5)
        rule = _why_rule(otto, receiver.url)
        _stalled(mq)
        evaluate_round(mq=mq)
        server.stop()

        report = evaluate_round(mq=mq)
    finally:
        server.cleanup()

    found = AlertRule.objects.get(pk=rule.pk)
    assert report.undecided == ["mail stalled"] and report.resolved == []
    assert found.firing and "redis" in found.error.lower()
    assert [h.data["event"] for h in receiver.received] == ["firing"]


# The evaluator process: one at a time, under the lock -------------------------------------------------------

def test_a_running_evaluator_fires_the_webhook_within_60_seconds(console_mq: EchoMQ, otto: User,
                                                                 receiver: Receiver) -> None:
    _why_rule(otto, receiver.url)
    evaluator = AlertEvaluator(lambda: alerts_lock(interval_s=0.2), interval_s=0.2).start()
    try:
        _stalled(console_mq)
        arrived = receiver.arrived.wait(60)
    finally:
        evaluator.stop()

    assert arrived and [h.signed for h in receiver.received] == [True]


def test_twenty_firings_reach_the_receiver_within_5_seconds_of_their_evaluation_at_p95(
        console_mq: EchoMQ, otto: User, receiver: Receiver) -> None:
    _why_rule(otto, receiver.url)
    waited = []
    for firing in range(1, 21):
        _stalled(console_mq)
        started = time.monotonic()
        assert evaluate_round().fired == ["mail stalled"]
        [hook] = [h for h in receiver.received if h.data["event"] == "firing" and h.data["firing"] == firing]
        waited.append(hook.at - started)
        _drain(console_mq)
        assert evaluate_round().resolved == ["mail stalled"]

    assert sorted(waited)[18] < 5.0  # the 19th of 20: p95


def test_two_evaluators_take_turns_under_the_lock(console_mq: EchoMQ, otto: User, receiver: Receiver) -> None:
    _why_rule(otto, receiver.url)
    _stalled(console_mq)
    first = AlertEvaluator(lambda: alerts_lock(interval_s=5, holder="first"), interval_s=5)
    second = AlertEvaluator(lambda: alerts_lock(interval_s=5, holder="second"), interval_s=5)

    one, other = first.run_once(), second.run_once()

    assert one is not None and one.fired == ["mail stalled"]
    assert other is None
    holder = first.lock.holder_info()
    assert holder is not None and holder.key == "emq:lock:alerts" and holder.holder == "first"
    first.lock.release()


# Who may make rules, and the secret shown once ----------------------------------------------------------------

def _post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_an_operator_makes_a_rule_through_the_api_and_sees_its_secret_once(console_mq: EchoMQ, otto: User) -> None:
    client = Client()
    client.force_login(otto)

    made = _post(client, "/api/alerts", {"name": "stalled", "kind": "why", "queue": "mail", "codes": "no_consumer",
                                         "webhook_url": "http://127.0.0.1:9/hook"})
    later = client.get("/api/alerts/stalled")
    listed = client.get("/api/alerts")

    assert made.status_code == 201 and len(made.json()["secret"]) >= 32
    assert made.json()["parameters"] == {"codes": ["no_live_worker"]}
    assert later.status_code == 200 and "secret" not in later.json()
    assert made.json()["secret"] not in later.content.decode() + listed.content.decode()


def test_viewers_and_operators_outside_their_grant_may_not_make_rules(console_mq: EchoMQ) -> None:
    vera = user_create(username="vera", password="vera-password", role=VIEWERS)
    oscar = user_create(username="oscar", password="oscar-password", role=OPERATORS)
    QueueGrant.objects.create(user=oscar, pattern="billing-*")
    answers = []
    for user, queue in ((vera, "mail"), (oscar, "mail"), (oscar, "billing-eu")):
        client = Client()
        client.force_login(user)
        answers.append(_post(client, "/api/alerts", {"name": f"r-{user.pk}-{queue}", "kind": "why", "queue": queue,
                                                     "webhook_url": "http://127.0.0.1:9/hook"}).status_code)

    assert answers == [403, 403, 201]
    assert list(AlertRule.objects.values_list("queue", flat=True)) == ["billing-eu"]


def test_a_silence_is_its_own_resource_with_an_end_time(console_mq: EchoMQ, otto: User) -> None:
    rule_create(user=otto, name="stalled", kind="why", queue="mail", webhook_url="http://127.0.0.1:9/hook")
    client = Client()
    client.force_login(otto)

    made = _post(client, "/api/silences", {"rule": "stalled", "duration": "2h", "reason": "maintenance"})
    listed = client.get("/api/silences").json()["silences"]
    ended = client.delete(f"/api/silences/{made.json()['id']}")
    bad = _post(client, "/api/silences", {"rule": "stalled", "duration": "forever"})

    assert made.status_code == 201 and made.json()["rule_name"] == "stalled"
    assert [s["reason"] for s in listed] == ["maintenance"]
    assert ended.status_code == 200 and client.get("/api/silences").json()["silences"] == []
    assert bad.status_code == 400 and "30m, 2h or 1d" in bad.json()["error"]
    actions = list(AuditEntry.objects.filter(action__startswith="alert_").values_list("action", flat=True))
    assert sorted(actions) == ["alert_add", "alert_silence", "alert_unsilence"]


# The dead-man's switch: a schedule's tick expected and not seen ------------------------------------------------

def _overdue_schedule(mq: EchoMQ, *, every_ms: int = 60_000, late_ms: int = 600_000) -> None:
    """A schedule whose first tick came ``late_ms`` ago with no scheduler running: its tick was not seen."""
    now = mq.server_time_ms("reports")
    add_schedule(mq, "reports", "nightly", Definition.of(every_ms=every_ms, payload="{}"), now_ms=now - late_ms)


def test_a_schedule_that_misses_its_tick_fires_the_dead_mans_alert(console_mq: EchoMQ, otto: User,
                                                                   receiver: Receiver) -> None:
    rule_create(user=otto, name="nightly missing", kind="schedule", queue="reports",
                parameters={"schedule": "nightly"}, webhook_url=receiver.url, secret=SECRET)
    _overdue_schedule(console_mq)

    fired = evaluate_round()
    again = evaluate_round()
    Ticker(console_mq).run_round()  # a scheduler comes back: the latest tick is enqueued, the next is ahead
    resolved = evaluate_round()

    assert fired.fired == ["nightly missing"] and again.fired == []
    assert resolved.resolved == ["nightly missing"]
    hook = receiver.received[0]
    assert hook.signed and "was expected by" in hook.data["summary"] and "not seen" in hook.data["summary"]
    assert hook.data["details"]["overdue_ms"] > hook.data["details"]["grace_ms"] == 30_000
    assert [h.data["event"] for h in receiver.received] == ["firing", "resolved"]


def test_a_paused_schedule_does_not_fire_and_a_deleted_one_is_undecided(console_mq: EchoMQ, otto: User,
                                                                         receiver: Receiver) -> None:
    rule_create(user=otto, name="nightly missing", kind="schedule", queue="reports",
                parameters={"schedule": "nightly"}, webhook_url=receiver.url, secret=SECRET)
    _overdue_schedule(console_mq)
    pause_schedule(console_mq, "reports", "nightly")
    paused = evaluate_round()
    delete_schedule(console_mq, "reports", "nightly")
    gone = evaluate_round()

    assert paused.fired == [] and gone.undecided == ["nightly missing"]
    assert "has no schedule 'nightly'" in AlertRule.objects.get().error
    assert receiver.received == []


def test_the_grace_of_a_missed_tick_is_within_one_interval() -> None:
    rule = AlertRule(kind="schedule", parameters={"schedule": "s"})

    assert schedule_grace_ms(rule, 2_000) == 1_000
    assert schedule_grace_ms(rule, 3_600_000) == 60_000
    assert schedule_grace_ms(AlertRule(kind="schedule", parameters={"grace_s": 5}), 3_600_000) == 5_000


def test_a_running_evaluator_fires_when_a_short_schedules_tick_is_missed(console_mq: EchoMQ, otto: User,
                                                                         receiver: Receiver) -> None:
    rule_create(user=otto, name="every 2 s", kind="schedule", queue="reports", parameters={"schedule": "nightly"},
                webhook_url=receiver.url, secret=SECRET)
    _overdue_schedule(console_mq, every_ms=2_000, late_ms=0)
    evaluator = AlertEvaluator(lambda: alerts_lock(interval_s=0.2), interval_s=0.2).start()
    try:
        arrived = receiver.arrived.wait(60)
    finally:
        evaluator.stop()

    assert arrived and receiver.received[0].data["details"]["grace_ms"] == 1_000


def test_a_burn_rate_rule_fires_when_every_window_burns_faster_than_its_threshold(
        console_mq: EchoMQ, otto: User, receiver: Receiver) -> None:
    console_mq.run(slo.slo_set("slow", metric="wait", under_ms=100, target=99))
    rule_create(user=otto, name="slow burn", kind="slo_burn", queue="slow", parameters={"threshold": 14.4},
                webhook_url=receiver.url, secret=SECRET)
    quiet = evaluate_round()
    console_mq.enqueue_many("slow", ["x"] * 10)
    time.sleep(0.3)  # the jobs' wait, measured by the claim: every one over the objective's 100 ms
    console_mq.claim("slow", lease_ms=60_000, count=10)

    loud = evaluate_round()

    assert quiet.fired == []
    assert loud.fired == ["slow burn"]
    rates = receiver.received[0].data["details"]["burn_rate"]
    assert set(rates) == {"1h", "5m"} and all(rate >= 14.4 for rate in rates.values())
