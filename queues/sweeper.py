"""The sweeper: recovers lapsed leases, in one place at a time, at a cost that grows with the leases that lapse.

Each round takes from the lease index (:mod:`queues.lease_index`) the queues
whose earliest lease deadline has passed, a step of up to ``queues_per_step``
queues at a time (one pipelined round trip of ``recover_expired``), and
settles each queue's score to its next deadline. Queues without active jobs
cost nothing. A round stops after ``interval_s`` of work (the rest is due in
the next round) and extends the lock after every step, so a slow round never
loses it. The round then takes a few bounded SCAN steps of discovery
(:mod:`queues.discovery`), which register queues no runtime registered and put
queues with active jobs the index lacks back in it.

Every console process may start one; a lock decides which of them sweeps.
By default it is a single-instance lease on the EchoMQ Redis; when several
independent Redis URLs are configured (``EMQ_LOCK_URLS``, comma separated)
it is a Redlock over them. On a Redis Cluster without ``EMQ_LOCK_URLS`` the
lock is cut like the lease index, one lease per shard beside the shard's
index (:class:`ShardLocks`), so a master that is away stops the sweeping of
its own queues only. The lock only saves work: ``recover_expired``
checks each lease's deadline inside its script, so two sweepers running at
once (a holder paused past its validity) recover each job once all the same.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from . import lease_index, moves
from .client import EchoMQ
from .connection import SyncClient, connect, is_cluster_client, redis_url
from .discovery import DEFAULT_SCAN_COUNT, QueueDiscovery
from .errors import EmqError, InvalidInput, Unavailable
from .keys import SWEEPER_LOCK, validate_queue_name
from .lease_index import STANDALONE, Shard, shards_of
from .locks import Lease, LockHolder, LockLost, Redlock, lock_clients

DEFAULT_INTERVAL_S: Final = 5.0
LOCK_URLS_ENV: Final = "EMQ_LOCK_URLS"
QUEUES_PER_STEP: Final = 100
RECOVER_LIMIT: Final = 500
# A queue whose recover_expired failed (its master is down, say) is due again this much later.
RETRY_AFTER_MS: Final = 5_000
DEFAULT_DISCOVERY_SCANS_PER_S: Final = 2.0

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SweepReport:
    queues: int  # queues looked at: those the lease index said were due
    recovered: int
    to_failed: int
    errors: dict[str, str] = field(default_factory=dict)
    steps: int = 0
    # False when the round stopped at its time budget or lost the lock: what is left is due next round.
    finished: bool = True
    discovered: int = 0  # queues discovery registered in this round


def lock_urls_from_env() -> list[str]:
    return [url.strip() for url in os.environ.get(LOCK_URLS_ENV, "").split(",") if url.strip()]


class ShardLocks:
    """The sweeper lock on a cluster: a single-instance lease per shard of the lease index, in the shard's slot.

    A round sweeps the shards whose lease it holds (:meth:`hold`); a shard whose
    master does not answer is skipped, and the others are swept. Two console
    processes may each hold some shards. It reads like a :class:`Redlock` for
    the pages (:meth:`inspect`, ``holder``, ``masters``).
    """

    def __init__(self, client: SyncClient, *, ttl_ms: int, holder: str | None = None) -> None:
        self.client, self.ttl_ms = client, ttl_ms
        self.key = SWEEPER_LOCK
        self._locks: dict[str, Redlock] = {}
        self.holder = self._lock(STANDALONE).holder if holder is None else holder

    def _lock(self, shard: Shard) -> Redlock:
        lock = self._locks.get(shard.lock_key)
        if lock is None:
            lock = self._locks[shard.lock_key] = Redlock([self.client], shard.lock_key, ttl_ms=self.ttl_ms,
                                                         holder=getattr(self, "holder", None))
        return lock

    @property
    def masters(self) -> list[Shard]:
        return shards_of(self.client)

    @property
    def lease(self) -> Lease | None:
        return next((lock.lease for lock in self._locks.values() if lock.lease is not None), None)

    def hold(self) -> list[tuple[Shard, Redlock]]:
        """Takes or extends the lease of every shard it can; the shards held, with their leases."""
        held: list[tuple[Shard, Redlock]] = []
        for shard in shards_of(self.client):
            lock = self._lock(shard)
            try:
                if lock.lease is not None:
                    lock.extend()
                elif lock.try_acquire() is None:
                    continue
            except LockLost:
                log.warning("sweeper lost %s; another process may sweep those queues now", shard.lock_key)
                continue
            held.append((shard, lock))
        return held

    def try_acquire(self) -> Lease | None:
        self.hold()
        return self.lease

    def extend(self) -> None:
        if not self.hold():
            raise LockLost(f"no shard of {self.key} is held by {self.holder}")

    def release(self) -> int:
        released = 0
        for lock in self._locks.values():
            try:
                released += lock.release()
            except EmqError as error:
                log.warning("could not release %s: %s", lock.key, error)
        return released

    def inspect(self) -> tuple[LockHolder | None, int]:
        """The first holder found among the shards' leases, and how many shards did not answer."""
        first: LockHolder | None = None
        unreachable = 0
        for shard in shards_of(self.client):
            holder, missing = self._lock(shard).inspect()
            unreachable += missing
            first = first or holder
        return first, unreachable

    def holder_info(self) -> LockHolder | None:
        return self.inspect()[0]


def sweeper_lock(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                 interval_s: float = DEFAULT_INTERVAL_S, holder: str | None = None) -> Redlock | ShardLocks:
    """Redlock over ``lock_urls`` (default ``EMQ_LOCK_URLS``) when two or more, else a lease on one Redis
    (on a cluster, one lease per shard of the lease index: :class:`ShardLocks`).

    The lock lives three sweep intervals; a round also extends it after every step.
    """
    urls = lock_urls_from_env() if lock_urls is None else list(lock_urls)
    ttl_ms = max(int(interval_s * 3000), 1000)
    if len(urls) >= 2:
        return Redlock(lock_clients(urls), SWEEPER_LOCK, ttl_ms=ttl_ms, holder=holder)
    client = lock_clients(urls, timeout_s=1.0)[0] if urls else connect(redis_url(url), socket_timeout=1.0)
    if is_cluster_client(client):
        return ShardLocks(client, ttl_ms=ttl_ms, holder=holder)
    return Redlock([client], SWEEPER_LOCK, ttl_ms=ttl_ms, holder=holder)


def _valid_name(name: str) -> bool:
    try:
        validate_queue_name(name)
    except InvalidInput:
        return False
    return True


def _step(mq: EchoMQ, shard: Shard, limit: int, queues_per_step: int, skipped: dict[str, int],
          looked: set[str], errors: dict[str, str]) -> tuple[int, int] | None:
    """One step over one shard: take its due queues, recover them, settle; None when none was due."""
    due = mq.run(lease_index.take_due(limit=queues_per_step, index_key=shard.index_key))
    if not due.names:
        return None
    recovered = to_failed = 0
    # A name no runtime could have written (an odd writer's) leaves the index.
    next_deadlines = {name: 0 for name in due.names if not _valid_name(name)}
    names = [name for name in due.names if name not in next_deadlines]
    calls = [moves.recover_expired(name, limit=limit, actor=mq.actor, skip=skipped.get(name, 0)) for name in names]
    for name, result in zip(names, mq.run_many(calls)):
        looked.add(name)
        if isinstance(result, Exception):
            errors[name] = str(result)
            next_deadlines[name] = due.now_ms + RETRY_AFTER_MS
            continue
        recovered += result.moved
        to_failed += result.to_failed
        if result.more:
            skipped[name] = skipped.get(name, 0) + result.skipped
            next_deadlines[name] = due.now_ms
        else:
            next_deadlines[name] = result.next_deadline_ms
    mq.run(lease_index.settle(due.mark, next_deadlines, index_key=shard.index_key))
    return recovered, to_failed


def sweep(mq: EchoMQ, *, limit: int = RECOVER_LIMIT, queues_per_step: int = QUEUES_PER_STEP,
          budget_s: float | None = None, between_steps: Callable[[], bool] | None = None,
          shards: Sequence[Shard] | None = None) -> SweepReport:
    """``recover_expired`` on every queue the lease index says is due, a step at a time.

    A queue that reports more lapsed leases is due again at once (it is taken
    again in a later step); one whose node is down is reported, not fatal, and
    due again after ``RETRY_AFTER_MS``. ``between_steps()`` runs after each step;
    when it answers False (the lock is lost) the round ends. So does the round
    after ``budget_s`` seconds of work.

    ``shards``: the parts of the lease index to sweep (default: every one
    ``mq`` sees); a shard whose master does not answer is reported under its
    index key and the others are swept.
    """
    started = time.monotonic()
    looked: set[str] = set()
    recovered = to_failed = steps = 0
    errors: dict[str, str] = {}
    skipped: dict[str, int] = {}
    finished = True
    todo = list(shards_of(mq.redis) if shards is None else shards)
    while todo:
        shard = todo[0]
        try:
            done = _step(mq, shard, limit, queues_per_step, skipped, looked, errors)
        except Unavailable as error:
            if shard is STANDALONE:
                raise
            # This shard's master is away: its queues wait for it, the other shards' do not.
            errors[shard.index_key] = str(error)
            todo.pop(0)
            continue
        if done is None:
            todo.pop(0)
            continue
        recovered += done[0]
        to_failed += done[1]
        steps += 1
        if between_steps is not None and not between_steps():
            finished = False
            break
        if budget_s is not None and time.monotonic() - started >= budget_s:
            finished = False
            break
    return SweepReport(len(looked), recovered, to_failed, errors, steps, finished)


class Sweeper:
    """Each round: hold the lock (take it, or extend it if ours), sweep the due queues, take discovery's steps.

    ``discovery_scans_per_s`` SCAN steps of ``discovery_count`` keys a second
    (0: no discovery), taken at the end of each round. A round works for at
    most ``round_budget_s`` (default: one interval). ``on_step`` runs after each
    step of a round, before the lock is extended (tests hold a step with it).
    """

    def __init__(self, mq: EchoMQ, lock: Redlock | ShardLocks, *, interval_s: float = DEFAULT_INTERVAL_S,
                 queues_per_step: int = QUEUES_PER_STEP, round_budget_s: float | None = None,
                 discovery_scans_per_s: float = DEFAULT_DISCOVERY_SCANS_PER_S,
                 discovery_count: int = DEFAULT_SCAN_COUNT, on_step: Callable[[], None] | None = None) -> None:
        self.mq, self.lock, self.interval_s = mq, lock, interval_s
        self.queues_per_step = queues_per_step
        self.round_budget_s = max(interval_s, 0.1) if round_budget_s is None else round_budget_s
        self.discovery = QueueDiscovery(mq, count=discovery_count)
        self.discovery_steps = math.ceil(max(discovery_scans_per_s, 0.0) * max(interval_s, 1.0))
        self.on_step = on_step
        self.last: SweepReport | None = None
        # On a cluster: the shards of the lease index whose lease this round holds (None: every shard).
        self._shards: list[Shard] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def holds_lock(self) -> bool:
        if isinstance(self.lock, ShardLocks):
            self._shards = [shard for shard, _ in self.lock.hold()]
            return bool(self._shards)
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
            report = sweep(self.mq, queues_per_step=self.queues_per_step, budget_s=self.round_budget_s,
                           between_steps=self._still_held, shards=self._shards)
            if report.finished:
                report = replace(report, discovered=self.discover())
            self.last = report
        except EmqError as error:
            log.warning("sweeper round failed: %s", error)
            return None
        return self.last

    def _still_held(self) -> bool:
        if self.on_step is not None:
            self.on_step()
        try:
            self.lock.extend()
        except LockLost:
            log.warning("sweeper lost %s during a round; another process may sweep now", self.lock.key)
            return False
        return True

    def discover(self) -> int:
        """This round's discovery steps; how many queues they registered."""
        registered = 0
        for _ in range(self.discovery_steps):
            try:
                step = self.discovery.step()
            except Unavailable as error:
                log.warning("queue discovery skipped a step: %s", error)
                break
            registered += step.registered
            if step.walked:
                break
        return registered

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


def sweeper_holder(lock: Redlock | ShardLocks) -> LockHolder | None:
    """Who holds the sweeper lock and until when (None when nobody does), for the console."""
    return lock.holder_info()


def start_sweeper(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                  interval_s: float = DEFAULT_INTERVAL_S, holder: str | None = None,
                  discovery_scans_per_s: float = DEFAULT_DISCOVERY_SCANS_PER_S,
                  discovery_count: int = DEFAULT_SCAN_COUNT) -> Sweeper:
    """What a console process calls at start-up: its own EchoMQ client and lock, sweeping in a thread."""
    mq = EchoMQ.from_url(url, actor=holder)
    lock = sweeper_lock(url=url, lock_urls=lock_urls, interval_s=interval_s, holder=mq.actor)
    return Sweeper(mq, lock, interval_s=interval_s, discovery_scans_per_s=discovery_scans_per_s,
                   discovery_count=discovery_count).start()
