"""Locks for work that must run in one place at a time: a single-instance lease and Redlock.

A lock is one key holding a random token, set with ``SET NX PX`` on each of N
independent masters. It is held when a majority (N // 2 + 1) took it, and it
is valid for TTL - elapsed - drift, counted from before the first SET was
sent. Release and extend are compare-and-delete / compare-and-expire scripts,
so a holder whose lease lapsed cannot undo a newer holder's lock. With one
master this is the single-instance lease (quorum 1 of 1, no threads).

The token is ``<random>/<holder>``, so anyone can read who holds a lock and for
how long (GET + PTTL) without a second key that could disagree with the first.
pottery's Redlock does everything else here, but its token is a bare uuid4,
it does not return the validity it computed, and it caps extensions; the
console has to show the holder and its deadline, hence this module.

Neither lock gives a fencing token that the protected resource checks: a
holder that pauses past its validity still believes it holds the lock.
EchoMQ's moves do not rely on these locks for safety (see PROTOCOL.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import secrets
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import redis
import redis.exceptions
from redis.backoff import NoBackoff
from redis.retry import Retry

from .client import default_actor
from .connection import SyncClient
from .errors import EmqError, InvalidInput

DEFAULT_TTL_MS: Final = 10_000
DEFAULT_NODE_TIMEOUT_S: Final = 0.05
DRIFT_FACTOR: Final = 0.01
# Redis expires keys with up to 1 ms of error; add it to the clock drift.
DRIFT_FLOOR_MS: Final = 2

_RELEASE: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_EXTEND: Final = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_INSPECT: Final = "return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}"
_SHA: Final = {source: hashlib.sha1(source.encode()).hexdigest() for source in (_RELEASE, _EXTEND, _INSPECT)}


class LockNotAcquired(EmqError):
    """No majority of the masters granted the lock in time."""


class LockLost(EmqError):
    """The lock lapsed or was taken by another holder; the caller no longer holds it."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A lock this process holds: valid until ``valid_until`` (wall clock, seconds) at best."""

    key: str
    holder: str
    token: str
    valid_until: float
    nodes: int
    of: int

    @property
    def validity_s(self) -> float:
        return self.valid_until - time.time()


@dataclass(frozen=True, slots=True)
class LockHolder:
    """Who a lock's masters say holds it: ``nodes`` of ``of`` carry the token, ``unreachable`` did not answer."""

    key: str
    holder: str
    until: float
    nodes: int
    of: int
    unreachable: int

    @property
    def held(self) -> bool:
        return self.nodes >= self.of // 2 + 1

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "holder": self.holder, "until": self.until, "nodes": self.nodes,
                "of": self.of, "unreachable": self.unreachable, "held": self.held}


def new_token(holder: str) -> str:
    return f"{secrets.token_hex(16)}/{holder}"


def holder_of(token: str) -> str:
    return token.partition("/")[2] or token


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _drift_ms(ttl_ms: int) -> float:
    return ttl_ms * DRIFT_FACTOR + DRIFT_FLOOR_MS


def _quorum(n: int) -> int:
    return n // 2 + 1


def _check(masters: Sequence[object], key: str, ttl_ms: int) -> None:
    if not masters:
        raise InvalidInput("a lock needs at least one Redis master")
    if not isinstance(key, str) or not key:
        raise InvalidInput("a lock key must be a non-empty text")
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 10:
        raise InvalidInput(f"lock ttl_ms must be an integer >= 10, not {ttl_ms!r}")


def _count_true(results: list[Any]) -> int:
    return sum(1 for r in results if not isinstance(r, BaseException) and bool(r))


def _holder_from(key: str, replies: list[Any], observed_at: float) -> LockHolder | None:
    """Groups the masters' GET + PTTL replies by token; the most common token is the holder."""
    seen: dict[str, list[int]] = {}
    unreachable = 0
    for reply in replies:
        if isinstance(reply, BaseException):
            unreachable += 1
            continue
        token, pttl = reply
        if token is not None and int(pttl) > 0:
            seen.setdefault(_text(token), []).append(int(pttl))
    if not seen:
        return None
    token, pttls = max(seen.items(), key=lambda item: len(item[1]))
    pttls.sort()
    # The lock lasts while a majority still carries it: until the quorum-th longest TTL runs out.
    quorum = _quorum(len(replies))
    left_ms = pttls[-quorum] if len(pttls) >= quorum else pttls[-1]
    return LockHolder(key, holder_of(token), observed_at + left_ms / 1000, len(pttls), len(replies), unreachable)


def lock_clients(urls: Sequence[str], *, timeout_s: float = DEFAULT_NODE_TIMEOUT_S) -> list[redis.Redis]:
    """One client per independent master, with short timeouts and no retries (a slow node is a no-vote)."""
    return [redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                                 retry=Retry(NoBackoff(), 0)) for url in urls]



def _script(client: SyncClient, source: str, key: str, *args: Any) -> Any:
    try:
        return client.evalsha(_SHA[source], 1, key, *args)
    except redis.exceptions.NoScriptError:
        return client.eval(source, 1, key, *args)



class Redlock:
    """A lock over N independent masters (Redlock); with one master, the single-instance lease.

    ``with lock as lease:`` waits up to ``wait_s`` for it and raises
    :class:`LockNotAcquired` if no majority grants it.
    """

    def __init__(self, masters: Sequence[SyncClient], key: str, *, ttl_ms: int = DEFAULT_TTL_MS,
                 holder: str | None = None, retry_delay_ms: int = 200, wait_s: float = 10.0) -> None:
        _check(masters, key, ttl_ms)
        self.masters, self.key, self.ttl_ms = list(masters), key, ttl_ms
        self.holder = holder or default_actor()
        self.retry_delay_ms, self.wait_s = retry_delay_ms, wait_s
        self.quorum = _quorum(len(self.masters))
        self.lease: Lease | None = None
        self._pool = ThreadPoolExecutor(len(self.masters), "redlock") if len(self.masters) > 1 else None

    def _each(self, call: Callable[[SyncClient], Any]) -> list[Any]:
        """``call`` on every master, in parallel; each result or the exception it raised."""
        def guarded(master: SyncClient) -> Any:
            try:
                return call(master)
            except Exception as error:  # a master that fails is a no-vote, whatever the failure
                return error
        if self._pool is None:
            return [guarded(self.masters[0])]
        return list(self._pool.map(guarded, self.masters))

    def try_acquire(self) -> Lease | None:
        """One round: SET NX PX on every master; held on a majority with validity left, else undone."""
        token = new_token(self.holder)
        wall, start = time.time(), time.monotonic()
        got = _count_true(self._each(lambda m: m.set(self.key, token, nx=True, px=self.ttl_ms)))
        validity_ms = self.ttl_ms - (time.monotonic() - start) * 1000 - _drift_ms(self.ttl_ms)
        if got >= self.quorum and validity_ms > 0:
            self.lease = Lease(self.key, self.holder, token, wall + validity_ms / 1000, got, len(self.masters))
            return self.lease
        self._each(lambda m: _script(m, _RELEASE, self.key, token))
        return None

    def acquire(self, *, blocking: bool = True, wait_s: float | None = None) -> Lease | None:
        """Tries until it holds the lock or ``wait_s`` passed, sleeping a random part of the retry delay between rounds."""
        deadline = time.monotonic() + (self.wait_s if wait_s is None else wait_s)
        while True:
            lease = self.try_acquire()
            if lease or not blocking or time.monotonic() >= deadline:
                return lease
            time.sleep(random.uniform(0.5, 1.5) * self.retry_delay_ms / 1000)

    def extend(self, ttl_ms: int | None = None) -> Lease:
        """Pushes the deadline to now + ttl on every master still carrying our token; LockLost without a majority."""
        lease = self._held()
        ttl_ms = self.ttl_ms if ttl_ms is None else ttl_ms
        wall, start = time.time(), time.monotonic()
        got = _count_true(self._each(lambda m: _script(m, _EXTEND, self.key, lease.token, ttl_ms)))
        validity_ms = ttl_ms - (time.monotonic() - start) * 1000 - _drift_ms(ttl_ms)
        if got < self.quorum or validity_ms <= 0:
            self.lease = None
            raise LockLost(f"lock {self.key} is no longer held by {self.holder} ({got} of {len(self.masters)} masters)")
        self.lease = Lease(self.key, self.holder, lease.token, wall + validity_ms / 1000, got, len(self.masters))
        return self.lease

    def release(self) -> int:
        """Deletes the key where it still carries our token; returns on how many masters it did."""
        lease, self.lease = self.lease, None
        if lease is None:
            return 0
        return _count_true(self._each(lambda m: _script(m, _RELEASE, self.key, lease.token)))

    def holder_info(self) -> LockHolder | None:
        """Who holds the lock now and until when, read from every master (None when nobody does)."""
        return self.inspect()[0]

    def inspect(self) -> tuple[LockHolder | None, int]:
        """As :meth:`holder_info`, with how many masters did not answer (all of them: nobody can tell)."""
        observed = time.time()
        replies = self._each(lambda m: _script(m, _INSPECT, self.key))
        return _holder_from(self.key, replies, observed), sum(isinstance(r, BaseException) for r in replies)

    def _held(self) -> Lease:
        if self.lease is None:
            raise LockLost(f"lock {self.key} is not held by {self.holder}")
        return self.lease

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def __enter__(self) -> Lease:
        lease = self.acquire(wait_s=self.wait_s)
        if lease is None:
            raise LockNotAcquired(f"lock {self.key}: no majority of {len(self.masters)} masters within {self.wait_s} s")
        return lease

    def __exit__(self, *exc: object) -> None:
        self.release()


class AsyncRedlock:
    """:class:`Redlock` for asyncio code: the same lock, each call run on a thread so the loop never blocks.

    The masters are the same synchronous clients (:func:`lock_clients`); the
    rounds already fan out over a thread per master, so a second copy of the
    algorithm written with asyncio would only be a second place to get it wrong.
    """

    def __init__(self, masters: Sequence[SyncClient], key: str, **options: Any) -> None:
        self.sync = Redlock(masters, key, **options)

    @property
    def lease(self) -> Lease | None:
        return self.sync.lease

    @property
    def quorum(self) -> int:
        return self.sync.quorum

    async def try_acquire(self) -> Lease | None:
        return await asyncio.to_thread(self.sync.try_acquire)

    async def acquire(self, *, blocking: bool = True, wait_s: float | None = None) -> Lease | None:
        return await asyncio.to_thread(self.sync.acquire, blocking=blocking, wait_s=wait_s)

    async def extend(self, ttl_ms: int | None = None) -> Lease:
        return await asyncio.to_thread(self.sync.extend, ttl_ms)

    async def release(self) -> int:
        return await asyncio.to_thread(self.sync.release)

    async def holder_info(self) -> LockHolder | None:
        return await asyncio.to_thread(self.sync.holder_info)

    def close(self) -> None:
        self.sync.close()

    async def __aenter__(self) -> Lease:
        return await asyncio.to_thread(self.sync.__enter__)

    async def __aexit__(self, *exc: object) -> None:
        await self.release()
