from __future__ import annotations

import asyncio
import concurrent.futures

import pytest
import redis

from queues import AsyncEchoMQ, EchoMQ, InvalidInput, Unavailable, moves
from queues.client import BlockingRunner
from queues.connection import connect_async
from queues.keys import LEASE_INDEX, QueueKeys
from queues.moves import Call
from queues.wire import wire_options
from tests.support.redis_servers import RedisClusterNodes
from tests.support.waiting import wait_until


def _enqueues(queue: str, ids: list[str]) -> list[Call[str]]:
    return [moves.enqueue(queue, f"payload of {job_id}", job_id=job_id) for job_id in ids]


async def test_concurrent_callers_pipeline_on_one_connection_and_each_gets_its_own_replies(
        mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    batches = [[f"b{b}-j{j}" for j in range(b % 4 + 1)] for b in range(40)]
    results = await asyncio.gather(*(client.run_many(_enqueues("mail", ids)) for ids in batches))
    wires = {id(opening.result()) for opening in client._wires.values()}
    await client.close()

    assert results == batches
    assert len(wires) == 1
    assert {job_id: mq.job("mail", job_id).payload.decode() for ids in batches for job_id in ids} == {
        job_id: f"payload of {job_id}" for ids in batches for job_id in ids}


async def test_an_error_reply_stays_in_its_place_between_calls_that_succeed(mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    bad_lease = Call("claim", QueueKeys("mail").script_keys(None), [0, "claim-id", "w1", 1], lambda reply: reply)
    first, refused, last = await client.run_many([*_enqueues("mail", ["a"]), bad_lease, *_enqueues("mail", ["b"])])
    await client.close()

    assert (first, last) == ("a", "b")
    assert isinstance(refused, InvalidInput) and "lease_ms must be an integer in 1..86400000" in str(refused)
    assert mq.stats("mail").counts["pending"] == 2


async def test_a_cancelled_caller_does_not_shift_the_replies_of_the_next_one(mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    await client.run_many(_enqueues("mail", ["warm"]))
    cancelled = asyncio.create_task(client.run_many(_enqueues("mail", ["c1", "c2", "c3"])))
    await asyncio.sleep(0)
    cancelled.cancel()
    after = await client.run_many(_enqueues("mail", ["n1", "n2"]))
    await client.close()

    assert cancelled.cancelled()
    assert after == ["n1", "n2"]
    assert mq.stats("mail").counts["pending"] == 6


async def test_a_reply_later_than_the_socket_timeout_is_unavailable_and_the_connection_is_replaced(
        mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ(connect_async(redis_url, socket_timeout=0.2), actor="w1")
    await client.run_many(_enqueues("mail", ["warm"]))
    # Paused far longer than the timeout and unpaused by hand: on a loaded
    # machine a short pause could end before the call even reaches Redis.
    mq.redis.execute_command("CLIENT", "PAUSE", 30_000, "WRITE")
    try:
        with pytest.raises(Unavailable, match="no reply from redis within 0.2 s"):
            await client.run_many(_enqueues("mail", ["late"]))
    finally:
        mq.redis.execute_command("CLIENT", "UNPAUSE")
    after = await client.run_many(_enqueues("mail", ["next"]))
    await client.close()

    assert after == ["next"]
    assert mq.job("mail", "next").state == "pending"


async def test_a_killed_connection_fails_its_waiting_callers_and_the_next_call_reconnects(
        mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    await client.run_many(_enqueues("mail", ["warm"]))
    mq.redis.execute_command("CLIENT", "PAUSE", 30_000, "WRITE")
    try:
        waiting = asyncio.create_task(client.run_many(_enqueues("mail", ["cut"])))
        await asyncio.sleep(0.1)
        mq.redis.client_kill_filter(_type="normal", skipme=True)
        with pytest.raises(Unavailable, match="connection to redis lost"):
            await waiting
    finally:
        mq.redis.execute_command("CLIENT", "UNPAUSE")
    after = await client.run_many(_enqueues("mail", ["again"]))
    await client.close()

    assert after == ["again"]


async def test_a_claims_lease_note_is_written_and_leaves_the_next_callers_replies_in_place(
        mq: EchoMQ, redis_url: str) -> None:
    mq.enqueue_many("mail", ["a", "b"])
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    [claimed] = await client.run_many([moves.claim("mail", lease_ms=5_000)])
    # Sent at once after the note, before its reply is read: the note's reply must not land on this call.
    after = await client.run_many(_enqueues("mail", ["next"]))
    await client.close()

    assert after == ["next"]
    assert mq.redis.zscore(LEASE_INDEX, "mail") == claimed[0].lease_deadline_ms


async def test_a_lease_note_redis_refuses_is_logged_and_the_claim_and_the_next_call_stand(
        mq: EchoMQ, redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    mq.redis.set(LEASE_INDEX, "not a sorted set")
    mq.enqueue("mail", "x")
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    [claimed] = await client.run_many([moves.claim("mail")])
    after = await client.run_many(_enqueues("mail", ["next"]))
    await client.close()

    assert mq.job("mail", claimed[0].id).state == "active"
    assert after == ["next"]
    assert "could not note a claim's lease deadline in the lease index" in caplog.text
    assert "WRONGTYPE" in caplog.text


async def test_the_urls_database_is_selected_on_the_lean_connection(mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url.rsplit("/", 1)[0] + "/3", actor="w1")
    assert await client.run_many(_enqueues("mail", ["in-db-3"])) == ["in-db-3"]
    await client.close()
    in_three = EchoMQ.from_url(redis_url.rsplit("/", 1)[0] + "/3")

    assert in_three.job("mail", "in-db-3").state == "pending"
    assert mq.redis.exists(QueueKeys("mail").job("in-db-3")) == 0
    in_three.redis.flushdb()
    in_three.close()


async def test_a_single_async_call_goes_on_the_lean_connection_runs_after_script_flush_and_registers_its_queue(
        mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")
    try:
        first = await client.enqueue("lone-async", "a")
        assert list(client._wires) != []  # the call opened this loop's lean connection
        mq.redis.script_flush()
        # Not cached any more: the wire's EVALSHA is refused, and the call is sent again with its source.
        second = await client.enqueue("lone-async", "b")
        with pytest.raises(moves.Duplicate):
            await client.enqueue("lone-async", "c", job_id=second)
    finally:
        await client.close()

    assert [mq.job("lone-async", job_id).state for job_id in (first, second)] == ["pending", "pending"]
    assert mq.redis.sismember("emq:queues", "lone-async")


async def test_clients_the_lean_connection_cannot_serve_use_redis_pys_own(mq: EchoMQ, redis_url: str) -> None:
    decoding = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
    client = AsyncEchoMQ(decoding, actor="w1")
    result = await client.run_many(_enqueues("mail", ["decoded"]))
    await client.close()

    assert wire_options(decoding.connection_pool.connection_class, decoding.connection_pool.connection_kwargs) is None
    assert wire_options(redis.asyncio.SSLConnection, {"host": "h", "port": 1}) is None
    assert result == ["decoded"] and client._wires == {}


async def test_run_many_on_a_cluster_pipelines_per_node_and_resends_redirected_and_uncached_calls_alone(
        redis_cluster: RedisClusterNodes) -> None:
    cluster = redis_cluster
    for server in cluster.servers:
        try:
            server.client().flushall()
        except redis.exceptions.ReadOnlyError:
            pass
    client = AsyncEchoMQ.from_url(cluster.url, actor="w1")
    queues = [f"q{n}" for n in range(12)]
    calls = [moves.enqueue(q, "x", job_id=f"{q}-{n}") for n in range(3) for q in queues]
    assert await client.run_many(calls) == [f"{q}-{n}" for n in range(3) for q in queues]
    nodes = {client.redis.get_node_from_key(QueueKeys(q).pending).name for q in queues}  # type: ignore[union-attr]
    assert len(nodes) > 1 and {where for _, where in client._wires} == nodes

    # A stale slot map sends a queue's calls to a node that answers MOVED; every
    # node forgot the scripts, so the others answer NOSCRIPT: none of them ran.
    moved = queues[0]
    slot = client.redis.keyslot(QueueKeys(moved).pending)  # type: ignore[union-attr]
    owner = client.redis.nodes_manager.slots_cache[slot][0]  # type: ignore[union-attr]
    stranger = next(n for n in client.redis.get_primaries() if n.name != owner.name)  # type: ignore[union-attr]
    client.redis.nodes_manager.slots_cache[slot] = [stranger]  # type: ignore[union-attr]
    for server in cluster.servers:
        server.client().script_flush()
    claims = await client.run_many([moves.claim(q, worker="w1", count=3) for q in queues])
    await client.close()

    assert [sorted(j.id for j in jobs) for jobs in claims] == [[f"{q}-{n}" for n in range(3)] for q in queues]
    assert {j.attempts for jobs in claims for j in jobs} == {1}
    checker = EchoMQ.from_url(cluster.url)
    assert [checker.stats(q).counts["active"] for q in queues] == [3] * len(queues)
    checker.close()


def test_a_client_shared_by_two_event_loops_keeps_one_connection_for_each(mq: EchoMQ, redis_url: str) -> None:
    client = AsyncEchoMQ.from_url(redis_url, actor="w1")

    async def enqueue(ids: list[str]) -> list[str]:
        return await client.run_many(_enqueues("mail", ids))

    # Connections an earlier test left for the garbage collector to close are not this client's.
    earlier = {c["id"] for c in mq.redis.client_list()}

    def connections() -> int:
        return sum(1 for c in mq.redis.client_list()
                   if c["id"] not in earlier and c["name"] == "" and c["cmd"] == "evalsha")

    with asyncio.Runner() as one, asyncio.Runner() as two:
        results = [runner.run(enqueue([f"{n}-{i}"])) for i in range(5) for n, runner in (("one", one), ("two", two))]
        opened = connections()
        one.run(client.close())

    assert results == [[f"{n}-{i}"] for i in range(5) for n in ("one", "two")]
    assert opened == 2


def _blocking_runner(redis_url: str) -> BlockingRunner:
    async def make() -> BlockingRunner | None:
        client = AsyncEchoMQ.from_url(redis_url, actor="w1")
        made = client.blocking_runner()
        await client.close()
        return made

    runner = asyncio.run(make())
    assert runner is not None
    return runner


def test_a_blocking_runner_fails_a_connection_killed_mid_call_as_unavailable_and_the_next_call_reconnects(
        mq: EchoMQ, redis_url: str) -> None:
    blocking = _blocking_runner(redis_url)
    assert blocking.run_many(_enqueues("mail", ["a", "b"])) == ["a", "b"]
    mq.redis.execute_command("CLIENT", "PAUSE", 30_000, "WRITE")
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(blocking.run_many, _enqueues("mail", ["cut"]))
            wait_until(lambda: mq.redis.info("clients")["blocked_clients"] == 1, 30, "the call waits behind the pause")
            mq.redis.client_kill_filter(_type="normal", skipme=True)
            with pytest.raises(Unavailable, match="connection to redis lost"):
                waiting.result(timeout=30)
    finally:
        mq.redis.execute_command("CLIENT", "UNPAUSE")
    assert blocking.run_many(_enqueues("mail", ["d"])) == ["d"]
    blocking.close()

    # The server closed the connection while "cut" waited behind the pause: it never ran.
    assert mq.stats("mail").counts["pending"] == 3


def test_a_blocking_runner_replaces_an_idle_connection_the_server_closed_before_sending_on_it(
        mq: EchoMQ, redis_url: str) -> None:
    blocking = _blocking_runner(redis_url)
    assert blocking.run_many(_enqueues("mail", ["a", "b"])) == ["a", "b"]
    mq.redis.client_kill_filter(_type="normal", skipme=True)
    wait_until(lambda: len(mq.redis.client_list()) == 1, 30, "the killed connections are gone")

    assert blocking.run_many(_enqueues("mail", ["c"])) == ["c"]
    blocking.close()
    assert [mq.job("mail", job_id).payload.decode() for job_id in ("a", "b", "c")] == [
        "payload of a", "payload of b", "payload of c"]


def test_a_blocking_runner_runs_a_script_flushed_from_the_cache(mq: EchoMQ, redis_url: str) -> None:
    blocking = _blocking_runner(redis_url)
    assert blocking.run_many(_enqueues("mail", ["a"])) == ["a"]
    mq.redis.script_flush()
    assert blocking.run_many(_enqueues("mail", ["b", "c"])) == ["b", "c"]
    blocking.close()

    assert mq.stats("mail").counts["pending"] == 3
