"""finish_claim: the held jobs' outcomes and the next claim in one script, as complete/fail then claim."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis

from queues import AsyncEchoMQ, EchoMQ, InvalidInput, NothingToClaim, Paused, QueueKeys, Refused, moves
from queues.failures import groups
from queues.keys import LEASE_INDEX
from queues.moves import Call, FencingToken, Report
from tests.support.keyspace import keyspace_dump
from tests.support.waiting import wait_until


def _finish_claim(mq: EchoMQ, queue: str, reports: list[Report], count: int = 1) -> moves.FinishedAndClaimed:
    return mq.run(moves.finish_claim(queue, reports, count=count, backoff_ms=0, actor="w"))


def test_it_completes_the_held_job_and_claims_the_next_in_one_call(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "first", job_id="a")
    any_mq.enqueue("q", "second", job_id="b")
    [held] = any_mq.claim("q")

    result = _finish_claim(any_mq, "q", [Report("a", held.token)])

    assert isinstance(result.finished[0], int)
    assert isinstance(result.claimed, list)
    [nxt] = result.claimed
    assert (nxt.id, nxt.attempts, nxt.payload) == ("b", 1, b"second")
    assert any_mq.job("q", "a").state == "done"
    assert any_mq.job("q", "b").state == "active"
    # The claim id the call chose fences the new job like a claim's.
    assert any_mq.run(moves.complete("q", "b", nxt.token)) > 0


def test_a_batch_finishes_each_job_on_its_own_and_claims_as_many(mq: EchoMQ) -> None:
    mq.enqueue_many("q", [f"p{n}" for n in range(6)])
    held = mq.claim("q", count=3)
    mq.cancel("q", held[1].id, expect_state="active")

    result = _finish_claim(mq, "q", [Report(held[0].id, held[0].token),
                                     Report(held[1].id, held[1].token),
                                     Report(held[2].id, held[2].token, "fail", "boom")], count=3)

    assert isinstance(result.finished[0], int)
    assert isinstance(result.finished[1], Refused) and result.finished[1].reason == "state"
    assert result.finished[1].move == "complete"
    assert result.finished[2] == "pending"
    assert isinstance(result.claimed, list) and len(result.claimed) == 3
    assert [mq.job("q", j.id).state for j in held] == ["done", "failed", "pending"]
    assert mq.stats("q").counts == {"pending": 1, "active": 3, "done": 1, "failed": 1}


@pytest.mark.parametrize("stale", ["attempts", "claim id"])
def test_a_stale_token_is_refused_and_nothing_is_written(mq: EchoMQ, stale: str) -> None:
    mq.enqueue("q", "x", job_id="a")
    [first] = mq.claim("q")
    if stale == "attempts":
        mq.redis.zadd(QueueKeys("q").active, {"a": 1})
        mq.recover("q", "a", expect_state="active")
        [_second] = mq.claim("q")
        token = first.token
    else:
        token = FencingToken(first.attempts, "ffff")
    before = keyspace_dump(mq.redis)  # type: ignore[arg-type]

    result = _finish_claim(mq, "q", [Report("a", token, "fail", "late")])

    [refusal] = result.finished
    assert isinstance(refusal, Refused) and refusal.reason == "token" and refusal.move == "fail"
    assert isinstance(result.claimed, NothingToClaim)
    assert keyspace_dump(mq.redis) == before  # type: ignore[arg-type]


def test_a_paused_queue_takes_the_reports_and_claims_nothing(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    mq.enqueue("q", "y", job_id="b")
    [held] = mq.claim("q")
    mq.pause("q", reason="deploy")
    waiting = mq.redis.dump(QueueKeys("q").job("b"))

    result = _finish_claim(mq, "q", [Report("a", held.token)])

    assert isinstance(result.finished[0], int)
    assert isinstance(result.claimed, Paused) and "deploy" in str(result.claimed)
    assert mq.job("q", "a").state == "done"
    assert mq.redis.dump(QueueKeys("q").job("b")) == waiting
    assert mq.stats("q").counts == {"pending": 1, "active": 0, "done": 1, "failed": 0}


def test_a_paused_queue_with_every_report_refused_is_left_exactly_as_it_was(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    mq.enqueue("q", "y", job_id="b")
    [held] = mq.claim("q")
    mq.pause("q")
    before = keyspace_dump(mq.redis)  # type: ignore[arg-type]

    result = _finish_claim(mq, "q", [Report("a", FencingToken(held.attempts, "ffff"))])

    assert isinstance(result.finished[0], Refused) and isinstance(result.claimed, Paused)
    assert keyspace_dump(mq.redis) == before  # type: ignore[arg-type]


@pytest.mark.parametrize("args", [
    ["w", 30_000, "ab", 1, 0, "a", 1, "", "finish", ""],
    ["w", 30_000, "ab", 1, 0, "a", 1, "", "complete", "", "a", 1, "", "fail", "e"],
    ["w", 30_000, "ab", 1, 0, "a", "one", "", "complete", ""],
    ["w", 30_000, "ab", 1, 0, "a", 1, ""],
    ["w", 30_000, "AB", 1, 0],
    ["w", 30_000, "ab", 0, 0],
    ["w", 30_000, "ab", 1, -1],
])
def test_bad_arguments_are_an_error_and_nothing_is_written(mq: EchoMQ, args: list[Any]) -> None:
    mq.enqueue("q", "x", job_id="a")
    mq.enqueue("q", "y", job_id="b")
    mq.claim("q")
    before = keyspace_dump(mq.redis)  # type: ignore[arg-type]

    with pytest.raises(InvalidInput):
        mq.run(Call("finish_claim", QueueKeys("q").script_keys(None), args, lambda r: r))

    assert keyspace_dump(mq.redis) == before  # type: ignore[arg-type]


def test_the_client_refuses_a_job_reported_twice_or_an_unknown_outcome() -> None:
    with pytest.raises(InvalidInput, match="twice"):
        moves.finish_claim("q", [Report("a", "1.ab"), Report("a", "1.ab")])
    with pytest.raises(InvalidInput, match="outcome"):
        moves.finish_claim("q", [Report("a", "1.ab", "done")])


def _claim(mq: EchoMQ, queue: str) -> list[moves.ClaimedJob]:
    return mq.run(moves.claim(queue, worker="w"))


def _steps_apart(mq: EchoMQ, queue: str) -> None:
    """complete, fail to failed, fail to pending, complete: each report its own script, then a claim."""
    [j1] = _claim(mq, queue)
    mq.run(moves.complete(queue, j1.id, j1.token, actor="w"))
    [j2] = _claim(mq, queue)
    mq.run(moves.fail(queue, j2.id, j2.token, error="timeout after 3012 ms", backoff_ms=0, actor="w"))
    [j3] = _claim(mq, queue)
    mq.run(moves.fail(queue, j3.id, j3.token, error="flaky", backoff_ms=0, actor="w"))
    [again] = _claim(mq, queue)
    mq.run(moves.complete(queue, again.id, again.token, actor="w"))
    with pytest.raises(NothingToClaim):
        _claim(mq, queue)


def _steps_joined(mq: EchoMQ, queue: str) -> None:
    """The same outcomes, each report joined with the next claim."""
    [held] = _claim(mq, queue)
    steps = [("complete", ""), ("fail", "timeout after 3012 ms"), ("fail", "flaky"), ("complete", "")]
    for n, (outcome, error) in enumerate(steps):
        result = _finish_claim(mq, queue, [Report(held.id, held.token, outcome, error)])
        assert not isinstance(result.finished[0], Refused)
        if n == len(steps) - 1:
            assert isinstance(result.claimed, NothingToClaim)
        else:
            assert isinstance(result.claimed, list)
            [held] = result.claimed


def _what_the_moves_left(mq: EchoMQ, queue: str) -> dict[str, Any]:
    """Everything the moves wrote, without the times and claim ids (which differ between two runs)."""
    client: redis.Redis = mq.redis  # type: ignore[assignment]
    keys = QueueKeys(queue)
    timed = {b"created_at", b"claimed_at", b"finished_at", b"claim_id", b"history"}
    jobs = {}
    for job_id in ("j1", "j2", "j3"):
        fields = {k: v for k, v in client.hgetall(keys.job(job_id)).items() if k not in timed}
        history = [(e.move, e.source, e.target, e.attempts, e.actor, e.error) for e in mq.job_events(queue, job_id)]
        jobs[job_id] = (fields, history)
    events = [(e.move, e.job_id, e.source, e.target, e.attempts, e.actor) for e in reversed(mq.events(queue))]
    counts = {k.decode(): int(v) for k, v in client.hgetall(keys.counts).items()}
    # Durations land in buckets by how long each step took: compare how many were counted, not where.
    durations = {kind: sum(v for k, v in counts.items() if k.startswith(kind + ":") and k != kind + ":sum")
                 for kind in ("wait", "run")}
    moved = {k: v for k, v in counts.items() if not k.startswith(("wait:", "run:"))}
    series: dict[str, int] = {}
    for key in client.scan_iter(match=keys.prefix + "m:*"):
        for field, value in client.hgetall(key).items():
            # Waits and runs land in latency buckets by how long each step took: count them per kind.
            name = field[:1].decode() if field[:1] in (b"w", b"W", b"R") else field.decode()
            series[name] = series.get(name, 0) + int(value)
    failure_groups = [(g.signature, g.count) for g in mq.run(groups(queue)).groups]
    return {"jobs": jobs, "events": events, "moved": moved, "durations": durations, "series": series,
            "groups": failure_groups, "sets": mq.stats(queue).counts}


def test_history_counters_events_and_groups_are_those_of_complete_then_claim(mq: EchoMQ) -> None:
    for queue in ("apart", "joined"):
        mq.enqueue(queue, "one", job_id="j1")
        mq.enqueue(queue, "two", job_id="j2", max_attempts=1)
        mq.enqueue(queue, "three", job_id="j3")

    _steps_apart(mq, "apart")
    _steps_joined(mq, "joined")

    apart, joined = _what_the_moves_left(mq, "apart"), _what_the_moves_left(mq, "joined")
    assert joined == apart
    assert apart["sets"] == {"pending": 0, "active": 0, "done": 2, "failed": 1}
    assert [move for move, *_ in apart["events"]].count("claim") == 4


def test_the_jobs_it_claims_are_noted_in_the_lease_index_as_a_claims_are(mq: EchoMQ, redis_url: str) -> None:
    mq.enqueue_many("q", ["a", "b", "c"])
    [held] = mq.claim("q", lease_ms=60_000)
    mq.redis.delete(LEASE_INDEX)

    result = mq.run(moves.finish_claim("q", [Report(held.id, held.token)], lease_ms=5_000, actor="w"))
    assert isinstance(result.claimed, list)
    wait_until(lambda: mq.redis.zscore(LEASE_INDEX, "q") is not None, 10, "the sync client's note")
    assert mq.redis.zscore(LEASE_INDEX, "q") == result.claimed[0].lease_deadline_ms

    async def through_the_async_client(job: moves.ClaimedJob) -> moves.FinishedAndClaimed:
        client = AsyncEchoMQ.from_url(redis_url, actor="w")
        try:
            [joined] = await client.run_many([moves.finish_claim("q", [Report(job.id, job.token)], lease_ms=1_000)])
            return joined  # type: ignore[no-any-return]
        finally:
            await client.close()

    mq.redis.delete(LEASE_INDEX)
    joined = asyncio.run(through_the_async_client(result.claimed[0]))
    assert isinstance(joined.claimed, list)
    wait_until(lambda: mq.redis.zscore(LEASE_INDEX, "q") is not None, 10, "the async client's note")
    assert mq.redis.zscore(LEASE_INDEX, "q") == joined.claimed[0].lease_deadline_ms
