from __future__ import annotations

import asyncio

import pytest

from queues.locks import AsyncRedlock, LockLost, LockNotAcquired, lock_clients
from tests.support.redis_servers import RedisServer

# A node that is up always votes here, however loaded the machine (the 50 ms default makes a slow node a
# no-vote, which these tests do not test); a killed node still refuses at once.
NODE_TIMEOUT_S = 5.0


def _lock(urls: list[str], holder: str, **options: object) -> AsyncRedlock:
    return AsyncRedlock(lock_clients(urls, timeout_s=NODE_TIMEOUT_S), "emq:lock:test", holder=holder, **options)  # type: ignore[arg-type]


async def test_an_async_lock_is_held_by_one_holder_at_a_time(five_urls: list[str]) -> None:
    first, second = _lock(five_urls, "a"), _lock(five_urls, "b")

    async with first as lease:
        assert lease.nodes == 5
        assert await second.acquire(blocking=False) is None
        holder = await second.holder_info()
        assert holder is not None and holder.holder == "a"

    assert await second.acquire(blocking=False) is not None


async def test_an_async_lock_survives_two_dead_masters_but_not_three(five_servers: list[RedisServer],
                                                                     five_urls: list[str]) -> None:
    five_servers[1].kill()
    five_servers[4].kill()
    lease = await _lock(five_urls, "a").acquire(blocking=False)
    assert lease is not None and lease.nodes == 3

    five_servers[2].kill()
    late = _lock(five_urls, "b", wait_s=0.2)
    assert await late.acquire(blocking=False) is None
    with pytest.raises(LockNotAcquired):
        async with late:
            pass


async def test_an_async_holder_past_its_validity_cannot_extend_or_release_the_new_lock(five_urls: list[str]) -> None:
    # A TTL long enough to be acquired on a loaded machine; then wait for the
    # keys to expire on the servers rather than guessing how long that takes.
    old, new = _lock(five_urls, "old", ttl_ms=1000), _lock(five_urls, "new")
    assert await old.acquire(blocking=False)
    deadline = asyncio.get_running_loop().time() + 20
    while not await new.acquire(blocking=False):
        assert asyncio.get_running_loop().time() < deadline, "the old lock never expired"
        await asyncio.sleep(0.05)

    with pytest.raises(LockLost):
        await old.extend()
    assert await old.release() == 0
    holder = await new.holder_info()
    assert holder is not None and holder.holder == "new"
