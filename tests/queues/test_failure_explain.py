"""Failure groups that explain: the releases and hosts behind a group, whether it is new since a release, its
rate now against the hour before, and the payload field values over-represented in it, read in bounded steps."""

from __future__ import annotations

import json

import pytest

from queues import EchoMQ, QueueKeys, moves
from queues.cli import main
from queues.deploys import deploy_mark
from queues.failure_explain import (
    UNKNOWN_RELEASE,
    explain_failures,
    failure_sample,
    payload_fields,
)
from queues.failures import groups
from queues.search import FieldFilter
from tests.support.releases import run_one, worker_of


def two_releases(redis_url: str, mq: EchoMQ) -> None:
    """Release 1 fails a few jobs with a timeout; release 2 also fails every job of tenant acme with a KeyError."""
    old, new = worker_of(redis_url, "host-1:1", "v1.0"), worker_of(redis_url, "host-2:2", "v2.0")
    for i in range(40):
        tenant = "acme" if i % 10 == 0 else f"t{i % 7}"
        mq.enqueue("q", json.dumps({"tenant": tenant, "order": {"n": i, "region": "eu"}}), job_id=f"a{i}",
                   max_attempts=1)
        run_one(old, f"a{i}", "timeout after 30 ms" if i % 8 == 0 else None)
    for i in range(40):
        tenant = "acme" if i % 10 == 0 else f"t{i % 7}"
        mq.enqueue("q", json.dumps({"tenant": tenant, "order": {"n": i, "region": "eu"}}), job_id=f"b{i}",
                   max_attempts=1)
        error = "KeyError: 'plan'" if tenant == "acme" else "timeout after 31 ms" if i % 8 == 0 else None
        run_one(new, f"b{i}", error)
    old.close()
    new.close()


def test_a_group_keeps_the_releases_its_failing_attempts_ran_on(redis_url: str, mq: EchoMQ) -> None:
    two_releases(redis_url, mq)

    by_sig = {g.signature: g for g in mq.run(groups("q")).groups}

    assert by_sig["timeout after <n> ms"].release_numbers == ("1", "2")
    assert by_sig["KeyError: '?'"].release_numbers == ("2",)


def test_a_group_new_with_release_2_is_new_since_it_and_shows_the_field_value_over_represented(
        redis_url: str, mq: EchoMQ) -> None:
    two_releases(redis_url, mq)

    explained = explain_failures(mq, "q")
    by_sig = {g.group.signature: g for g in explained.groups}
    key_error, timeout = by_sig["KeyError: '?'"], by_sig["timeout after <n> ms"]

    assert key_error.new_since == "v2.0"
    assert timeout.new_since == ""  # it failed under v1.0 already
    assert key_error.releases_ever == ("v2.0",) and timeout.releases_ever == ("v1.0", "v2.0")
    assert key_error.releases == (("v2.0", 4),) and key_error.hosts == (("host-2", 4),)
    [acme] = [f for f in key_error.fields if f.field.path == ("tenant",)]
    assert acme.field == FieldFilter(("tenant",), "str", "acme")
    assert acme.group_share == 1.0 and acme.in_group == 4
    assert 0.05 <= acme.all_share <= 0.15  # 8 of the 80 jobs
    assert acme.describe().startswith('100 % have tenant="acme" against ')
    # A value every job holds is not over-represented in any group.
    assert all(f.field.path != ("order", "region") for g in explained.groups for f in g.fields)
    assert key_error.sampled == 4 and key_error.last_hour == 4 and key_error.hour_before == 0
    assert explained.whole and explained.rate_whole and explained.looked_at == 13


def test_filters_by_release_and_host_keep_the_groups_that_ran_there(redis_url: str, mq: EchoMQ) -> None:
    two_releases(redis_url, mq)

    only_v1 = explain_failures(mq, "q", release="v1.0")
    only_host_2 = explain_failures(mq, "q", host="host-2")

    assert [g.group.signature for g in only_v1.groups] == ["timeout after <n> ms"] and only_v1.hidden == 1
    assert sorted(g.group.signature for g in only_host_2.groups) == ["KeyError: '?'", "timeout after <n> ms"]
    assert set(only_v1.release_choices) == {"v1.0", "v2.0"}
    assert set(only_v1.host_choices) == {"host-1", "host-2"}


def test_sorting_by_new_since_the_last_mark_puts_groups_that_began_after_it_first(redis_url: str, mq: EchoMQ) -> None:
    old = worker_of(redis_url, "host-1:1", "v1.0")
    for i in range(5):
        mq.enqueue("q", "{}", job_id=f"x{i}", max_attempts=1)
        run_one(old, f"x{i}", "timeout after 30 ms")
    mq.run(deploy_mark("v1.1"))
    mq.enqueue("q", "{}", job_id="y", max_attempts=1)
    run_one(old, "y", "card declined")
    old.close()

    by_count = explain_failures(mq, "q")
    by_new = explain_failures(mq, "q", sort="new")

    assert [g.group.signature for g in by_count.groups] == ["timeout after <n> ms", "card declined"]
    assert [(g.group.signature, g.new_since_mark) for g in by_new.groups] == [("card declined", True),
                                                                              ("timeout after <n> ms", False)]
    assert by_new.last_mark is not None and by_new.last_mark.label == "v1.1"


def test_a_runtime_that_records_no_release_is_release_unknown_and_never_new_since_a_release(
        redis_url: str, mq: EchoMQ) -> None:
    registered, other = worker_of(redis_url, "host-1:1", "v1.0"), EchoMQ.from_url(redis_url, actor="node:77")
    worker_of(redis_url, "host-1:2", "v2.0").close()
    for i in range(3):
        mq.enqueue("q", "{}", job_id=f"n{i}", max_attempts=1)
        run_one(other, f"n{i}", "ECONNRESET")
    mq.enqueue("q", "{}", job_id="p", max_attempts=1)
    run_one(registered, "p", "ECONNRESET")
    registered.close()
    other.close()

    [group] = explain_failures(mq, "q").groups

    assert group.releases_ever == (UNKNOWN_RELEASE, "v1.0")
    assert dict(group.releases) == {UNKNOWN_RELEASE: 3, "v1.0": 1}
    assert dict(group.hosts) == {"host unknown": 3, "host-1": 1}
    assert group.new_since == ""
    assert [g.group.id for g in explain_failures(mq, "q", release="-").groups] == [group.group.id]


def test_a_groups_rate_counts_its_failures_of_the_last_hour_against_the_hour_before(mq: EchoMQ) -> None:
    for i in range(7):
        mq.enqueue("q", "{}", job_id=f"r{i}", max_attempts=1)
    for job in mq.claim("q", count=7):
        mq.run(moves.fail("q", job.id, job.token, error="boom", backoff_ms=0))
    now, failed = mq.server_time_ms("q"), QueueKeys("q").failed
    # Jobs that failed earlier: the failed set's score is when each failed.
    mq.redis.zadd(failed, {"r0": now - 90 * 60_000, "r1": now - 100 * 60_000, "r2": now - 150 * 60_000}, xx=True)

    [group] = explain_failures(mq, "q").groups

    assert (group.last_hour, group.hour_before, group.sampled) == (4, 2, 7)


def test_a_sample_step_looks_at_no_more_than_asked_and_says_where_to_go_on(mq: EchoMQ) -> None:
    for i in range(30):
        mq.enqueue("q", json.dumps({"i": i}), job_id=f"j{i:02}", max_attempts=1)
    for job in mq.claim("q", count=30):
        mq.run(moves.fail("q", job.id, job.token, error="boom", backoff_ms=0))

    # Steps of at most 16 entries: the time budget is looked at only every 16 entries, so on a loaded machine
    # it cannot end a step before the number of entries asked.
    first = mq.run(failure_sample("q", "failed", entries=10, payloads_per_group=3))
    second = mq.run(failure_sample("q", "failed", offset=first.next_offset, entries=16))
    third = mq.run(failure_sample("q", "failed", offset=second.next_offset, entries=25))

    assert (first.looked_at, first.next_offset, first.done, first.card) == (10, 10, False, 30)
    assert sum(1 for j in first.jobs if j.payload is not None) == 3
    assert (second.looked_at, second.next_offset, second.done) == (16, 26, False)
    assert (third.looked_at, third.next_offset, third.done) == (4, 30, True)
    assert len({j.id for j in first.jobs + second.jobs + third.jobs}) == 30


def test_a_long_payload_or_a_key_of_another_type_is_sampled_without_being_read(mq: EchoMQ) -> None:
    mq.enqueue("q", json.dumps({"x": "y" * 5000}), job_id="long", max_attempts=1)
    [job] = mq.claim("q")
    mq.run(moves.fail("q", job.id, job.token, error="boom", backoff_ms=0))
    keys = QueueKeys("q")
    mq.redis.zadd(keys.failed, {"odd": 1})
    mq.redis.set(keys.job("odd"), "not a hash")

    step = mq.run(failure_sample("q", "failed"))

    assert [(j.id, j.payload, j.length > 4096 or j.length) for j in step.jobs] == [("long", None, True),
                                                                                  ("odd", None, -1)]
    [group] = explain_failures(mq, "q").groups
    assert group.sampled == 1 and group.fields == ()


def test_payload_fields_are_bounded_and_skip_what_is_not_a_scalar_of_an_object() -> None:
    fields = payload_fields(json.dumps({"a": 1, "b": {"c": "x", "d": [1, 2]}, "e": None, "f": True,
                                        "g": "z" * 65, "h": 1.5}).encode())

    assert {f.text() for f in fields} == {"a=1", 'b.c="x"', "e=null", "f=true", "h=1.5"}
    assert payload_fields(b"[1, 2]") == set() and payload_fields(b"not json") == set()
    assert payload_fields(b"[" * 3000) == set()
    assert len(payload_fields(json.dumps({f"k{i}": i for i in range(500)}).encode())) == 64


def test_emq_failures_explain_prints_the_same(redis_url: str, mq: EchoMQ, capsys: pytest.CaptureFixture[str]) -> None:
    two_releases(redis_url, mq)

    code = main(["--url", redis_url, "failures", "q", "--explain", "--release", "v2.0", "--sort", "new"])

    out = capsys.readouterr().out
    assert code == 0
    assert "KeyError: '?'" in out and "new since release v2.0" in out
    assert '100 % have tenant="acme" against' in out
    assert "  releases v1.0, v2.0; of 9 sampled: " in out  # the timeout group ran on both


def test_a_job_failed_for_good_by_a_registered_worker_stays_a_listpack_and_its_group_keeps_the_release(
        redis_url: str, mq: EchoMQ) -> None:
    """The release is kept on the group's hash (rels), not on the job's."""
    worker = worker_of(redis_url, "host-1:12345", "v1.4.2-3-gabc1234")
    producer = EchoMQ.from_url(redis_url, actor="api-1:4242")
    producer.enqueue("q", '{"to": "user2@example.com"}', job_id="failed", max_attempts=1)
    [job] = worker.claim("q")
    worker.run(moves.fail("q", job.id, job.token, error="timeout after 3012 ms", backoff_ms=0, actor="host-1:12345"))
    producer.close()
    worker.close()

    keys = QueueKeys("q")
    assert mq.redis.object("encoding", keys.job("failed")) == b"listpack"
    assert mq.redis.hget(keys.prefix + "failure:" + mq.run(groups("q")).groups[0].id, "rels") == b"1"
