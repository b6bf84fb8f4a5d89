"""The asyncio client offers what the sync one does, typed, and answers the same on the same keyspace."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Iterator

import pytest

from queues import AsyncEchoMQ, EchoMQ, Unavailable
from queues.client import Described, KnownQueues, plans, sends
from tests.support.redis_servers import free_port

# What only one of them has, and why.
SYNC_ONLY = {"discover_queues"}  # a background walk of the whole keyspace, run by the CLI
ASYNC_ONLY = {"blocking_runner"}  # the worker's handler threads


def _public(cls: type) -> dict[str, object]:
    return {name: member for name, member in vars(cls).items() if not name.startswith("_")}


def test_the_async_client_has_every_public_method_of_the_sync_one() -> None:
    assert set(_public(EchoMQ)) - SYNC_ONLY == set(_public(AsyncEchoMQ)) - ASYNC_ONLY


# What a client itself holds: how it sends (the reads and moves are Described's).
TRANSPORT = {"from_url", "close", "run", "run_many", "drive"}


def test_every_read_and_move_is_described_once_for_both_clients() -> None:
    described = {name for name, member in _public(Described).items() if isinstance(member, (sends, plans))}

    assert described and not described & (set(_public(EchoMQ)) | set(_public(AsyncEchoMQ)))
    assert set(_public(EchoMQ)) - SYNC_ONLY == set(_public(AsyncEchoMQ)) - ASYNC_ONLY == TRANSPORT


@pytest.mark.parametrize("name", sorted(n for n, m in _public(Described).items() if isinstance(m, (sends, plans))))
def test_a_described_read_or_move_is_typed(name: str) -> None:
    describe = getattr(Described, name).describe
    assert typing.get_type_hints(describe).get("return", typing.Any) is not typing.Any


@pytest.mark.parametrize("cls", [EchoMQ, AsyncEchoMQ])
def test_no_public_method_of_a_client_returns_any(cls: type) -> None:
    untyped = []
    for name, member in _public(cls).items():
        function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
        if not callable(function):
            continue
        hints = typing.get_type_hints(function)
        if hints.get("return", typing.Any) is typing.Any:
            untyped.append(name)
    assert untyped == []


@pytest.mark.parametrize("name", sorted(set(_public(EchoMQ)) & set(_public(AsyncEchoMQ))))
def test_both_clients_take_the_same_arguments(name: str) -> None:
    sync, async_ = getattr(EchoMQ, name), getattr(AsyncEchoMQ, name)
    if isinstance(sync, property):
        return
    assert inspect.signature(sync).parameters.keys() == inspect.signature(async_).parameters.keys()


@pytest.fixture
def both(redis_url: str) -> Iterator[tuple[EchoMQ, AsyncEchoMQ]]:
    sync = EchoMQ.from_url(redis_url, actor="test")
    yield sync, AsyncEchoMQ.from_url(redis_url, actor="test")
    sync.close()


async def test_the_async_reads_answer_what_the_sync_reads_answer(both: tuple[EchoMQ, AsyncEchoMQ]) -> None:
    sync, mq = both
    sync.enqueue("mail", "one", job_id="a")
    sync.enqueue("mail", "two", job_id="b", delay_ms=60_000)
    sync.enqueue("other", "three", job_id="a")
    [job] = sync.claim("mail")
    sync.complete("mail", job.id, job.token)
    try:
        assert await mq.queues() == sync.queues() == ["mail", "other"]
        assert await mq.known_queues() == sync.known_queues() == KnownQueues(["mail", "other"], "")
        assert await mq.key_count() == sync.key_count()
        assert await mq.find_job("a", ["mail", "other", "none"]) == sync.find_job("a", ["mail", "other", "none"]) \
            == ["mail", "other"]
        assert (await mq.job("mail", "a")).state == sync.job("mail", "a").state == "done"
        assert await mq.payload("mail", "b") == sync.payload("mail", "b") == b"two"
        assert await mq.job_events("mail", "a") == sync.job_events("mail", "a")
        assert await mq.events("mail") == sync.events("mail")
        newest = sync.events("mail")[0]
        assert await mq.events("mail", up_to=newest.id, count=1) == sync.events("mail", up_to=newest.id, count=1) \
            == [newest]
        assert await mq.events("mail", since_ms=newest.ts_ms + 1) == []
        assert (await mq.page("mail", "pending")).rows == sync.page("mail", "pending").rows
        assert await mq.count_older("mail", "done") == sync.count_older("mail", "done") == 1
        assert [s.counts for s in await mq.stats_many(["mail", "other"])] \
            == [s.counts for s in sync.stats_many(["mail", "other"])]
        assert mq.location("mail") == sync.location("mail")
        assert mq.is_cluster is sync.is_cluster is False
        await mq.ping()
    finally:
        await mq.close()


async def test_the_async_batch_moves_move_what_the_sync_ones_move(both: tuple[EchoMQ, AsyncEchoMQ]) -> None:
    sync, mq = both
    try:
        ids = await mq.enqueue_many("mail", ["x"] * 5, chunk=2)
        for _ in ids:
            [job] = await mq.claim("mail")
            await mq.fail("mail", job.id, job.token, backoff_ms=0)
        assert (await mq.retry_failed("mail", limit=2)).moved == 0
        assert sorted(row.id for row in sync.page("mail", "pending").rows) == sorted(ids)
        for _ in ids:
            [job] = await mq.claim("mail")
            await mq.complete("mail", job.id, job.token)
        assert (await mq.purge("mail", "done", limit=2)).moved == 5
        assert sync.stats("mail").counts == {"pending": 0, "active": 0, "done": 0, "failed": 0}
    finally:
        await mq.close()


async def test_every_async_read_of_a_redis_that_is_gone_raises_unavailable() -> None:
    mq = AsyncEchoMQ.from_url(f"redis://127.0.0.1:{free_port()}", socket_timeout=1.0, cluster=False)
    try:
        for read in (mq.queues(), mq.key_count(), mq.find_job("a", ["mail"]), mq.ping(), mq.events("mail"),
                     mq.stats("mail"), mq.job_events("mail", "a")):
            with pytest.raises(Unavailable, match="redis unreachable"):
                await read
    finally:
        await mq.close()


def test_every_sync_read_of_a_redis_that_is_gone_raises_unavailable() -> None:
    mq = EchoMQ.from_url(f"redis://127.0.0.1:{free_port()}", socket_timeout=1.0, cluster=False)
    try:
        for read in (mq.queues, mq.key_count, lambda: mq.find_job("a", ["mail"]), mq.ping, lambda: mq.events("mail"),
                     lambda: mq.stats("mail"), lambda: mq.job_events("mail", "a")):
            with pytest.raises(Unavailable, match="redis unreachable"):
                read()
    finally:
        mq.close()


def test_a_client_for_a_redis_that_is_gone_is_refused_as_unavailable() -> None:
    with pytest.raises(Unavailable, match="redis unreachable"):
        EchoMQ.from_url(f"redis://127.0.0.1:{free_port()}")
