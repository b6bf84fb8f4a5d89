"""The console's live view of the emq keyspace: one follower per process.

A follower reads the event stream of every queue that an open page watches
(``XREAD`` from the last id it saw), reads a queue's counts again when its
next known change comes (its next lease deadline, its next due time: both
are in the ``stats`` it read last), polls every watched queue as a slow
safety net (a client that writes no event, a raw ``redis-cli`` command), and
hands each change, coalesced, to its subscribers in the same process. So its
cost grows with what the open pages show, not with the number of queues. Several console processes each run their
own follower against Redis itself, so no message bus sits between processes
and nothing here needs a pub/sub channel, which a Redis Cluster could not
route for queues on different nodes.

Counts are never added up from events: every change is confirmed by a
``stats`` read (one script, one instant), so a lost event, a trimmed stream or
a Redis restart can delay a count by one poll but never make it wrong. Events
say *which* jobs changed and feed the throughput chart.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

from . import reads
from .client import AsyncEchoMQ
from .cluster import QueueLocation
from .connection import AsyncClient, connect_async, is_cluster_url
from .errors import EmqError, Unavailable
from .keys import QueueKeys, queue_of_key
from .moves import _text
from .reads import QueueStats
from .redis_errors import UNREACHABLE, ResponseError

# How many past events a queue new to the follower reads to fill its chart.
SEED_EVENTS: Final = 2000
log = logging.getLogger(__name__)

# The safety net: every watched queue is read this often even when nothing said it changed.
POLL_INTERVAL_S: Final = 5.0
# A queue whose next deadline has come is read this much after it (the script then sees it passed).
DEADLINE_SLACK_S: Final = 0.005
# At most this many queue histories are read at once for the charts (each an XREVRANGE).
SEEDING_MAX: Final = 4
PUBLISH_INTERVAL_S: Final = 0.2
REGISTRY_INTERVAL_S: Final = 2.0
RETRY_S: Final = 0.5
BLOCK_MS: Final = 500
CLUSTER_READ_INTERVAL_S: Final = 0.1
EVENT_BATCH: Final = 1000
CHUNK: Final = 500
# Beyond this many changed ids per publish, a page is told "any job may have changed".
MAX_TRACKED_IDS: Final = 500

_UNREACHABLE: Final = (*UNREACHABLE, Unavailable)


def stop_if_cancelled() -> None:
    """Raises CancelledError in a task that was asked to stop but carried on.

    On Python 3.11, ``asyncio.wait_for`` drops a cancel that arrives just as what it awaits finishes, and
    redis-py's asyncio connection writes every command under ``wait_for``: a task cancelled during a write
    goes on as if it never was, with only ``Task.cancelling()`` still counting the request. A loop that runs
    until cancelled calls this at each turn, so such a task stops at its next turn instead of running, or
    waiting for an update nobody will send, for ever.
    """
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


class Throughput:
    """Moves per bucket of server time, per queue and in total, over the last few minutes."""

    def __init__(self, *, bucket_s: int = 5, buckets: int = 60) -> None:
        self.bucket_s = bucket_s
        self.buckets = buckets
        self._per_queue: dict[str, dict[int, int]] = {}
        self._total: dict[int, int] = {}

    def bucket_of(self, ms: int) -> int:
        return ms // (self.bucket_s * 1000)

    def add(self, queue: str, ms: int, n: int = 1) -> None:
        bucket = self.bucket_of(ms)
        counts = self._per_queue.setdefault(queue, {})
        counts[bucket] = counts.get(bucket, 0) + n
        self._total[bucket] = self._total.get(bucket, 0) + n

    def _series(self, counts: dict[int, int], now_ms: int) -> list[int]:
        last = self.bucket_of(now_ms)
        return [counts.get(b, 0) for b in range(last - self.buckets + 1, last + 1)]

    def series(self, queue: str, now_ms: int) -> list[int]:
        return self._series(self._per_queue.get(queue, {}), now_ms)

    def total_series(self, now_ms: int) -> list[int]:
        return self._series(self._total, now_ms)

    def busy(self, now_ms: int) -> list[str]:
        oldest = self.bucket_of(now_ms) - self.buckets
        return [q for q, counts in list(self._per_queue.items()) if any(b > oldest for b in list(counts))]

    def prune(self, now_ms: int) -> None:
        oldest = self.bucket_of(now_ms) - self.buckets
        for counts in [*self._per_queue.values(), self._total]:
            for bucket in [b for b in counts if b <= oldest]:
                del counts[bucket]


@dataclass
class Update:
    """What changed since the last update a subscriber took (merged, never queued)."""

    stats: dict[str, QueueStats] = field(default_factory=dict)
    # Changed job ids per queue; None: any job of that queue may have changed.
    jobs: dict[str, set[str] | None] = field(default_factory=dict)
    queues_added: list[str] = field(default_factory=list)
    up: bool | None = None
    error: str = ""
    tick: bool = False

    def __bool__(self) -> bool:
        return bool(self.stats or self.jobs or self.queues_added or self.up is not None or self.tick)

    def touch(self, queue: str, ids: set[str] | None) -> None:
        if ids is None:
            self.jobs[queue] = None
        elif queue not in self.jobs:
            self.jobs[queue] = set(ids)
        else:
            known = self.jobs[queue]
            if known is not None:
                known |= ids
                if len(known) > MAX_TRACKED_IDS:
                    self.jobs[queue] = None

    def merge(self, other: Update) -> None:
        self.stats.update(other.stats)
        for queue, ids in other.jobs.items():
            self.touch(queue, ids)
        self.queues_added += [q for q in other.queues_added if q not in self.queues_added]
        if other.up is not None:
            self.up, self.error = other.up, other.error
        self.tick = self.tick or other.tick

    def only(self, queues: frozenset[str]) -> Update:
        return Update({q: s for q, s in self.stats.items() if q in queues},
                      {q: (None if ids is None else set(ids)) for q, ids in self.jobs.items() if q in queues},
                      [], self.up, self.error, self.tick)

    def changed(self, queue: str) -> bool:
        return queue in self.stats or queue in self.jobs

    def job_changed(self, queue: str, job_id: str) -> bool:
        if queue not in self.jobs:
            return False
        ids = self.jobs[queue]
        return ids is None or job_id in ids


class Subscription:
    """One page's interest: some queues, or every registered queue (``queues=None``)."""

    def __init__(self, follower: Follower, queues: frozenset[str] | None) -> None:
        self.follower = follower
        self.queues = queues
        self._pending = Update()
        self._ready = asyncio.Event()

    def offer(self, update: Update) -> None:
        part = update if self.queues is None else update.only(self.queues)
        if part:
            self._pending.merge(part)
            self._ready.set()

    def watch(self, queues: Iterable[str] | None) -> None:
        """The page now shows these queues (an overview paged or sorted anew): follow them from now on."""
        queues = None if queues is None else frozenset(queues)
        if queues == self.queues:
            return
        added = None if queues is None else queues - (self.queues or frozenset())
        self.queues = queues
        self.follower.refresh(added)

    async def next(self) -> Update:
        await self._ready.wait()
        self._ready.clear()
        update, self._pending = self._pending, Update()
        return update

    def close(self) -> None:
        self.follower.unsubscribe(self)


def _stream_id(text: str) -> tuple[int, int]:
    ms, _, seq = text.partition("-")
    return int(ms or 0), int(seq or 0)


def _signature(s: QueueStats) -> tuple[Any, ...]:
    return (tuple(s.counts.values()), s.due, s.lapsed, s.oldest_due_ms, s.next_due_ms, s.last_event_id)


class Follower:
    """Follows the queues that this process's open pages watch. Start it with :meth:`shared`."""

    _instances: ClassVar[dict[str, Follower]] = {}

    def __init__(self, url: str, *, poll_interval_s: float = POLL_INTERVAL_S,
                 publish_interval_s: float = PUBLISH_INTERVAL_S, block_ms: int = BLOCK_MS) -> None:
        self.url = url
        self.poll_interval_s = poll_interval_s
        self.publish_interval_s = publish_interval_s
        self.block_ms = block_ms
        # None until the first answer; then whether Redis answered the last call.
        self.up: bool | None = None
        self.error = ""
        self.now_ms = 0
        self.stats: dict[str, QueueStats] = {}
        self.errors: dict[str, str] = {}
        self.locations: dict[str, QueueLocation] = {}
        self.registered: list[str] = []
        self.throughput = Throughput()
        self.mq: AsyncEchoMQ | None = None
        self.cluster = False
        self._reader: AsyncClient | None = None
        self._subs: set[Subscription] = set()
        self._positions: dict[str, str] = {}
        self._pending = Update()
        self._dirty: set[str] = set()
        self._wake = asyncio.Event()
        self._poll_now = asyncio.Event()
        self._last_publish = 0.0
        self._last_bucket = 0
        self._seeding: set[asyncio.Task[None]] = set()
        self._seed_slots = asyncio.Semaphore(SEEDING_MAX)
        # When each queue's stats were read (monotonic s): with its stats, when its next known change is.
        self._read_at: dict[str, float] = {}
        # The server's time at its last stats answer, and when that was (monotonic s).
        self._clock: tuple[int, float] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # Lifecycle -------------------------------------------------------------

    @classmethod
    async def shared(cls, url: str, *, poll_interval_s: float = POLL_INTERVAL_S) -> Follower:
        """This process's follower for ``url``, started on first use (with these options)."""
        loop = asyncio.get_running_loop()
        follower = cls._instances.get(url)
        if follower is None or follower._loop is not loop or not follower.running_now:
            follower = cls(url, poll_interval_s=poll_interval_s)
            follower.start()
            cls._instances[url] = follower
        return follower

    @classmethod
    def running(cls, url: str) -> Follower | None:
        follower = cls._instances.get(url)
        return follower if follower is not None and follower.running_now else None

    @classmethod
    async def stop_all(cls) -> None:
        for follower in list(cls._instances.values()):
            if follower._loop is asyncio.get_running_loop():
                await follower.stop()
        cls._instances.clear()

    @property
    def running_now(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.create_task(self._run(), name=f"emq-follower {self.url}")

    async def stop(self) -> None:
        for task in [self._task, *self._seeding]:
            if task is not None:
                task.cancel()
        if self._task is not None:
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        await asyncio.gather(*self._seeding, return_exceptions=True)
        for client in (self.mq.redis if self.mq else None, self._reader):
            if client is not None:
                try:
                    await client.aclose()
                except Exception:  # a client of a server that is gone may fail to close
                    log.debug("closing a redis client failed", exc_info=True)

    # Subscribers -----------------------------------------------------------

    def subscribe(self, queues: Iterable[str] | None = None) -> Subscription:
        sub = Subscription(self, None if queues is None else frozenset(queues))
        self._subs.add(sub)
        self._poll_now.set()
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subs.discard(sub)

    def refresh(self, queues: Iterable[str] | None) -> None:
        """Reads these queues (None: every followed queue) at once, whatever was read of them before."""
        for queue in (self._read_at if queues is None else queues):
            self._read_at.pop(queue, None)
        self._poll_now.set()

    def next_change(self, queue: str) -> float | None:
        """When (monotonic s) the queue's counts change by time alone: its next due time or lease deadline."""
        stats, read_at = self.stats.get(queue), self._read_at.get(queue)
        if stats is None or read_at is None:
            return None
        times = [t for t in (stats.next_due_ms, stats.next_deadline_ms) if t is not None]
        return read_at + (min(times) - stats.now_ms) / 1000 + DEADLINE_SLACK_S if times else None

    def followed(self) -> list[str]:
        names: set[str] = set()
        every = False
        for sub in list(self._subs):
            if sub.queues is None:
                every = True
            else:
                names |= sub.queues
        if every:
            names.update(self.registered)
        return sorted(names)

    # The loops -------------------------------------------------------------

    async def _run(self) -> None:
        await self._connect()
        await asyncio.gather(self._poll_loop(), self._read_loop(), self._publish_loop())

    async def _connect(self) -> None:
        while True:
            try:
                self.cluster = await asyncio.to_thread(is_cluster_url, self.url, 2.0)
                break
            except (EmqError, OSError) as error:
                self._set_down(error)
                await asyncio.sleep(RETRY_S)
        self.mq = AsyncEchoMQ.from_url(self.url, actor="console", socket_timeout=2.0, cluster=self.cluster)
        # XREAD BLOCK holds its connection for block_ms: its timeout must be longer.
        self._reader = connect_async(self.url, socket_timeout=self.block_ms / 1000 + 3.0, cluster=self.cluster)

    async def _poll_loop(self) -> None:
        next_registry = next_sweep = 0.0
        while True:
            stop_if_cancelled()
            started = time.monotonic()
            self._poll_now.clear()
            try:
                if started >= next_registry and any(s.queues is None for s in list(self._subs)):
                    await self._refresh_registry()
                    next_registry = started + REGISTRY_INTERVAL_S
                followed = self.followed()
                # While Redis is away, every try is a whole sweep: the first answer brings everything back.
                sweep = started >= next_sweep or self.up is not True
                if sweep:
                    due, next_sweep = followed, started + self.poll_interval_s
                else:
                    due = [q for q in followed if q not in self._read_at
                           or (self.next_change(q) or float("inf")) <= started]
                if due or sweep:
                    await self._fetch_stats(due, from_poll=True)
            except _UNREACHABLE as error:
                self._set_down(error)
            except Exception:  # the loop must outlive anything odd Redis answers
                log.exception("the follower's poll failed")
            self._roll_buckets()
            # Sleep until the next known change of a followed queue, the safety net or the chart's next bucket.
            wake = min([next_sweep, self._next_bucket_at(),
                        *(t for q in self.followed() if (t := self.next_change(q)) is not None)])
            if self.up is not True:
                wake = min(wake, started + RETRY_S)
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for may drop the cancel that stops us.
                async with asyncio.timeout(max(0.02, wake - time.monotonic())):
                    await self._poll_now.wait()
            except TimeoutError:
                pass

    def _server_now_ms(self) -> int:
        """The server's time now, from its last answer and the time since (the pages' clock between reads);
        this machine's clock until the server has told its own (no queue followed yet)."""
        if self._clock is None:
            return max(self.now_ms, int(time.time() * 1000))
        server_ms, at = self._clock
        return max(self.now_ms, server_ms + int((time.monotonic() - at) * 1000))

    def _next_bucket_at(self) -> float:
        """When (monotonic s) the throughput chart's current bucket ends, by the server's clock."""
        bucket_ms = self.throughput.bucket_s * 1000
        return time.monotonic() + (bucket_ms - self._server_now_ms() % bucket_ms) / 1000

    async def _read_loop(self) -> None:
        while True:
            stop_if_cancelled()
            streams = {QueueKeys(q).events: self._positions[q] for q in self.followed() if q in self._positions}
            if not streams or not self.up:
                await asyncio.sleep(0.05)
                continue
            try:
                replies = await self._read(streams)
            except _UNREACHABLE as error:
                self._set_down(error)
                await asyncio.sleep(RETRY_S)
                continue
            except ResponseError as error:
                log.warning("reading events failed: %s", error)
                await asyncio.sleep(1.0)
                continue
            if replies:
                self._absorb_events(replies)
            elif self.cluster:
                await asyncio.sleep(CLUSTER_READ_INTERVAL_S)

    async def _read(self, streams: dict[Any, Any]) -> list[Any]:
        assert self._reader is not None
        if not self.cluster:
            return list(await self._reader.xread(streams, count=EVENT_BATCH, block=self.block_ms) or [])
        # A cluster cannot XREAD keys of different slots in one call (and cannot
        # block on several nodes at once): one non-blocking read per queue,
        # pipelined per node, every CLUSTER_READ_INTERVAL_S.
        replies: list[Any] = []
        items = list(streams.items())
        for start in range(0, len(items), CHUNK):
            pipe = self._reader.pipeline()
            for key, position in items[start:start + CHUNK]:
                pipe.xread({key: position}, count=EVENT_BATCH)
            for reply in await pipe.execute():
                replies += reply or []
        return replies

    async def _publish_loop(self) -> None:
        while True:
            stop_if_cancelled()
            await self._wake.wait()
            wait = self._last_publish + self.publish_interval_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._wake.clear()
            dirty, self._dirty = self._dirty, set()
            if dirty and self.up:
                try:
                    await self._fetch_stats(sorted(dirty), from_poll=False)
                except _UNREACHABLE as error:
                    self._set_down(error)
            update, self._pending = self._pending, Update()
            self._last_publish = time.monotonic()
            for sub in list(self._subs):
                sub.offer(update)

    # What the loops learn --------------------------------------------------

    async def _refresh_registry(self) -> None:
        assert self.mq is not None
        # known_queues: entries that are not queue names are left out, a registry of another type lists none.
        names = (await self.mq.known_queues()).names
        added = [n for n in names if n not in set(self.registered)]
        if self.registered and added:
            self._pending.queues_added += added
            self._wake.set()
        self.registered = names

    async def _fetch_stats(self, queues: list[str], *, from_poll: bool) -> None:
        assert self.mq is not None
        for start in range(0, len(queues), CHUNK):
            chunk = queues[start:start + CHUNK]
            seen = {q: self._positions.get(q) for q in chunk}
            results = await self.mq.run_many([reads.stats(q) for q in chunk])
            if from_poll and start == 0:
                self._set_up()
                seen = {q: self._positions.get(q) for q in chunk}
            for queue, result in zip(chunk, results):
                if isinstance(result, QueueStats):
                    self._absorb_stats(queue, result, seen[queue], from_poll)
                elif isinstance(result, _UNREACHABLE):
                    raise result
                else:
                    self.errors[queue] = str(result) if isinstance(result, EmqError) else repr(result)
                    # Its keys may be of another type (its events too): no XREAD of all queues may include it.
                    self._positions.pop(queue, None)
                    self._read_at[queue] = time.monotonic()
        if not queues and from_poll:
            await self.mq.ping()
            self._set_up()

    def _absorb_stats(self, queue: str, stats: QueueStats, seen: str | None, from_poll: bool) -> None:
        previous = self.stats.get(queue)
        self.stats[queue] = stats
        self._read_at[queue] = time.monotonic()
        self.errors.pop(queue, None)
        self.now_ms = max(self.now_ms, stats.now_ms)
        self._clock = (self.now_ms, time.monotonic())
        if queue not in self.locations and self.mq is not None:
            self.locations[queue] = self.mq.location(queue)
        last = stats.last_event_id
        if seen is None or (not last and seen != "0-0") or (last and _stream_id(last) < _stream_id(seen)):
            # New to us, or the stream is younger than our position (FLUSHALL,
            # a restart without persistence, a deleted stream): start at its end.
            self._positions[queue] = last or "0-0"
            if seen is not None:
                self._pending.touch(queue, None)
            elif last:
                task = asyncio.get_running_loop().create_task(self._seed_throughput(queue, last, stats.now_ms))
                self._seeding.add(task)
                task.add_done_callback(self._seeding.discard)
        if previous is None or _signature(previous) != _signature(stats):
            self._pending.stats[queue] = stats
            if from_poll and previous is not None and previous.last_event_id == last:
                # Changed without an event: a writer that emits none, or time
                # (a lease lapsed, a delayed job fell due). Any job may differ.
                self._pending.touch(queue, None)
            self._wake.set()

    async def _seed_throughput(self, queue: str, last: str, now_ms: int) -> None:
        """Fills the chart of a queue new to this process from the events of the last minutes.

        Reads at most SEED_EVENTS entries back from ``last`` (the position the
        live reading starts after). When it hits that cap, the bucket of the
        oldest entry read may be partial and is left out, so a bucket on the
        chart is either counted in full or shown empty, never undercounted.
        """
        assert self.mq is not None
        window_ms = self.throughput.buckets * self.throughput.bucket_s * 1000
        try:
            async with self._seed_slots:
                events = await self.mq.events(queue, up_to=last, since_ms=max(now_ms - window_ms, 0),
                                              count=SEED_EVENTS)
        except EmqError as error:
            log.info("no chart history for %s: %s", queue, error)
            return
        times = [_stream_id(event.id)[0] for event in events if event.move != "extend"]
        if len(times) >= SEED_EVENTS:
            partial = self.throughput.bucket_of(times[-1])
            times = [ms for ms in times if self.throughput.bucket_of(ms) != partial]
        for ms in times:
            self.throughput.add(queue, ms)

    def _absorb_events(self, replies: list[Any]) -> None:
        for key, entries in replies:
            if not entries:
                continue
            queue = queue_of_key(_text(key))
            if queue is None:
                continue
            # Moved on first: an entry that cannot be read is skipped, never read again and again.
            self._positions[queue] = _text(entries[-1][0])
            found: set[str] = set()
            ids: set[str] | None = found
            try:
                for entry_id, data in entries:
                    if not _is_heartbeat(data):
                        self.throughput.add(queue, _stream_id(_text(entry_id))[0])
                    job_id = data.get(b"id") or data.get("id")
                    if job_id:
                        found.add(_text(job_id))
            except Exception:  # as in the poll loop: one odd entry must not stop every page's updates
                log.exception("the follower could not read the events of %s", queue)
                ids = None
            # A full batch: we may be far behind (the stream is capped, so
            # some events may be gone). Say "anything may have changed"; the
            # counts are re-read below either way.
            self._pending.touch(queue, None if ids is None or len(entries) >= EVENT_BATCH else ids)
            self._dirty.add(queue)
        self._wake.set()

    def _roll_buckets(self) -> None:
        self.now_ms = self._server_now_ms()
        bucket = self.now_ms // (self.throughput.bucket_s * 1000)
        if bucket != self._last_bucket:
            self._last_bucket = bucket
            self.throughput.prune(self.now_ms)
            self._pending.tick = True
            self._wake.set()

    def _set_down(self, error: BaseException) -> None:
        message = str(error) or type(error).__name__
        if self.up is not False:
            log.warning("redis unreachable at %s: %s", self.url, message)
            self.up, self.error = False, message
            self._pending.up, self._pending.error = False, message
            self._wake.set()

    def _set_up(self) -> None:
        if self.up is True:
            return
        was_down = self.up is False
        self.up, self.error = True, ""
        self._pending.up, self._pending.error = True, ""
        if was_down:
            # Whatever happened while we could not look (a restart, a flush):
            # start every stream again at its end and re-render everything.
            self._positions.clear()
            for queue in self.followed():
                self._pending.touch(queue, None)
        self._wake.set()


def _is_heartbeat(data: dict[Any, Any]) -> bool:
    """An ``extend`` event moves a lease deadline, not a job: pages follow it, the chart does not count it."""
    return (data.get(b"move") or data.get("move")) in (b"extend", "extend")
