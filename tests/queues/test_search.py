"""Search finds what each filter names and nothing else, in bounded steps that resume exactly where they stopped."""

from __future__ import annotations

import json
import time

import pytest

from queues import EchoMQ, EmqError, InvalidInput, QueueKeys, moves
from queues.search import FieldFilter, Limits, Query, Search, parse_path, search, search_call
from tests.support.jobs import failed_job


def found(mq: EchoMQ, query: Query, queues: list[str] | None = None, **limits: object) -> list[str]:
    return [m.id for step in search(mq, query, queues or ["q"], limits=Limits(**limits))  # type: ignore[arg-type]
            for m in step.matches]


def keyspace(mq: EchoMQ) -> dict[bytes, bytes]:
    return {key: mq.redis.dump(key) for key in mq.redis.scan_iter(count=1000)}  # type: ignore[misc]


def test_an_id_prefix_finds_the_jobs_whose_id_starts_with_it(any_mq: EchoMQ) -> None:
    for job_id in ("order-1", "order-12", "refund-1", "xorder-1"):
        any_mq.enqueue("q", "{}", job_id=job_id)

    assert sorted(found(any_mq, Query("pending", id_prefix="order-1"))) == ["order-1", "order-12"]
    assert found(any_mq, Query("pending", id_prefix="nothing")) == []


def test_a_payload_substring_is_found_in_text_binary_and_huge_payloads(mq: EchoMQ) -> None:
    mq.enqueue("q", '{"customer": "ACME Corp"}', job_id="text")
    mq.enqueue("q", b"\xff\xfe\x00 ACME \x80", job_id="binary")
    mq.enqueue("q", b"x" * (moves.MAX_PAYLOAD_BYTES - 4) + b"ACME", job_id="huge-at-the-end")
    mq.enqueue("q", "acme in lower case", job_id="other-case")
    mq.enqueue("q", b"\xc3\x28 invalid utf-8", job_id="invalid")

    assert sorted(found(mq, Query("pending", payload="ACME"))) == ["binary", "huge-at-the-end", "text"]
    assert found(mq, Query("pending", payload="\u00c3")) == []  # matched as UTF-8 bytes, not as Latin-1
    assert found(mq, Query("pending", payload="invalid utf-8")) == ["invalid"]


def test_a_match_carries_a_bounded_head_of_its_payload_and_its_length(mq: EchoMQ) -> None:
    mq.enqueue("q", b"ACME" + b"y" * 100_000, job_id="big")

    [step] = list(search(mq, Query("pending", payload="ACME"), ["q"]))

    [match] = step.matches
    assert (match.payload_head, match.payload_length) == (b"ACME" + b"y" * 116, 100_004)
    assert (match.state, match.attempts, match.found_in) == ("pending", "0", "pending")


@pytest.mark.parametrize(("filter_text", "matching"), [
    ("user.id=42", {"number", "string", "float"}),
    ("user.id = 42", {"number", "string", "float"}),
    ('user.id="42"', {"string"}),
    ("user.id=43", set()),
    ("user.name=Ann", {"number"}),
    ("tags[1]=vip", {"number"}),
    ("user.active=true", {"string"}),
    ("user.deleted=null", {"float"}),
    ('"odd.key".v=1', {"odd"}),
    ("big=12345678901234567", {"big"}),
    ("big=12345678901234568", set()),
    ("deep.a.b.c.d=1", {"deep"}),
])
def test_a_json_field_matches_its_value_at_its_path_and_nothing_else(mq: EchoMQ, filter_text: str,
                                                                     matching: set[str]) -> None:
    payloads = {
        "number": {"user": {"id": 42, "name": "Ann"}, "tags": ["a", "vip"]},
        "string": {"user": {"id": "42", "active": True}},
        "float": {"user": {"id": 42.0, "deleted": None}},
        "elsewhere": {"order": {"id": 42}, "user": {"id": 7}},
        "array-not-object": {"user": [42]},
        "odd": {"odd.key": {"v": 1}},
        "big": {"big": 12345678901234567},
        "deep": {"deep": {"a": {"b": {"c": {"d": 1}}}}},
    }
    for job_id, payload in payloads.items():
        mq.enqueue("q", json.dumps(payload), job_id=job_id)
    mq.enqueue("q", b'{"user": {"id": 42', job_id="broken-json")
    mq.enqueue("q", b"\xff\x00 user id 42", job_id="binary")

    assert set(found(mq, Query("pending", field=FieldFilter.parse(filter_text)))) == matching


def test_a_json_key_written_with_escapes_is_still_found(mq: EchoMQ) -> None:
    mq.enqueue("q", '{"us\\u0065r": {"id": 42}}', job_id="escaped")

    assert found(mq, Query("pending", field=FieldFilter.parse("user.id=42"))) == ["escaped"]


def test_payloads_too_large_or_too_deep_to_decode_are_counted_as_unreadable_not_matched(mq: EchoMQ) -> None:
    mq.enqueue("q", json.dumps({"user": {"id": 1}, "pad": "x" * 70_000}), job_id="too-large")
    mq.enqueue("q", '{"user": {"id": 1}, "deep": ' + "[" * 2000 + "]" * 2000 + "}", job_id="too-deep")
    mq.enqueue("q", json.dumps({"user": {"id": 1}}), job_id="fine")
    engine = Search(Query("pending", field=FieldFilter.parse("user.id=1")), ["q"])

    matched = [m.id for step in engine.steps(mq) for m in step.matches]

    assert matched == ["fine"]
    assert engine.progress[0].unreadable == 2
    assert "2 payloads could not be read" in engine.summary()


def test_error_text_is_matched_without_regard_to_ascii_case(mq: EchoMQ) -> None:
    failed_job(mq, "q", "a", "{}", error="Connection TIMEOUT after 3012 ms")
    failed_job(mq, "q", "b", "{}", error="card declined")

    assert found(mq, Query("failed", error="timeout after")) == ["a"]
    assert found(mq, Query("failed", error="declined")) == ["b"]


def test_the_worker_filter_finds_the_jobs_a_worker_claimed(mq: EchoMQ) -> None:
    mq.enqueue("q", "{}", job_id="a")
    EchoMQ(mq.redis, actor="host-7:123").claim("q")
    mq.enqueue("q", "{}", job_id="b")
    EchoMQ(mq.redis, actor="host-8:456").claim("q")

    assert found(mq, Query("active", worker="host-7")) == ["a"]


def test_time_windows_bound_the_enqueue_and_finish_times(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    for n in range(10):
        mq.redis.hset(keys.job(f"j{n}"), mapping={"state": "failed", "attempts": "1", "payload": "{}",
                                                  "created_at": str(1000 + n), "last_error": "x"})
        mq.redis.zadd(keys.failed, {f"j{n}": 5000 + n})

    assert sorted(found(mq, Query("failed", finished_after_ms=5003, finished_before_ms=5005))) == ["j3", "j4", "j5"]
    assert sorted(found(mq, Query("failed", enqueued_after_ms=1008))) == ["j8", "j9"]
    assert sorted(found(mq, Query("failed", enqueued_before_ms=1001, error="x"))) == ["j0", "j1"]


def test_ids_without_a_hash_are_counted_as_missing_and_never_matched(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.enqueue("q", "{}", job_id="real")
    mq.redis.zadd(keys.pending, {"ghost": 1})
    everything = Search(Query("pending", enqueued_after_ms=0), ["q"])

    assert [m.id for step in everything.steps(mq) for m in step.matches] == ["real"]
    assert everything.progress[0].missing == 1


def test_a_search_writes_nothing(mq: EchoMQ) -> None:
    for n in range(50):
        failed_job(mq, "q", f"j{n}", json.dumps({"n": n}), error=f"boom {n}")
    before = keyspace(mq)

    assert len(found(mq, Query("failed", error="boom", field=FieldFilter.parse("n=7")))) == 1
    assert keyspace(mq) == before


@pytest.mark.parametrize("order", ["asc", "desc"])
@pytest.mark.parametrize("entries", [1, 2, 7, 2000])
def test_steps_of_any_size_find_the_same_jobs_in_score_order(mq: EchoMQ, order: str, entries: int) -> None:
    keys = QueueKeys("q")
    ids = [f"j{n:03d}" for n in range(60)]
    for n, job_id in enumerate(ids):
        mq.redis.hset(keys.job(job_id), mapping={"state": "done", "attempts": "1", "payload": f"n={n % 3}"})
        mq.redis.zadd(keys.done, {job_id: 1000 + n // 7})  # runs of equal scores, ordered by id
    expected = [job_id for n, job_id in enumerate(ids) if n % 3 == 1]

    got = found(mq, Query("done", payload="n=1", order=order), step_entries=entries)  # type: ignore[arg-type]

    assert got == (expected if order == "asc" else expected[::-1])


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_a_cursor_whose_job_left_the_set_resumes_at_its_place(mq: EchoMQ, order: str) -> None:
    keys = QueueKeys("q")
    ids = [f"j{n:02d}" for n in range(20)]
    for job_id in ids:
        mq.redis.hset(keys.job(job_id), mapping={"state": "done", "attempts": "1", "payload": "hit"})
        mq.redis.zadd(keys.done, {job_id: 1000})  # one score: only the ids order them
    query = Query("done", payload="hit", order=order)  # type: ignore[arg-type]
    first = mq.run(search_call("q", query, entries=5))
    walked = ids if order == "asc" else ids[::-1]
    assert first.cursor == ("1000", walked[4])
    mq.delete("q", walked[4], expect_state="done")
    mq.delete("q", walked[2], expect_state="done")

    rest = mq.run(search_call("q", query, cursor=first.cursor))

    assert [m.id for m in first.matches] + [m.id for m in rest.matches] == walked
    assert rest.done


def test_a_step_looks_at_no_more_entries_than_its_budget(mq: EchoMQ) -> None:
    mq.enqueue_many("q", ["{}"] * 300)

    # The largest time budget a step takes (100 ms): the bounds tested here are entries and matches, and a
    # machine at load 20 can spend the default 2 ms before a step has looked at 100 entries.
    first = mq.run(search_call("q", Query("pending", payload="nothing"), entries=100, budget_us=100_000))
    capped = mq.run(search_call("q", Query("pending", payload="{}"), matches=10, budget_us=100_000))

    assert (first.looked_at, first.done, first.in_window) == (100, False, 300)
    assert (len(capped.matches), capped.looked_at, capped.done) == (10, 10, False)


def test_a_search_stops_at_its_match_limit(mq: EchoMQ) -> None:
    mq.enqueue_many("q", ["{}"] * 50)
    engine = Search(Query("pending", payload="{}"), ["q"], Limits(max_matches=20, step_matches=7))

    matched = [m.id for step in engine.steps(mq) for m in step.matches]

    assert len(matched) == 20 and engine.stopped == "stopped at 20 matches"


def test_a_job_that_leaves_and_reenters_the_set_while_the_search_runs_is_reported_once(mq: EchoMQ) -> None:
    for n in range(30):
        failed_job(mq, "q", f"j{n:02d}", "{}", error="timeout")
    # A search of done or failed jobs covers those that ended before the millisecond it began.
    time.sleep(0.002)
    engine = Search(Query("failed", error="timeout", order="asc"), ["q"], Limits(step_entries=10))
    first = engine.feed(mq.run(engine.next_call()))
    reported = {m.id: m.attempts for m in first.matches}
    # Between two steps, as a worker would: every job found so far is retried and fails again, so it
    # comes back to the failed set with a newer score, ahead of the cursor.
    for job_id in list(reported):
        mq.retry("q", job_id)
        [job] = [j for j in mq.claim("q", count=100) if j.id == job_id]
        mq.run(moves.fail("q", job.id, job.token, error="timeout again", backoff_ms=0))

    later = [m for step in engine.steps(mq) for m in step.matches]

    assert len(reported) == 10 and {m.id for m in later}.isdisjoint(reported)
    assert len(later) == 20 and reported == dict.fromkeys(reported, "1")


def test_a_search_of_many_queues_reports_each_queue_and_stops_at_the_queue_cap(mq: EchoMQ) -> None:
    for queue in ("a", "b", "c"):
        failed_job(mq, queue, f"{queue}-1", "{}", error="refused")

    engine = Search(Query("failed", error="refused"), ["a", "b", "c"], Limits(max_queues=2))
    matches = [(m.queue, m.id) for step in engine.steps(mq) for m in step.matches]

    assert matches == [("a", "a-1"), ("b", "b-1")]
    assert engine.skipped_queues == 1 and "1 more queues not searched" in engine.summary()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"state": "failed"}, "give at least one filter"),
    ({"state": ""}, "choose a state"),
    ({"state": "lost", "payload": "x"}, "state must be one of"),
    ({"state": "failed", "field": "user..id=1"}, "cannot read field path"),
    ({"state": "failed", "field": "user.id"}, "PATH=VALUE"),
    ({"state": "failed", "field": "user.id="}, "has no value"),
    ({"state": "failed", "field": "[x]=1"}, "cannot read field path"),
    ({"state": "failed", "field": 'user.id="42'}, "does not close"),
    ({"state": "failed", "payload": "/time(out)?.*/"}, "regular expression"),
    ({"state": "failed", "error": "/^card/i"}, "regular expression"),
    ({"state": "failed", "id_prefix": "a b"}, "cannot start any job id"),
    ({"state": "pending", "finished_after": "1h"}, "have not finished"),
    ({"state": "failed", "finished_after": "yesterday"}, "cannot read the time"),
    ({"state": "failed", "finished_after": "2h", "finished_before": "3h"}, "window is empty"),
    ({"state": "failed", "id_prefix": "job*"}, "looks like a pattern"),
    ({"state": "failed", "id_prefix": "^job"}, "looks like a pattern"),
    ({"state": "failed", "id_prefix": "/job-[0-9]+/"}, "regular expression"),
    ({"state": "failed", "worker": "/host-(7|8)/"}, "regular expression"),
    ({"state": "failed", "field": "user.id"}, "PATH=VALUE"),
    ({"state": "failed", "field": "user[x]=1"}, "cannot read field path"),
    ({"state": "failed", "field": ".".join(["a"] * 33) + "=1"}, "at most 32 parts"),
    ({"state": "failed", "payload": "x" * 257}, "at most 256 bytes"),
        ({"state": "failed", "field": "user.name=" + "x" * 257}, "at most 256 bytes"),
        ({"state": "failed", "error": "x" * 257}, "at most 256 bytes"),
    ({"state": "failed", "payload": "\ud800"}, "not text"),
])
def test_bad_filters_are_refused_with_a_reason(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        Query.parse(now_ms=10**12, **kwargs)


def test_a_slash_delimited_text_without_regex_signs_is_plain_text() -> None:
    assert Query.parse(state="failed", payload="/api/v1/").payload == "/api/v1/"


def test_paths_read_dots_indexes_and_quoted_keys() -> None:
    assert parse_path('orders[2]."sku.code".x') == ("orders", 2, "sku.code", "x")


def test_a_query_survives_its_round_trip_through_plain_values() -> None:
    query = Query.parse(state="failed", payload="ACME", field="user.id=42", error="timeout", finished_after="1h",
                        now_ms=10**12)

    assert Query.from_dict(json.loads(json.dumps(query.as_dict()))) == query
    assert query.describe().startswith("failed jobs whose payload contains 'ACME' and payload field user.id = 42")


def test_a_pending_job_that_fails_and_comes_back_while_the_search_runs_is_reported_once(mq: EchoMQ) -> None:
    mq.enqueue_many("q", ['{"customer": 42}'] * 30, max_attempts=5)
    engine = Search(Query("pending", payload="customer"), ["q"], Limits(step_entries=10))
    first = engine.feed(mq.run(engine.next_call()))
    # As workers would between two steps: the jobs found so far are claimed and fail, and come back
    # to pending due now, which is ahead of the cursor in a due-time order.
    claimed = mq.claim("q", count=10)
    assert {j.id for j in claimed} == {m.id for m in first.matches}
    mq.run_many([moves.fail("q", j.id, j.token, error="again", backoff_ms=0) for j in claimed])

    later = [m for step in engine.steps(mq) for m in step.matches]

    assert len({m.id for m in first.matches} | {m.id for m in later}) == 30 and len(later) == 20
    assert all(m.attempts == "0" for m in first.matches + later)


def test_matches_past_the_detail_limit_carry_only_what_a_move_needs(mq: EchoMQ) -> None:
    mq.enqueue_many("q", ['{"customer": 42}'] * 5)

    matches = [m for step in search(mq, Query("pending", payload="customer"), ["q"], limits=Limits(detail=2))
               for m in step.matches]

    assert [m.payload_head for m in matches] == [b'{"customer": 42}'] * 2 + [b""] * 3
    assert all((m.state, m.attempts) == ("pending", "0") for m in matches)


def test_odd_keys_are_counted_and_passed_over_never_read_whole(mq: EchoMQ) -> None:
    keys = QueueKeys("q")
    mq.enqueue("q", "ACME", job_id="fine")
    mq.redis.hset(keys.job("huge"), mapping={"state": "pending", "attempts": "0", "payload": b"ACME" * 300_000})
    mq.redis.zadd(keys.pending, {"huge": 1})
    mq.redis.set(keys.job("string"), "ACME")
    mq.redis.zadd(keys.pending, {"string": 2})
    engine = Search(Query("pending", payload="ACME"), ["q"])

    assert [m.id for step in engine.steps(mq) for m in step.matches] == ["fine"]
    assert (engine.progress[0].unreadable, engine.progress[0].missing) == (1, 1)


def test_a_state_key_of_another_type_is_refused_in_words(mq: EchoMQ) -> None:
    mq.redis.set(QueueKeys("q").failed, "oops")

    with pytest.raises(EmqError, match="is a string, not a sorted set"):
        list(search(mq, Query("failed", error="x"), ["q"]))


def test_error_text_is_found_in_binary_and_invalid_utf8_errors_and_a_foreign_huge_one_is_not_read(
        mq: EchoMQ) -> None:
    failed_job(mq, "q", "binary", "{}", error="\udcff\udcfe\x00 Timeout reading \udc80 socket")
    failed_job(mq, "q", "long", "{}", error="x" * 4000 + " timeout at the end")
    failed_job(mq, "q", "other", "{}", error="card declined")
    keys = QueueKeys("q")
    # No move writes an error this long (they cut at 4096 bytes): another runtime's, passed over unread.
    mq.redis.hset(keys.job("foreign"), mapping={"state": "failed", "attempts": "1", "payload": "{}",
                                               "last_error": "timeout " + "y" * 100_000})
    mq.redis.zadd(keys.failed, {"foreign": 1})

    assert sorted(found(mq, Query("failed", error="timeout"))) == ["binary", "long"]
    assert found(mq, Query("failed", error="\udc80 socket".encode(errors="surrogateescape").decode(
        errors="surrogateescape"))) == ["binary"]


def test_the_worker_filter_matches_worker_names_byte_for_byte_whatever_they_hold(mq: EchoMQ) -> None:
    for job_id, worker in (("a", "hôte-7:123"), ("b", "host\u202e-8:456"), ("c", "host-9:789")):
        mq.enqueue("q", "{}", job_id=job_id)
        EchoMQ(mq.redis, actor=worker).claim("q")

    assert found(mq, Query("active", worker="hôte")) == ["a"]
    assert found(mq, Query("active", worker="\u202e-8")) == ["b"]
    assert found(mq, Query("active", worker="HOST")) == []  # case-sensitive, as names are


def test_an_id_prefix_matches_ids_byte_for_byte_including_ones_outside_ascii(mq: EchoMQ) -> None:
    for job_id in ("ordér-1", "order-1", "ордер-1", "ordé"):
        mq.enqueue("q", "{}", job_id=job_id)

    assert sorted(found(mq, Query("pending", id_prefix="ordé"))) == ["ordé", "ordér-1"]
    assert found(mq, Query("pending", id_prefix="орд")) == ["ордер-1"]


def test_a_json_field_is_found_in_nested_arrays_and_beside_invalid_utf8_and_never_in_a_huge_payload(
        mq: EchoMQ) -> None:
    mq.enqueue("q", json.dumps({"order": {"items": [{"sku": "A-1"}, {"sku": "B-2", "tags": [["x", "deep"]]}]}}),
               job_id="nested")
    mq.enqueue("q", b'{"order": {"items": [{"sku": "B-2"}]}, "note": "\xff\xfe"}', job_id="invalid-utf8")
    mq.enqueue("q", json.dumps({"order": {"items": [{"sku": "B-2"}]}, "pad": "z" * (moves.MAX_PAYLOAD_BYTES - 100)}),
               job_id="huge")
    mq.enqueue("q", b"\x00\x01B-2 sku items order", job_id="binary")
    engine = Search(Query("pending", field=FieldFilter.parse('order.items[1].sku="B-2"')), ["q"])

    assert [m.id for step in engine.steps(mq) for m in step.matches] == ["nested"]
    assert found(mq, Query("pending", field=FieldFilter.parse("order.items[1].tags[0][1]=deep"))) == ["nested"]
    assert sorted(found(mq, Query("pending", field=FieldFilter.parse("order.items[0].sku=B-2")))) == [
        "invalid-utf8"]
    assert engine.progress[0].unreadable >= 1  # the huge one is counted, not decoded


def test_a_payload_substring_is_found_inside_nested_json_as_written(mq: EchoMQ) -> None:
    mq.enqueue("q", json.dumps({"a": {"b": [{"c": "customer 42 paid"}]}}), job_id="nested")
    mq.enqueue("q", '{"a": {"b": [{"c": "customer \\u0034\\u0032"}]}}', job_id="escaped")

    assert found(mq, Query("pending", payload="customer 42")) == ["nested"]  # bytes as stored: no JSON decoding
