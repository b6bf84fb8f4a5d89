"""The state ``/metrics`` serves: read in the background, at a bounded rate, only while someone scrapes.

A scrape never reads a queue. One thread per console process walks the queue
registry with pipelined ``stats``, ``counts``, ``workers`` and ``why_queue`` reads (four read-only scripts per queue, in
chunks of ``CHUNK``; then the latency histograms of at most ``MAX_SLO_QUEUES`` queues with an
objective), at most ``EMQ_METRICS_QUEUES_PER_S`` queues a second, and
starts the next walk ``EMQ_METRICS_INTERVAL_S`` after the last one began. So
the Redis work per second is bounded whatever the scrape rate, and at 10,000
queues a walk takes about 10,000 / rate seconds. The exposition text is
rendered once per walk, so a scrape costs the same at 10 queues or 10,000.

The walk sleeps when nobody has scraped for ``IDLE_AFTER_S``: a console that
no Prometheus watches puts no load on Redis for its metrics.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final

from django.conf import settings

from dashboard.services import read
from queues import Refused, Unavailable, reads, slo, why
from queues.health import ServerHealth, server_health
from queues.reads import QueueStats

log = logging.getLogger(__name__)

CHUNK: Final = 500
IDLE_AFTER_S: Final = 600.0
# How long the first scrape of a process waits for the first walk before answering with what there is.
FIRST_WALK_WAIT_S: Final = 5.0
# Latency objectives: at most this many queues' status a walk, the burn rates read every walk (an hour
# and 6 hours of minutes, merged by the server), the window's attainment (days of hours) at most once
# per WINDOW_EVERY_S per queue, since a month moves little in a minute.
MAX_SLO_QUEUES: Final = 200
WINDOW_EVERY_S: Final = 300.0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One walk: the stats of every queue that could be read, and the server's health."""

    taken_at: float  # unix seconds, when the walk finished
    duration_s: float
    redis_up: bool
    health: ServerHealth | None
    stats: list[QueueStats]
    unreadable: int  # queues whose read failed (a cluster master down, say)
    rendered: bytes = b""
    # Per queue, its move counters (queues.reads.counts): kept in Redis by the moves, so the same for every process.
    counts: dict[str, dict[str, int]] = field(default_factory=dict)
    workers: dict[str, int] = field(default_factory=dict)  # per queue, its live workers
    reasons: dict[str, str] = field(default_factory=dict)  # per queue, the code of its first why reason
    slos: dict[str, slo.SloStatus] = field(default_factory=dict)  # per queue with an objective, how it stands


@dataclass
class Walker:
    """Reads snapshots one after the other; ``render`` turns one into exposition text."""

    render: Callable[[Snapshot], bytes]
    interval_s: float = 10.0
    queues_per_s: float = 2000.0
    idle_after_s: float = IDLE_AFTER_S
    snapshot: Snapshot | None = None
    last_scrape: float = 0.0
    _wake: threading.Event = field(default_factory=threading.Event)
    _walked: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # (queue, objective) -> (monotonic time read, attainment, measured)
    _windows: dict[tuple[str, slo.Slo], tuple[float, float | None, int]] = field(default_factory=dict)

    def scraped(self) -> Snapshot | None:
        """Notes a scrape (waking the walk if it slept) and returns the latest snapshot."""
        self.last_scrape = time.monotonic()
        self._ensure_started()
        self._wake.set()
        if self.snapshot is None:
            self._walked.wait(FIRST_WALK_WAIT_S)
        return self.snapshot

    def _ensure_started(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="emq-metrics", daemon=True)
                self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.snapshot = self.walk()
            except Exception:  # a walk that breaks must not end the thread: the next one tries again
                log.exception("metrics walk failed")
            self._walked.set()
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))
            if time.monotonic() - self.last_scrape > self.idle_after_s:
                self._wake.clear()
                if time.monotonic() - self.last_scrape > self.idle_after_s:  # no scrape slipped in meanwhile
                    self._wake.wait()

    def walk(self) -> Snapshot:
        started = time.monotonic()
        try:
            health = read(server_health)
            names = read(lambda mq: mq.known_queues()).names
        except Unavailable as error:
            log.warning("metrics: %s", error)
            snapshot = Snapshot(time.time(), time.monotonic() - started, False, None, [], 0)
            return _rendered(snapshot, self.render)
        stats: list[QueueStats] = []
        counts: dict[str, dict[str, int]] = {}
        workers: dict[str, int] = {}
        reasons: dict[str, str] = {}
        sweeper = read(lambda mq: mq.sweeper_lock())
        unreadable = 0
        for start in range(0, len(names), CHUNK):
            chunk_started = time.monotonic()
            chunk = names[start:start + CHUNK]
            try:
                # read() calls the lambda at once, while chunk is still this chunk.
                results = read(lambda mq: mq.run_many([reads.stats(q) for q in chunk]  # noqa: B023
                                                      + [reads.counts(q) for q in chunk]  # noqa: B023
                                                      + [reads.workers(q, limit=1) for q in chunk]  # noqa: B023
                                                      + [why.queue_evidence(q) for q in chunk]))  # noqa: B023
            except Unavailable:
                results = [Unavailable("unreachable")] * (4 * len(chunk))
            n = len(chunk)
            for name, result, counted, alive, evidence in zip(chunk, results[:n], results[n:2 * n],
                                                              results[2 * n:3 * n], results[3 * n:]):
                reasons[name] = (why.decide_queue(evidence, sweeper).top.code if isinstance(evidence, dict)
                                 else "unknown")
                if isinstance(result, QueueStats):
                    stats.append(result)
                    if isinstance(counted, dict):
                        counts[name] = counted
                    if isinstance(alive, reads.Workers):
                        workers[name] = alive.live
                else:
                    unreadable += 1
            # Hold the rate: a chunk of CHUNK queues takes at least CHUNK / queues_per_s seconds.
            rest = len(chunk) / self.queues_per_s - (time.monotonic() - chunk_started)
            if rest > 0 and start + CHUNK < len(names) and self._stop.wait(rest):
                break
        snapshot = Snapshot(time.time(), time.monotonic() - started, True, health, stats, unreadable, counts=counts,
                            workers=workers, reasons=reasons, slos=self._slo_statuses([s.queue for s in stats]))
        return _rendered(snapshot, self.render)

    def _slo_statuses(self, queues: list[str]) -> dict[str, slo.SloStatus]:
        try:
            found = read(lambda mq: mq.run(slo.slos()))
        except (Unavailable, Refused) as error:  # Redis down, or emq:slos of another type
            log.warning("metrics: objectives: %s", error)
            return {}
        if not found.slos:
            return {}
        chosen = [(q, o) for q in queues if (o := found.for_queue(q)) is not None][:MAX_SLO_QUEUES]
        now = time.monotonic()
        stale = [(q, o) for q, o in chosen if now - self._windows.get((q, o), (-WINDOW_EVERY_S, None, 0))[0]
                 >= WINDOW_EVERY_S]
        calls: list[Any] = [c for q, _ in chosen for c in slo.burn_calls(q)]
        calls += [c for q, o in stale for c in slo.window_calls(q, o)]
        try:
            results = read(lambda mq: mq.run_many(calls))
        except Unavailable as error:
            log.warning("metrics: objectives: %s", error)
            return {}
        statuses: dict[str, slo.SloStatus] = {}
        at = 2 * len(chosen)
        for q, o in stale:
            n = len(slo.window_calls(q, o))
            try:
                attainment, measured = slo.window_attainment(o, results[at:at + n])
                self._windows[(q, o)] = (now, attainment, measured)
            except Exception:  # one queue's odd data or refusal must not hide the others
                log.warning("metrics: the objective of %s could not be read", q)
            at += n
        for i, (q, o) in enumerate(chosen):
            cached = self._windows.get((q, o))
            try:
                burn = slo.burn_rates(o, results[2 * i:2 * i + 2])
            except Exception:  # as above
                continue
            if cached is not None:
                statuses[q] = slo.SloStatus(q, o, cached[1], cached[2], burn)
        keep = set(chosen)
        self._windows = {k: v for k, v in self._windows.items() if k in keep}
        return statuses


def _rendered(snapshot: Snapshot, render: Callable[[Snapshot], bytes]) -> Snapshot:
    return replace(snapshot, rendered=render(snapshot))


_walker: Walker | None = None
_walker_lock = threading.Lock()


def walker() -> Walker:
    """This process's walker (made on the first scrape)."""
    global _walker
    with _walker_lock:
        if _walker is None:
            from .exposition import render

            _walker = Walker(render, interval_s=float(settings.EMQ_METRICS_INTERVAL_S),
                             queues_per_s=float(settings.EMQ_METRICS_QUEUES_PER_S))
        return _walker


def walker_reset() -> None:
    """Stops and forgets this process's walker (tests point the console at another Redis)."""
    global _walker
    with _walker_lock:
        if _walker is not None:
            _walker.stop()
        _walker = None
