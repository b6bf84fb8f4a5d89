"""The why read: one bounded read of a queue or a job and the ordered reasons it says, on standalone and cluster."""

from __future__ import annotations

import json
import time

import pytest

from queues import AsyncEchoMQ, EchoMQ, QueueKeys, moves, why
from queues.cli import main
from queues.errors import NothingToClaim
from queues.lease_index import shard_of
from tests.support.redis_servers import free_port
from tests.support.why import commands_run, redis_usec, register, reset_commandstats


def codes(answer: why.Why) -> list[str]:
    return [r.code for r in answer.reasons]


def test_an_empty_queue_is_idle_and_the_answer_has_the_documented_shape(any_mq: EchoMQ) -> None:
    answer = any_mq.queue_why("mail").as_dict()

    assert set(answer) == {"reasons", "as_of_ms"} and answer["as_of_ms"] > 0
    [reason] = answer["reasons"]
    assert set(reason) == {"code", "text", "evidence"} and reason["code"] == "idle"
    assert reason["evidence"]["marks"] == {"pending": "exact", "active": "exact"}


def test_a_paused_queue_says_who_paused_it_since_when_and_why_first(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("mail", ["a", "b"])
    register(any_mq, "mail", "box:7")
    since = any_mq.pause("mail", reason="deploy 42").since_ms

    top = any_mq.queue_why("mail").top

    assert top.code == "paused" and "deploy 42" in top.text and "by test" in top.text
    assert (top.evidence["paused_by"], top.evidence["paused_since_ms"], top.evidence["due"]) == ("test", since, 2)


def test_due_jobs_and_no_worker_say_no_live_worker_with_the_last_one_seen(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a")
    assert any_mq.queue_why("mail").top.code == "no_live_worker"

    register(any_mq, "mail", "old-box:9", ttl_ms=1000)
    any_mq.redis.zadd(QueueKeys("mail").workers, {"old-box:9": 5000})  # its entry expired at ms 5000

    top = any_mq.queue_why("mail").top
    assert top.code == "no_live_worker" and "old-box:9" in top.text
    assert (top.evidence["last_seen_id"], top.evidence["last_seen_expired_ms"]) == ("old-box:9", 5000)


def test_a_worker_that_missed_two_heartbeats_is_gone_while_its_entry_still_runs(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a")
    register(any_mq, "mail", "box:7", ttl_ms=1500)  # beats every 500 ms, gone after 1000 ms without one
    assert any_mq.queue_why("mail").top.code != "no_live_worker"

    time.sleep(1.1)
    top = any_mq.queue_why("mail").top

    assert top.code == "no_live_worker" and "missed 2 heartbeats" in top.text
    [gone] = top.evidence["gone"]
    assert gone["id"] == "box:7" and gone["gone"] and gone["heartbeat_age_ms"] > 1000


def test_live_workers_holding_every_slot_are_at_capacity(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("mail", ["a", "b", "c"])
    register(any_mq, "mail", "box:7", concurrency=2, held=["x", "y"])
    register(any_mq, "mail", "box:8", concurrency=1, held=["z"])

    top = any_mq.queue_why("mail").top

    assert top.code == "at_capacity"
    assert (top.evidence["held"], top.evidence["concurrency"], top.evidence["due"]) == (3, 3, 3)
    assert top.evidence["marks"]["held"] == "stale" and "held" in top.evidence["ages_ms"]


def test_a_noted_claim_refusal_is_the_reason_with_its_kind_worker_and_time(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a")
    register(any_mq, "mail", "box:7")
    assert any_mq.run(moves.note_refusal("mail", "box:7", ttl_ms=60_000, kind="oom", text="OOM command not allowed"))
    assert not any_mq.run(moves.note_refusal("mail", "nobody:1", ttl_ms=60_000, kind="oom", text="x"))

    top = any_mq.queue_why("mail").top

    assert top.code == "claims_refused" and "out of memory" in top.text
    assert (top.evidence["kind"], top.evidence["worker"], top.evidence["refused_times"]) == ("oom", "box:7", 1)
    assert top.evidence["refused_ms"] <= any_mq.queue_why("mail").as_of_ms  # type: ignore[operator]


def test_claims_going_faster_than_arrivals_are_draining_with_a_time_to_drain(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("mail", ["x"] * 5)
    register(any_mq, "mail", "test", concurrency=100)
    for job in any_mq.claim("mail", count=5, lease_ms=60_000):
        any_mq.fail("mail", job.id, job.token, error="again", backoff_ms=0)  # due again at once
    for job in any_mq.claim("mail", count=3, lease_ms=60_000):
        any_mq.complete("mail", job.id, job.token)

    top = any_mq.queue_why("mail").top

    # 5 arrived, 8 claims: 2 due, and draining.
    assert top.code == "draining" and (top.evidence["due"], top.evidence["claimed"], top.evidence["arrived"]) == (2, 8, 5)
    assert top.evidence["eta_ms"] > 0 and top.evidence["marks"]["eta_ms"] == "estimated"


def test_a_due_queue_with_live_idle_consumers_and_no_claims_says_no_cause_found(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a")
    register(any_mq, "mail", "box:7", concurrency=4)

    top = any_mq.queue_why("mail").top

    assert top.code == "no_cause_found" and top.text.startswith("no cause found: the queue is due")


def test_lapsed_leases_without_a_sweeper_say_the_sweeper_has_not_run(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a", job_id="j")
    any_mq.claim("mail", lease_ms=50)
    time.sleep(0.1)

    answer = any_mq.queue_why("mail")
    assert answer.top.code == "sweeper_not_running"
    assert (answer.top.evidence["lapsed"], answer.top.evidence["oldest_lapsed_id"]) == (1, "j")

    # On a cluster the lock is the one of the queue's shard of the lease index.
    any_mq.redis.set(shard_of(any_mq.redis, "mail").lock_key, "abc/console-1", px=10_000)
    job = any_mq.job_why("mail", "j")
    assert job.top.code == "lease_lapsed" and "console-1" in job.top.text
    assert "sweeper_not_running" not in codes(job) and "sweeper_not_running" not in codes(any_mq.queue_why("mail"))


def test_a_delayed_job_is_due_later_and_a_retried_one_is_retrying_later(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a", job_id="later", delay_ms=60_000)
    any_mq.enqueue("mail", "b", job_id="flaky")
    [job] = any_mq.claim("mail")
    any_mq.fail("mail", job.id, job.token, error="timeout talking to smtp", backoff_ms=30_000)

    delayed, retrying = any_mq.job_why("mail", "later").top, any_mq.job_why("mail", "flaky").top

    assert delayed.code == "delayed" and 59_000 < delayed.evidence["due_in_ms"] <= 60_000
    assert retrying.code == "retrying_later" and "timeout talking to smtp" in retrying.text
    assert retrying.evidence["attempts"] == 1 and retrying.evidence["due_in_ms"] > 29_000
    assert codes(any_mq.queue_why("mail")) == ["not_due", "no_live_worker"]


def test_a_due_job_waits_behind_the_due_jobs_ahead_of_it_after_the_queue_reasons(any_mq: EchoMQ) -> None:
    ids = any_mq.enqueue_many("mail", ["x"] * 6)
    register(any_mq, "mail", "box:7", concurrency=1, held=["busy"])
    # Jobs due at the same ms are claimed in id order, as ZRANK ranks them.
    fifth = sorted(ids, key=lambda i: (any_mq.redis.zscore(QueueKeys("mail").pending, i), i))[4]

    answer = any_mq.job_why("mail", fifth)

    assert codes(answer) == ["at_capacity", "waiting_behind"]
    assert answer.reasons[1].evidence["rank"] == 4 and "waiting behind 4 due job(s)" in answer.reasons[1].text


def test_an_active_job_is_leased_by_its_live_worker_or_held_by_a_worker_that_is_gone(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a", job_id="j")
    register(any_mq, "mail", "test", ttl_ms=60_000)
    [job] = any_mq.claim("mail", lease_ms=60_000)

    leased = any_mq.job_why("mail", "j").top
    assert leased.code == "leased" and leased.evidence["worker"] == "test"
    assert leased.evidence["attempts"] == 1 and leased.evidence["lease_deadline_ms"] == job.lease_deadline_ms

    any_mq.run(moves.unregister_worker("mail", "test"))
    gone = any_mq.job_why("mail", "j").top
    assert gone.code == "worker_gone" and "test" in gone.text


def test_failed_jobs_say_exhausted_cancelled_or_corrupt_and_finished_ones_done(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a", job_id="once", max_attempts=1)
    [job] = any_mq.claim("mail")
    any_mq.fail("mail", job.id, job.token, error="KeyError: 'to'")
    any_mq.enqueue("mail", "b", job_id="cancel-me", delay_ms=60_000)
    any_mq.cancel("mail", "cancel-me", expect_state="pending")
    any_mq.redis.hset(QueueKeys("mail").job("bad"), mapping={"state": "done ", "attempts": "0", "payload": "x"})
    any_mq.redis.zadd(QueueKeys("mail").pending, {"bad": 1})
    with pytest.raises(NothingToClaim):
        any_mq.claim("mail")  # it sets the planted job aside
    any_mq.enqueue("mail", "c", job_id="ok")
    [job] = any_mq.claim("mail")
    any_mq.complete("mail", job.id, job.token)

    exhausted = any_mq.job_why("mail", "once").top
    assert exhausted.code == "attempts_exhausted" and "KeyError: 'to'" in exhausted.text
    cancelled = any_mq.job_why("mail", "cancel-me").top
    assert cancelled.code == "cancelled" and cancelled.evidence["cancelled_by"] == "test"
    corrupt = any_mq.job_why("mail", "bad").top
    assert corrupt.code == "corrupt" and 'state "done " in pending' in corrupt.text
    assert any_mq.job_why("mail", "ok").top.code == "done"
    assert any_mq.job_why("mail", "nobody").top.code == "missing"


@pytest.mark.parametrize("digits", ["\u00b2", "\u0661\u0662", "\u2460"])
def test_attempts_in_digits_that_are_not_ascii_are_read_as_unknown_not_an_error(any_mq: EchoMQ, digits: str) -> None:
    # str.isdigit() takes each of these, and int() refuses '²' and '①': the why read must not raise on them.
    any_mq.redis.hset(QueueKeys("mail").job("odd"), mapping={"state": "failed", "attempts": digits,
                                                             "max_attempts": digits, "payload": "x"})
    any_mq.redis.zadd(QueueKeys("mail").failed, {"odd": 1})

    top = any_mq.job_why("mail", "odd").top

    assert top.evidence["attempts"] is None and top.evidence["max_attempts"] == 3


def test_a_job_whose_hash_and_sets_disagree_is_an_integrity_finding_with_its_repair(any_mq: EchoMQ) -> None:
    any_mq.enqueue("mail", "a", job_id="j")
    any_mq.redis.zadd(QueueKeys("mail").active, {"j": 1})

    top = any_mq.job_why("mail", "j").top

    assert top.code == "integrity" and top.evidence["sets"] == ["pending", "active"]
    assert "repair offered" in top.text


def test_a_queue_key_of_another_type_answers_unknown_not_a_reason(any_mq: EchoMQ) -> None:
    any_mq.redis.set(QueueKeys("mail").pending, "x")

    answer = any_mq.queue_why("mail")

    assert answer.top.code == "unknown" and answer.as_of_ms is None


@pytest.mark.parametrize("where", ["standalone", "cluster"])
async def test_the_async_client_gives_the_same_answer(request: pytest.FixtureRequest, where: str) -> None:
    url = request.getfixturevalue("redis_url") if where == "standalone" else request.getfixturevalue(
        "redis_cluster").url
    sync = EchoMQ.from_url(url, actor="test")
    sync.redis.delete(*QueueKeys("mail").script_keys("j"))
    sync.enqueue("mail", "a", job_id="j", delay_ms=60_000)
    amq = AsyncEchoMQ.from_url(url, actor="test")
    try:
        queue, job = await amq.queue_why("mail"), await amq.job_why("mail", "j")
    finally:
        await amq.close()
        sync.close()

    assert queue.top.code == "not_due" and job.top.code == "delayed"
    assert queue.top.evidence["delayed"] == 1


@pytest.mark.parametrize("subject", ["queue", "job"])
def test_the_read_sends_as_many_commands_at_10_jobs_as_at_a_million_in_under_5_ms_of_redis_time(
        any_mq: EchoMQ, subject: str) -> None:
    def fill(queue: str, count: int) -> None:
        keys = QueueKeys(queue)
        pipe = any_mq.redis.pipeline(transaction=False)
        for start in range(0, count, 10_000):
            pipe.zadd(keys.pending, {f"j{n}": n for n in range(start, min(start + 10_000, count))})
            pipe.zadd(keys.active, {f"a{n}": 2 * 10**13 for n in range(start, min(start + 10, count))})
            if len(pipe) >= 20:
                pipe.execute()
        pipe.execute()
        any_mq.enqueue(queue, "x", job_id="mine")
        register(any_mq, queue, "box:7")

    def cost(queue: str) -> tuple[dict[str, int], float]:
        read = (lambda mq, q: mq.queue_why(q)) if subject == "queue" else (lambda mq, q: mq.job_why(q, "mine"))
        read(any_mq, queue)  # the script is cached now
        reset_commandstats(any_mq)
        for _ in range(5):
            read(any_mq, queue)
        calls = {name: n for name, n in commands_run(any_mq).items() if name not in ("cmdstat_config", "cmdstat_info")}
        return calls, redis_usec(any_mq, "evalsha") / 5 / 1000

    fill("small", 10)
    fill("large", 1_000_000)
    small, _ = cost("small")
    large, large_ms = cost("large")

    assert small == large and small["cmdstat_evalsha"] == 5
    assert large_ms < 5, f"{large_ms:.2f} ms of Redis time per read at 10^6 jobs"


def test_emq_why_prints_each_reason_as_a_line_or_the_answer_as_json(mq: EchoMQ, redis_url: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    url = redis_url
    mq.enqueue("mail", "x", job_id="j")
    mq.pause("mail", reason="deploy")

    assert main(["--url", url, "why", "mail"]) == 0
    assert capsys.readouterr().out.startswith("paused\tpaused by test ")
    assert main(["--url", url, "why", "mail", "j", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [r["code"] for r in answer["reasons"]] == ["paused", "no_live_worker", "waiting_behind"] and answer["as_of_ms"] > 0


def test_emq_why_says_unknown_and_exits_1_when_redis_does_not_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", f"redis://127.0.0.1:{free_port()}/0", "why", "mail"]) != 0
