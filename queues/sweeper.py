"""The sweeper: recovers lapsed leases of every registered queue, in one place at a time.

Every console process may start one; a lock decides which of them sweeps.
By default it is a single-instance lease on the EchoMQ Redis; when several
independent Redis URLs are configured (``EMQ_LOCK_URLS``, comma separated)
it is a Redlock over them. The lock only saves work: ``recover_expired``
checks each lease's deadline inside its script, so two sweepers running at
once (a holder paused past its validity) recover each job once all the same.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from .client import EchoMQ
from .connection import connect, redis_url
from .errors import EmqError
from .keys import SWEEPER_LOCK
from .locks import LockHolder, LockLost, Redlock, lock_clients

DEFAULT_INTERVAL_S: Final = 5.0
LOCK_URLS_ENV: Final = "EMQ_LOCK_URLS"

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SweepReport:
    queues: int
    recovered: int
    to_failed: int
    errors: dict[str, str] = field(default_factory=dict)


def lock_urls_from_env() -> list[str]:
    return [url.strip() for url in os.environ.get(LOCK_URLS_ENV, "").split(",") if url.strip()]


def sweeper_lock(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                 interval_s: float = DEFAULT_INTERVAL_S, holder: str | None = None) -> Redlock:
    """Redlock over ``lock_urls`` (default ``EMQ_LOCK_URLS``) when two or more, else a lease on one Redis.

    The lock lives three sweep intervals, so one slow round does not lose it.
    """
    urls = lock_urls_from_env() if lock_urls is None else list(lock_urls)
    ttl_ms = max(int(interval_s * 3000), 1000)
    if len(urls) >= 2:
        return Redlock(lock_clients(urls), SWEEPER_LOCK, ttl_ms=ttl_ms, holder=holder)
    client = lock_clients(urls, timeout_s=1.0)[0] if urls else connect(redis_url(url), socket_timeout=1.0)
    return Redlock([client], SWEEPER_LOCK, ttl_ms=ttl_ms, holder=holder)


def sweep(mq: EchoMQ, *, limit: int = 500) -> SweepReport:
    """``recover_expired`` on every registered queue; a queue whose node is down is reported, not fatal."""
    recovered = to_failed = 0
    errors: dict[str, str] = {}
    names = mq.known_queues().names
    for name in names:
        try:
            result = mq.recover_expired(name, limit=limit)
        except EmqError as error:
            errors[name] = str(error)
            continue
        recovered += result.moved
        to_failed += result.to_failed
    return SweepReport(len(names), recovered, to_failed, errors)


class Sweeper:
    """Each round: hold the lock (take it, or extend it if ours), then sweep every queue."""

    def __init__(self, mq: EchoMQ, lock: Redlock, *, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.mq, self.lock, self.interval_s = mq, lock, interval_s
        self.last: SweepReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def holds_lock(self) -> bool:
        try:
            if self.lock.lease is not None:
                self.lock.extend()
                return True
        except LockLost:
            log.warning("sweeper lost %s; another process may sweep now", self.lock.key)
        return self.lock.try_acquire() is not None

    def run_once(self) -> SweepReport | None:
        """One round; None when another process holds the lock (or Redis is unreachable)."""
        try:
            if not self.holds_lock():
                return None
            self.last = sweep(self.mq)
        except EmqError as error:
            log.warning("sweeper round failed: %s", error)
            return None
        return self.last

    def run(self) -> None:
        while not self._stop.is_set():
            self.run_once()
            self._stop.wait(self.interval_s)
        self.lock.release()

    def start(self) -> Sweeper:
        """Runs the rounds in a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self.run, name="emq-sweeper", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ends the loop and releases the lock, so another process can take over at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    async def run_async(self) -> None:
        """The same rounds as an asyncio task (the Redis calls run in a worker thread)."""
        try:
            while not self._stop.is_set():
                await asyncio.to_thread(self.run_once)
                await asyncio.sleep(self.interval_s)
        finally:
            await asyncio.to_thread(self.lock.release)

    def holder(self) -> LockHolder | None:
        return sweeper_holder(self.lock)


def sweeper_holder(lock: Redlock) -> LockHolder | None:
    """Who holds the sweeper lock and until when (None when nobody does), for the console."""
    return lock.holder_info()


def start_sweeper(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                  interval_s: float = DEFAULT_INTERVAL_S, holder: str | None = None) -> Sweeper:
    """What a console process calls at start-up: its own EchoMQ client and lock, sweeping in a thread."""
    mq = EchoMQ.from_url(url, actor=holder)
    lock = sweeper_lock(url=url, lock_urls=lock_urls, interval_s=interval_s, holder=mq.actor)
    return Sweeper(mq, lock, interval_s=interval_s).start()
