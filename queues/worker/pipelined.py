"""The pipelined engine: rounds of outcomes out and new jobs in, up to two in flight, handlers beside them.

Every round trip to Redis reports the completions and failures that are ready
and claims up to as many jobs as there are free slots, in one ``finish_claim``
script (one pipeline of ``complete_many``, ``fail`` and ``claim`` when it
claims nothing or reports more than 1000). Two such rounds may be in flight
at once (each claiming at most half the slots), so that Redis and the handlers
work at the same time. A job holds its slot from its claim until its outcome
is acknowledged, so the worker never holds more leases than
``concurrency + prefetch``. Without a prefetch, handlers quicker than a round
trip and than ``FAST_HANDLER_S`` (:mod:`.depth`, the rule a lone handler's
depth follows) get ``concurrency`` slots more while they stay so: each round
then reports and claims twice the jobs, in one script, and a job claimed
ahead waits behind handlers of under a millisecond. One slow job takes the
extra slots away at once; the jobs already held run, and no claim is made
until the worker is back under ``concurrency``.

An async handler runs as a task on the loop; a sync one on one of
``concurrency`` :class:`~queues.worker.handlers.HandlerThreads`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..client import AsyncEchoMQ
from ..errors import Unavailable
from . import heartbeat
from .depth import ClaimDepth
from .handlers import Handler, HandlerThreads, error_text, is_async
from .ledger import Held, Ledger, Round
from .settings import WorkerSettings

log = logging.getLogger("queues.worker")

MAX_ROUNDS_IN_FLIGHT = 2


class PipelinedEngine:
    def __init__(self, settings: WorkerSettings, ledger: Ledger, handler: Handler, client: AsyncEchoMQ) -> None:
        self._settings = settings
        self._ledger = ledger
        self._handler = handler
        self._client = client
        self._async = is_async(handler)
        self._threads: HandlerThreads | None = None
        self._waiting: deque[Held] = deque()
        self._running = 0
        self._wake = asyncio.Event()
        self._interrupt = asyncio.Event()
        self._in_grace = False
        self._stop = asyncio.Event()
        # Rounds and releases in flight.
        self._rounds: set[asyncio.Task[None]] = set()
        self._reporting = self._claiming = 0
        self.depth = ClaimDepth()
        self._next_claim = self._pause_until = 0.0
        ledger.on_lost = self._on_lost

    def slots(self) -> int:
        """The most leases to hold now: ``concurrency + prefetch``, or twice ``concurrency`` while handlers without a
        prefetch are quicker than a round trip and than ``FAST_HANDLER_S``."""
        settings = self._settings
        if settings.prefetch or self.depth.wanted() == 1:
            return settings.slots
        return 2 * settings.concurrency

    def _round_size(self, slots: int) -> int:
        # Two rounds of half the slots each keep Redis and this process busy at the same time.
        return min(self._settings.batch, -(-slots // 2) if slots >= 4 else slots)

    def claim_size(self, free: int, slots: int) -> int:
        """How many jobs the next round claims: never fewer than none, so a worker over its slots (they shrank
        when a handler was slow) claims nothing until it is back under them, and never books a negative claim
        that would count as slots freed while its round is in flight."""
        return max(0, min(free, self._round_size(slots)))

    def busy(self) -> bool:
        """Whether a sync handler still runs on a thread (Python cannot stop one)."""
        return self._threads is not None and self._threads.busy()

    def wake(self) -> None:
        # A stop or a hurry wakes both sleeps: the idle one and the back-off after a connection error.
        self._wake.set()
        self._interrupt.set()

    async def run(self, stop: asyncio.Event, hurry: asyncio.Event) -> None:
        """Starts rounds (outcomes out, a claim for the free slots in) until stopped, then lets the running
        handlers finish for ``grace_ms`` and hands back the rest."""
        self._stop = stop
        if not self._async:
            self._threads = HandlerThreads(self._handler, self._settings.concurrency, f"emq-{self._settings.queue}",
                                           asyncio.get_running_loop())
        try:
            await self._exchange(stop, hurry)
        finally:
            if self._threads is not None:
                self._threads.shutdown()

    async def _exchange(self, stop: asyncio.Event, hurry: asyncio.Event) -> None:
        ledger, settings = self._ledger, self._settings
        rounds = self._rounds
        grace_end: float | None = None
        try:
            while True:
                now = time.monotonic()
                if stop.is_set() and grace_end is None:
                    ledger.stopping.set()
                    grace_end = now + settings.grace_ms / 1000
                    self._in_grace = True
                    self._waiting.clear()
                    self._spawn(rounds, heartbeat.release(ledger, self._client, ledger.not_started()))
                    continue
                if grace_end is not None:
                    if not ledger.holding() and not rounds:
                        return
                    if now >= grace_end or hurry.is_set():
                        if rounds:
                            await asyncio.wait(rounds)
                        released = await heartbeat.hand_back(ledger, self._client, cancel_running=self._async)
                        if self._async:
                            await asyncio.gather(*(h.running for h in released if h.running is not None),
                                                 return_exceptions=True)
                        return
                if now < self._pause_until:
                    await self._sleep(self._pause_until - now, self._interrupt, stop, hurry)
                    continue
                if len(rounds) >= MAX_ROUNDS_IN_FLIGHT:
                    await self._sleep(None, self._wake, stop, hurry)
                    continue
                ready = ledger.ready()
                slots = self.slots()
                free = slots - ledger.holding() + self._reporting - self._claiming + ready
                want = self.claim_size(free, slots) if grace_end is None and now >= self._next_claim else 0
                if not ready and want <= 0:
                    timeout = grace_end - now if grace_end is not None else self._next_claim - now if free > 0 else None
                    await self._sleep(timeout, self._wake, stop, hurry, ready=ledger.ready)
                    continue
                reports = ledger.take_reports()
                # Booked before the round's task first runs, so the next pass sees these slots as taken.
                self._reporting += len(reports)
                self._claiming += want
                self._spawn(rounds, self._round(ledger.round(reports, want)))
        finally:
            if rounds:
                await asyncio.wait(rounds)

    def _spawn(self, rounds: set[asyncio.Task[None]], work: Any) -> None:
        task = asyncio.create_task(work)
        rounds.add(task)
        task.add_done_callback(lambda done: self._round_done(rounds, done))

    def _round_done(self, rounds: set[asyncio.Task[None]], done: asyncio.Task[None]) -> None:
        # Woken only once the round has left the set, so the loop never waits on a finished round.
        rounds.discard(done)
        self._wake.set()
        if not done.cancelled() and done.exception() is not None:
            log.error("a round failed: %s", done.exception())

    async def _round(self, rnd: Round) -> None:
        ledger = self._ledger
        sent = time.monotonic()
        try:
            results = await self._client.run_many(rnd.calls)
            self.depth.trip_took(time.monotonic() - sent)
        except Unavailable as error:
            self._pause_until = self._next_claim = time.monotonic() + ledger.book_unreachable(rnd, error)
            return
        finally:
            self._reporting -= len(rnd.reports)
            self._claiming -= rnd.claim
        if self._stop.is_set():
            # Stopping, though the loop may not have seen it yet: what this claim took is handed back.
            ledger.stopping.set()
        outcome = ledger.book_round(rnd, results)
        now = time.monotonic()
        if outcome.resend_after:
            self._pause_until = now + outcome.resend_after
        claimed = outcome.claimed
        if claimed is None:
            return
        self._next_claim = now + claimed.wait
        for h in claimed.start:
            if self._running < self._settings.concurrency:
                self._start(h)
            else:
                self._waiting.append(h)
        await heartbeat.release(ledger, self._client, claimed.release)

    async def _sleep(self, timeout: float | None, event: asyncio.Event, stop: asyncio.Event, hurry: asyncio.Event,
                     ready: Callable[[], int] = lambda: 0) -> None:
        """Sleeps ``timeout`` seconds at most, until ``event``; a stop or a hurry wakes it too."""
        if timeout is not None and timeout <= 0:
            return
        event.clear()
        # Callbacks run on this loop, so nothing can be set between the clear and these checks.
        if ready() or (stop.is_set() and not self._in_grace) or hurry.is_set():
            return
        if timeout is None:
            await event.wait()
            return
        await heartbeat.wait(event, timeout)

    # Handlers ------------------------------------------------------------------

    def _start(self, h: Held) -> None:
        start = self._ledger.book_started(h)
        if start == "release":
            self._spawn(self._rounds, heartbeat.release(self._ledger, self._client, [h]))
        if start != "start":
            return
        self._running += 1
        began = time.monotonic()
        if self._async:
            h.running = asyncio.get_running_loop().create_task(self._handler(h.job))  # type: ignore[arg-type]
        else:
            assert self._threads is not None
            h.running = self._threads.submit(h.job)
        h.running.add_done_callback(lambda future: self._finished(h, future, began))

    def _start_waiting(self) -> None:
        while self._waiting and self._running < self._settings.concurrency and not self._in_grace:
            h = self._waiting.popleft()
            if not h.gone:
                self._start(h)

    def _finished(self, h: Held, future: asyncio.Future[Any], began: float) -> None:
        # A sync handler's time counts its wait for a thread and for the loop too: never shorter than it ran.
        self.depth.handler_took(time.monotonic() - began)
        self._running -= 1
        self._start_waiting()
        cancelled = future.cancelled()
        error = None if cancelled else future.exception()
        self._ledger.book_outcome(h, cancelled=cancelled, error=error,
                                  error_text=error_text(error) if error is not None else "")
        self._wake.set()

    def _on_lost(self, h: Held) -> None:
        if h.started and not h.finished:
            if self._async and h.running is not None:
                h.running.cancel()
        else:
            self._wake.set()
