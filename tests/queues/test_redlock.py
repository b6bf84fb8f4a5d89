from __future__ import annotations

import time
from dataclasses import replace

import pytest

from queues.locks import DRIFT_FACTOR, DRIFT_FLOOR_MS, LockLost, LockNotAcquired, Redlock, lock_clients
from tests.support.redis_servers import RedisServer
from tests.support.waiting import wait_until

# A node that is up always votes here, however loaded the machine (the 50 ms default makes a slow node a
# no-vote, which these tests do not test); a killed node still refuses at once.
NODE_TIMEOUT_S = 5.0


def _lock(urls: list[str], holder: str, **options: object) -> Redlock:
    return Redlock(lock_clients(urls, timeout_s=NODE_TIMEOUT_S), "emq:lock:test", holder=holder, **options)  # type: ignore[arg-type]


def test_a_lock_is_acquired_on_every_master_with_the_holder_in_its_token(five_urls: list[str]) -> None:
    lock = _lock(five_urls, "console-a", ttl_ms=5000)
    started = time.monotonic()

    lease = lock.acquire(blocking=False)

    validity, elapsed = lease.validity_s if lease else 0.0, time.monotonic() - started
    assert lease is not None and (lease.nodes, lease.of) == (5, 5)
    assert lease.token.endswith("/console-a")
    # The TTL less the drift allowance and the time the round took (however long a loaded machine made it):
    # the round's time counts once in the deadline and once more in the wall time since it began.
    drift = (5000 * DRIFT_FACTOR + DRIFT_FLOOR_MS) / 1000
    assert 5.0 - drift - 2 * elapsed < validity <= 5.0 - drift
    for client in lock_clients(five_urls):
        assert client.get("emq:lock:test") == lease.token.encode()


def test_a_second_holder_is_refused_while_the_first_holds_it(five_urls: list[str]) -> None:
    first, second = _lock(five_urls, "a"), _lock(five_urls, "b")
    assert first.acquire(blocking=False)

    assert second.acquire(blocking=False) is None
    assert second.acquire(wait_s=0.3) is None

    holder = second.holder_info()
    assert holder is not None and holder.holder == "a" and holder.held


def test_with_two_of_five_masters_down_the_lock_is_still_acquired(five_servers: list[RedisServer],
                                                                   five_urls: list[str]) -> None:
    five_servers[0].kill()
    five_servers[3].kill()

    lease = _lock(five_urls, "a").acquire(blocking=False)

    assert lease is not None and lease.nodes == 3
    holder = _lock(five_urls, "observer").holder_info()
    assert holder is not None and (holder.holder, holder.nodes, holder.unreachable, holder.held) == ("a", 3, 2, True)


def test_with_three_of_five_masters_down_the_lock_is_refused_and_left_nowhere(five_servers: list[RedisServer],
                                                                              five_urls: list[str]) -> None:
    for server in five_servers[:3]:
        server.kill()
    lock = _lock(five_urls, "a", wait_s=0.3)

    assert lock.acquire(blocking=False) is None
    with pytest.raises(LockNotAcquired):
        with lock:
            pass

    for server in five_servers[3:]:
        assert server.client().get("emq:lock:test") is None


def test_a_holder_whose_validity_ran_out_loses_to_a_new_holder(five_urls: list[str]) -> None:
    old, new = _lock(five_urls, "old", ttl_ms=1000), _lock(five_urls, "new", ttl_ms=5000)
    stale = old.acquire(blocking=False)
    assert stale is not None
    wait_until(lambda: new.acquire(blocking=False) is not None, 20, "the old lock to expire")
    assert stale.validity_s < 0

    with pytest.raises(LockLost):
        old.extend()
    assert old.release() == 0

    # A majority is the lock: the new holder may have won while the old key still lived on a node or two
    # (each node expires it on its own clock, and a loaded machine asks them apart).
    holder = new.holder_info()
    assert holder is not None and holder.holder == "new" and holder.nodes >= 3


def test_a_release_by_a_non_holder_does_nothing(five_urls: list[str]) -> None:
    holder, other = _lock(five_urls, "holder"), _lock(five_urls, "other")
    lease = holder.acquire(blocking=False)
    assert lease is not None
    other.lease = replace(lease, holder="other", token="forged/other")

    assert other.release() == 0

    info = holder.holder_info()
    assert info is not None and info.holder == "holder" and info.nodes == 5


def test_extend_moves_the_deadline_and_release_frees_the_lock(five_urls: list[str]) -> None:
    lock = _lock(five_urls, "a", ttl_ms=1000)
    first = lock.acquire(blocking=False)
    assert first is not None
    time.sleep(0.2)

    extended = lock.extend(3000)

    assert extended.token == first.token and extended.valid_until > first.valid_until + 1.5
    assert lock.release() == 5
    assert lock.holder_info() is None
    assert _lock(five_urls, "b").acquire(blocking=False) is not None


def test_the_context_manager_holds_the_lock_inside_and_releases_it_after(five_urls: list[str]) -> None:
    lock = _lock(five_urls, "a")
    with lock as lease:
        assert lease.holder == "a"
        assert _lock(five_urls, "b").acquire(blocking=False) is None
    assert lock.holder_info() is None


def test_a_blocked_acquirer_gets_the_lock_once_the_holder_releases_it(five_urls: list[str]) -> None:
    first, second = _lock(five_urls, "a", ttl_ms=1500), _lock(five_urls, "b", retry_delay_ms=50)
    assert first.acquire(blocking=False)
    held_until = first.lease.valid_until  # type: ignore[union-attr]

    lease = second.acquire(wait_s=20.0)

    assert lease is not None and lease.holder == "b"
    assert time.time() >= held_until, "the second holder got the lock while the first was still valid"


def test_the_single_instance_lease_shows_its_holder_and_deadline(five_urls: list[str]) -> None:
    lease_lock = Redlock(lock_clients(five_urls[:1]), "emq:lock:lease", holder="solo", ttl_ms=2000)

    lease = lease_lock.acquire(blocking=False)

    assert lease is not None and (lease.nodes, lease.of) == (1, 1)
    holder = lease_lock.holder_info()
    assert holder is not None and holder.holder == "solo" and holder.held
    assert time.time() + 1.0 < holder.until <= time.time() + 2.0
    assert Redlock(lock_clients(five_urls[:1]), "emq:lock:lease").acquire(blocking=False) is None


def test_a_lock_over_no_masters_is_refused() -> None:
    from queues import InvalidInput

    with pytest.raises(InvalidInput):
        Redlock([], "k")
