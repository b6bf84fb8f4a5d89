"""Failures grouped by cause: one signature for one cause, and groups the moves keep exact as jobs come and go."""

from __future__ import annotations

import collections
import time

import pytest

from queues import EchoMQ, NothingToClaim, QueueKeys, moves
from queues.failures import group_failed, groups, signatures
from queues.search import Query, Search, move_matches
from tests.support.why import scripts_usec


@pytest.mark.parametrize(("first", "second"), [
    ("timeout after 3012 ms on host a1b2", "timeout after 2999 ms on host c3d4"),
    ("Connection refused (10.0.0.12:6379)", "Connection refused (10.0.3.7:6380)"),
    ("job 550e8400-e29b-41d4-a716-446655440000 not found", "job 123e4567-e89b-12d3-a456-426614174000 not found"),
    ("KeyError: 'user_42'", "KeyError: 'order'"),
    ('duplicate key value violates unique constraint "orders_pkey" DETAIL: Key (id)=(17) already exists.',
     'duplicate key value violates unique constraint "users_pkey" DETAIL: Key (id)=(99) already exists.'),
    ("card declined for bob@example.com", "card declined for ann.lee+x@mail.example.org"),
    ("object 5f1e2d3c4b5a9e8d is locked", "object 0a9b8c7d6e5f4a3b is locked"),
    ("segfault at 0x7ffd5e8c1a20", "segfault at 0x0000000000000010"),
    ("HTTP 503 from https://api.example.com/v2/users/12345", "HTTP 502 from https://api.example.com/v2/users/7"),
    ("Traceback (most recent call last):\n  File \"w.py\", line 3, in run\nValueError: bad amount '12.50'",
     "Traceback (most recent call last):\n  File \"w.py\", line 9, in go\nValueError: bad amount '-3'"),
    ("java.net.SocketTimeoutException: Read timed out\n\tat java.net.SocketInputStream.read(Native Method)",
     "java.net.SocketTimeoutException: Read timed out\n\tat okhttp3.Call.execute(Call.java:42)"),
    ("rate limited: retry in 17s", "rate limited: retry in 3s"),
])
def test_one_cause_with_other_particulars_is_one_signature(mq: EchoMQ, first: str, second: str) -> None:
    [(group_a, sig_a), (group_b, sig_b)] = mq.run(signatures("q", [first, second]))

    assert sig_a == sig_b and group_a == group_b


@pytest.mark.parametrize(("first", "second"), [
    ("timeout after 3012 ms", "connection refused after 3012 ms"),
    ("card declined", "card expired"),
    ("KeyError: 'a'", "ValueError: 'a'"),
    ("cancelled", "lease expired"),
])
def test_different_causes_are_different_signatures(mq: EchoMQ, first: str, second: str) -> None:
    [(group_a, _), (group_b, _)] = mq.run(signatures("q", [first, second]))

    assert group_a != group_b


def test_a_signature_reads_as_the_error_with_its_particulars_replaced(mq: EchoMQ) -> None:
    texts = ["timeout after 3012 ms on host a1b2", "KeyError: 'user_42'", "", "x" * 5000]

    [(_, timeout), (_, key_error), (_, empty), (_, long)] = mq.run(signatures("q", texts))

    assert (timeout, key_error, empty) == ("timeout after <n> ms on host <id>", "KeyError: '?'", "(no error text)")
    assert len(long) == 200


def fail_for_good(mq: EchoMQ, job_id: str, error: str, queue: str = "q") -> None:
    mq.enqueue(queue, "{}", job_id=job_id, max_attempts=1)
    [job] = [j for j in mq.claim(queue, count=1000) if j.id == job_id]
    mq.run(moves.fail(queue, job.id, job.token, error=error, backoff_ms=0))


def by_signature(mq: EchoMQ, queue: str = "q") -> dict[str, int]:
    return {g.signature: g.count for g in mq.run(groups(queue)).groups}


def test_the_moves_into_failed_keep_each_group_with_count_first_last_and_sample(mq: EchoMQ) -> None:
    fail_for_good(mq, "a", "timeout after 3012 ms on host a1b2")
    fail_for_good(mq, "b", "timeout after 2999 ms on host c3d4")
    fail_for_good(mq, "c", "card declined")
    mq.enqueue("q", "{}", job_id="d")
    mq.cancel("q", "d", expect_state="pending")
    mq.enqueue("q", "{}", job_id="e", max_attempts=1)
    mq.claim("q", lease_ms=1)
    time.sleep(0.01)
    mq.recover_expired("q")

    read = mq.run(groups("q"))

    assert by_signature(mq) == {"timeout after <n> ms on host <id>": 2, "card declined": 1, "cancelled": 1,
                                "lease expired": 1}
    [timeouts] = [g for g in read.groups if g.count == 2]
    assert read.groups[0] == timeouts and (read.failed, read.group_count) == (5, 4)
    assert (timeouts.sample_id, timeouts.sample_error) == ("b", "timeout after 2999 ms on host c3d4")
    assert timeouts.first_ms is not None and timeouts.last_ms is not None and timeouts.first_ms <= timeouts.last_ms


def test_a_failure_that_will_be_retried_is_in_no_group(mq: EchoMQ) -> None:
    mq.enqueue("q", "{}", job_id="a", max_attempts=3)
    [job] = mq.claim("q")
    mq.run(moves.fail("q", job.id, job.token, error="timeout", backoff_ms=0))

    assert by_signature(mq) == {} and "fsig" not in mq.job("q", "a").fields


def test_leaving_failed_takes_a_job_out_of_its_group_and_an_empty_group_goes(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    for job_id in ("r", "d", "p"):
        fail_for_good(mq, job_id, "card declined")

    mq.retry("q", "r")
    assert by_signature(mq) == {"card declined": 2} and "fsig" not in mq.job("q", "r").fields
    mq.delete("q", "d", expect_state="failed")
    assert by_signature(mq) == {"card declined": 1}
    mq.purge("q", "failed")
    assert by_signature(mq) == {}
    assert not [k for k in mq.redis.scan_iter(match=keys.prefix + "failure*")]


def test_a_job_failing_again_after_a_retry_is_counted_once_in_its_new_group(mq: EchoMQ) -> None:
    fail_for_good(mq, "a", "timeout")
    mq.retry("q", "a")
    [job] = mq.claim("q")
    mq.run(moves.fail("q", job.id, job.token, error="card declined", backoff_ms=0))

    assert by_signature(mq) == {"card declined": 1}


def test_groups_stay_exact_through_a_mix_of_moves_in_batches(mq: EchoMQ) -> None:
    errors = ["timeout after 1 ms", "timeout after 2 ms", "card declined", "KeyError: 'x'"]
    for n in range(200):
        fail_for_good(mq, f"j{n:03d}", errors[n % 4])
    mq.retry_failed("q", limit=7)  # every failed job back to pending
    for job in mq.claim("q", count=200):
        n = int(job.id[1:])
        if n % 3:
            mq.run(moves.fail("q", job.id, job.token, error=errors[n % 4].replace("1", "9"), backoff_ms=0))
        else:
            mq.complete("q", job.id, job.token)
    for n in range(0, 200, 5):
        if mq.job("q", f"j{n:03d}").state == "failed":
            mq.delete("q", f"j{n:03d}", expect_state="failed")

    expected = collections.Counter()
    for job_id in mq.page("q", "failed", limit=500).rows:
        expected[mq.run(signatures("q", [job_id.last_error]))[0][1]] += 1
    assert by_signature(mq) == dict(expected)
    assert sum(by_signature(mq).values()) == mq.stats("q").counts["failed"]
    done = mq.page("q", "done", limit=500).rows
    assert done and all("fsig" not in mq.job("q", r.id).fields for r in done)


def test_an_index_key_of_another_type_leaves_the_move_alone_and_the_read_says_so(mq: EchoMQ) -> None:
    mq.redis.set(QueueKeys("q").prefix + "failures", "garbage")

    fail_for_good(mq, "a", "timeout")

    assert mq.job("q", "a").state == "failed"
    assert "cannot be read" in mq.run(groups("q")).problem


def test_a_search_by_group_finds_its_jobs_and_a_bulk_move_empties_it(mq: EchoMQ) -> None:
    for n in range(6):
        fail_for_good(mq, f"t{n}", f"timeout after {3000 + n} ms")
    fail_for_good(mq, "c", "card declined")
    time.sleep(0.002)
    [timeouts] = [g for g in mq.run(groups("q")).groups if g.count == 6]
    engine = Search(Query("failed", group=timeouts.id), ["q"])

    moved = sum(t.moved for t in move_matches(mq, "retry", engine))

    assert moved == 6 and by_signature(mq) == {"card declined": 1}


def test_the_error_filter_finds_an_earlier_attempts_error_in_the_jobs_history(mq: EchoMQ) -> None:
    mq.enqueue("q", "{}", job_id="a", max_attempts=2)
    [job] = mq.claim("q")
    mq.run(moves.fail("q", job.id, job.token, error="Timeout talking to ledger", backoff_ms=0))
    [job] = mq.claim("q")
    mq.run(moves.fail("q", job.id, job.token, error="card declined", backoff_ms=0))
    time.sleep(0.002)

    found = [m.id for step in Search(Query("failed", error="timeout talking"), ["q"]).steps(mq)
             for m in step.matches]
    actor = [m.id for step in Search(Query("failed", error="test"), ["q"]).steps(mq) for m in step.matches]

    assert found == ["a"] and actor == []  # the history's actor column ("test") is not an error


def test_a_corrupt_job_a_claim_sets_aside_is_grouped_by_what_was_wrong(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    for n in range(3):
        mq.redis.hset(keys.job(f"bad{n}"), mapping={"state": "done ", "attempts": "0", "payload": "{}"})
        mq.redis.zadd(keys.pending, {f"bad{n}": n})

    with pytest.raises(NothingToClaim):
        mq.claim("q")

    assert by_signature(mq) == {'corrupt: state "?" in pending': 3}


def test_failed_jobs_from_before_groups_are_grouped_once_at_the_time_they_failed(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    for n in range(1200):
        mq.redis.hset(keys.job(f"old{n}"), mapping={"state": "failed", "attempts": "1", "payload": "{}",
                                                     "last_error": f"timeout after {n} ms",
                                                     "finished_at": str(1_000_000 + n)})
        mq.redis.zadd(keys.failed, {f"old{n}": 1_000_000 + n})
    fail_for_good(mq, "new", "timeout after 5 ms")

    for _ in range(2):  # twice: a job already in a group is left alone
        start = 0
        while True:
            step = mq.run(group_failed("q", start=start, limit=500))
            start = step.next_start
            if not step.more:
                break

    [group] = mq.run(groups("q")).groups
    assert (group.signature, group.count) == ("timeout after <n> ms", 1201)
    assert group.first_ms == 1_000_000 and group.sample_id == "new"
    mq.retry("q", "old7")
    assert mq.run(groups("q")).groups[0].count == 1200


def test_groups_are_kept_and_searched_alike_on_a_cluster(any_mq: EchoMQ) -> None:
    for queue in ("alpha", "beta"):
        for n in range(3):
            fail_for_good(any_mq, f"{queue}-{n}", f"quota exceeded for tenant {n}", queue=queue)
    time.sleep(0.002)

    [alpha] = any_mq.run(groups("alpha")).groups
    found = [m.id for step in Search(Query("failed", group=alpha.id), ["alpha", "beta"]).steps(any_mq)
             for m in step.matches]

    assert (alpha.signature, alpha.count) == ("quota exceeded for tenant <n>", 3)
    assert sorted(found) == ["alpha-0", "alpha-1", "alpha-2", "beta-0", "beta-1", "beta-2"]


def test_a_groups_foreign_release_list_of_megabytes_is_not_split_for_each_job_it_takes(mq: EchoMQ) -> None:
    # Another writer's rels of a million words: each job that entered the group split it all again (0.2 s),
    # 4 s of Redis for one group_failed step of 20 jobs.
    keys = QueueKeys("q")

    def failed_before_groups(name: str) -> None:
        mq.redis.hset(keys.job(name), mapping={"state": "failed", "attempts": "1", "payload": "{}",
                                               "last_error": "boom", "history": "e1000000\nc5"})
        mq.redis.zadd(keys.failed, {name: 1_000_000})

    failed_before_groups("a")
    mq.run(group_failed("q"))
    [group] = mq.run(groups("q")).groups
    key = keys.prefix + "failure:" + group.id
    assert mq.redis.hget(key, "rels") == b"-"
    mq.redis.hset(key, "rels", "1 " * 1_000_000)
    for n in range(20):
        failed_before_groups(f"b{n}")
    mq.redis.config_resetstat()

    step = mq.run(group_failed("q"))

    assert step.grouped == 20 and mq.run(groups("q")).groups[0].count == 21
    # Far longer than the moves write (16 release numbers), it is left as it is.
    assert mq.redis.hget(key, "rels") == b"1 " * 1_000_000
    usec = scripts_usec(mq)
    assert 0 < usec < 1_000_000


def test_a_groups_foreign_values_longer_than_any_script_writes_are_named_by_their_length_not_read(
        mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    for n in range(3):
        mq.enqueue("q", "{}", job_id=f"j{n}", max_attempts=1)
        [job] = mq.claim("q")
        mq.fail("q", f"j{n}", job.token, error=f"error kind {'abc'[n]} happened", backoff_ms=0)
    read = mq.run(groups("q")).groups
    assert len(read) == 3 and all(not g.unread for g in read)
    huge = read[0].id
    mq.redis.hset(keys.prefix + "failure:" + huge, mapping={"sig": "s" * 3_000_000, "error": "e" * 9000})

    again = {g.id: g for g in mq.run(groups("q")).groups}

    assert again[huge].unread == (("signature", 3_000_000), ("sample error", 9000))
    assert again[huge].signature == "" and again[huge].sample_error == ""
    assert again[huge].sample_id and again[huge].count == 1  # the values within bounds are read as ever
    assert [(g.signature, g.unread) for g in again.values() if g.id != huge] == [
        (g.signature, ()) for g in read if g.id != huge]
