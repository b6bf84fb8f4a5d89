"""The lease index: every claim path notes its deadline, the sweeper's scripts settle it, bad input changes nothing."""

from __future__ import annotations

import asyncio
import time

import pytest

from queues import AsyncEchoMQ, EchoMQ, InvalidInput, NothingToClaim, lease_index, moves
from queues.keys import LEASE_INDEX
from queues.lease_index import shard_of
from tests.support.keyspace import keyspace_dump
from tests.support.waiting import wait_until


def _score(mq: EchoMQ, queue: str) -> float | None:
    return mq.redis.zscore(shard_of(mq.redis, queue).index_key, queue)


def test_a_claim_lowers_its_queues_score_to_the_lease_deadline_and_a_later_one_never_raises_it(any_mq: EchoMQ) -> None:
    any_mq.enqueue_many("mail", ["a", "b"])
    first = any_mq.claim("mail", lease_ms=10_000)[0]
    any_mq.claim("mail", lease_ms=60_000)

    assert _score(any_mq, "mail") == first.lease_deadline_ms


def test_a_claim_that_claims_nothing_writes_no_score(mq: EchoMQ) -> None:
    mq.enqueue("mail", "later", delay_ms=60_000)

    with pytest.raises(NothingToClaim):
        mq.claim("mail")

    assert mq.redis.exists(LEASE_INDEX) == 0


def _claim_sync_run_many(mq: EchoMQ, redis_url: str) -> int:
    [jobs] = mq.run_many([moves.claim("mail", lease_ms=5_000)])
    return jobs[0].lease_deadline_ms


def _claim_async(run_many: bool, blocking: bool) -> object:
    def claim(mq: EchoMQ, redis_url: str) -> int:
        async def go() -> int:
            client = AsyncEchoMQ.from_url(redis_url, actor="w")
            try:
                call = moves.claim("mail", lease_ms=5_000)
                if blocking:
                    runner = client.blocking_runner()
                    assert runner is not None
                    [jobs] = await asyncio.to_thread(runner.run_many, [call])
                    runner.close()
                elif run_many:
                    [jobs] = await client.run_many([call])
                else:
                    jobs = await client.run(call)
                return jobs[0].lease_deadline_ms
            finally:
                await client.close()
        return asyncio.run(go())
    return claim


@pytest.mark.parametrize("claim", [_claim_sync_run_many, _claim_async(False, False), _claim_async(True, False),
                                   _claim_async(False, True)],
                         ids=["sync run_many", "async run", "async run_many", "blocking runner"])
def test_every_way_a_worker_claims_notes_the_deadline(mq: EchoMQ, redis_url: str, claim: object) -> None:
    mq.enqueue("mail", "x")

    deadline = claim(mq, redis_url)  # type: ignore[operator]

    # The workers' paths send the note without waiting for its reply.
    wait_until(lambda: _score(mq, "mail") is not None, 10, "the claim's note in the lease index")
    assert _score(mq, "mail") == deadline


def test_settle_sets_the_next_deadline_or_removes_a_queue_unless_a_claim_lowered_it_meanwhile(mq: EchoMQ) -> None:
    mq.redis.zadd(LEASE_INDEX, {"idle": 1, "busy": 2, "claimed": 3})
    due = mq.run(lease_index.take_due(limit=10))
    assert due.names == ["idle", "busy", "claimed"]
    assert {_score(mq, q) for q in due.names} == {due.mark}
    # A claimer's note between the take and the settle: it must survive.
    mq.redis.execute_command(*lease_index.hint_command("claimed", due.now_ms + 50))

    assert mq.run(lease_index.settle(due.mark, {"idle": 0, "busy": due.now_ms + 900, "claimed": 0})) == (1, 1, 1)

    assert _score(mq, "idle") is None
    assert _score(mq, "busy") == due.now_ms + 900
    assert _score(mq, "claimed") == due.now_ms + 50


def test_take_due_leaves_queues_whose_score_is_ahead(mq: EchoMQ) -> None:
    ahead = int(time.time() * 1000) + 3_600_000
    mq.redis.zadd(LEASE_INDEX, {"later": ahead})

    assert mq.run(lease_index.take_due()).names == []
    assert _score(mq, "later") == ahead


@pytest.mark.parametrize("call", [
    lambda: moves.Call("lease_index_take", [LEASE_INDEX], [0, 1000], lambda r: r),
    lambda: moves.Call("lease_index_take", [LEASE_INDEX], [10, "1e3"], lambda r: r),
    lambda: moves.Call("lease_index_settle", [LEASE_INDEX], [5, "q"], lambda r: r),
    lambda: moves.Call("lease_index_settle", [LEASE_INDEX], [5, "q", 7, "r", -1], lambda r: r),
    lambda: moves.Call("lease_index_settle", [LEASE_INDEX], ["x", "q", 7], lambda r: r),
], ids=["limit 0", "look_again not digits", "odd pairs", "negative next", "bad mark"])
def test_the_index_scripts_refuse_bad_arguments_and_change_nothing(mq: EchoMQ, call: object) -> None:
    mq.redis.zadd(LEASE_INDEX, {"q": 5, "r": 1})
    before = keyspace_dump(mq.redis)

    with pytest.raises(InvalidInput):
        mq.run(call())  # type: ignore[operator]

    assert keyspace_dump(mq.redis) == before


def test_the_index_scripts_refuse_an_index_of_another_type_and_change_nothing(mq: EchoMQ) -> None:
    mq.redis.set(LEASE_INDEX, "not a sorted set")
    before = keyspace_dump(mq.redis)

    for call in (lease_index.take_due(), lease_index.settle(5, {"q": 0})):
        with pytest.raises(Exception, match="wrongtype|string"):
            mq.run(call)

    assert keyspace_dump(mq.redis) == before


def test_a_claim_stands_when_the_index_cannot_be_written(mq: EchoMQ) -> None:
    mq.redis.set(LEASE_INDEX, "not a sorted set")
    mq.enqueue("mail", "x")

    [job] = mq.claim("mail")

    assert mq.job("mail", job.id).state == "active"
    assert isinstance(mq.redis.get(LEASE_INDEX), bytes)
