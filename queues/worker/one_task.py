"""The one-task engine: one async handler without prefetch, its round trips overlapped with its work.

With one handler and no prefetch the rounds of the pipelined engine cannot
overlap (the next claim waits for the handler), and each job there costs the
loop several wake-ups: the handler's task, the exchange, the round's task.
Here one task runs the handler and keeps one round trip in flight beside it:
as it starts a job it sends the last outcome and claims the next job (one
``finish_claim`` per job), so that Redis, the wire and the handler work at
the same time and a finished handler seldom waits a full round trip for its
next job. The handler runs on a task of its own (so that a lost lease cancels
the handler alone).

So a lone async handler holds two leases: the job it runs and the one
claimed ahead of it. A handler quicker than a round trip would still wait a
round trip per job: then it holds more jobs ahead, as many as
:class:`~queues.worker.depth.ClaimDepth` says (at most eight), and each
round reports every outcome ready and tops the jobs ahead up, so that a
round trip is always in flight while the handler runs and one
``finish_claim`` serves several jobs.

The jobs claimed ahead are leased from their claim like prefetched ones: the
heartbeat extends them, a refused extend drops one before it starts, and a
stop hands them back at once (``release``) without starting them, while the
running handler gets its grace period. The heartbeat, a lost lease and the
hand-back see every job in the same :class:`~queues.worker.ledger.Ledger`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque

from ..client import AsyncEchoMQ
from ..errors import Unavailable
from . import heartbeat
from .depth import ClaimDepth
from .handlers import Handler, error_text
from .ledger import Held, Ledger, Round
from .settings import WorkerSettings

log = logging.getLogger("queues.worker")


class OneTaskEngine:
    def __init__(self, settings: WorkerSettings, ledger: Ledger, handler: Handler, client: AsyncEchoMQ) -> None:
        self._settings = settings
        self._ledger = ledger
        self._handler = handler
        self._client = client
        self._wake = asyncio.Event()
        # The jobs claimed ahead of the running one (as many as depth wants), and the one round trip in flight.
        self._ahead: deque[Held] = deque()
        self._in_flight: asyncio.Task[None] | None = None
        self.depth = ClaimDepth()
        # Monotonic times before which no claim (an idle queue, a refusal) and no report (a resend) goes out.
        self._next_claim = self._next_report = 0.0
        ledger.on_lost = self._on_lost

    def busy(self) -> bool:
        """An async handler never outlives the worker: the hand-back cancels it."""
        return False

    def wake(self) -> None:
        self._wake.set()

    async def run(self, stop: asyncio.Event, hurry: asyncio.Event) -> None:
        """Works until stopped; lets the running handler finish for ``grace_ms``, then cancels it and hands its
        job back."""
        working = asyncio.create_task(self._one_by_one())
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([working, stopped], return_when=asyncio.FIRST_COMPLETED)
            self._ledger.stopping.set()
            self._wake.set()
            # The jobs claimed ahead go back now, not when the running handler is done.
            await self._release_ahead()
            if not working.done():
                hurried = asyncio.create_task(hurry.wait())
                await asyncio.wait([working, hurried], timeout=self._settings.grace_ms / 1000,
                                   return_when=asyncio.FIRST_COMPLETED)
                hurried.cancel()
            if not working.done():
                released = await heartbeat.hand_back(self._ledger, self._client, cancel_running=True)
                await asyncio.gather(*(h.running for h in released if h.running is not None), return_exceptions=True)
        finally:
            self._ledger.stopping.set()
            stopped.cancel()
            working.cancel()
            await asyncio.gather(working, stopped, return_exceptions=True)
        if not working.cancelled() and working.exception() is not None:
            raise working.exception()  # type: ignore[misc]

    async def _one_by_one(self) -> None:
        ledger = self._ledger
        try:
            while True:
                if ledger.stopping.is_set():
                    await self._wind_down()
                    return
                flight = self._in_flight
                if flight is not None and flight.done():
                    self._in_flight = None
                    flight.result()  # a round's unexpected error stops the worker, as serve() documents
                job = self._ahead.popleft() if self._ahead else None
                if self._in_flight is None:
                    # Sent before the handler starts, so that it travels while the handler works.
                    self._send_round()
                if job is not None:
                    await self._run(job)
                elif self._in_flight is not None:
                    await asyncio.wait([self._in_flight])
                else:
                    await self._sleep(self._idle_until() - time.monotonic())
        finally:
            if self._in_flight is not None:
                # Not cancelled: its claim may have run, and what it took must be booked (and handed back).
                await asyncio.wait([self._in_flight])

    def _send_round(self) -> None:
        """Starts a round trip with the outcomes ready and, when fewer jobs wait than wanted, a claim of the
        rest."""
        now = time.monotonic()
        claim = 0 if now < self._next_claim else max(0, self.depth.wanted() - len(self._ahead))
        reports = self._ledger.take_reports() if now >= self._next_report else []
        if reports or claim:
            self._in_flight = asyncio.create_task(self._round_trip(self._ledger.round(reports, claim)))

    def _idle_until(self) -> float:
        """When the next round may go out (nothing runs and nothing is in flight)."""
        return min(self._next_claim, self._next_report) if self._ledger.ready() else self._next_claim

    async def _round_trip(self, rnd: Round) -> None:
        ledger = self._ledger
        sent = time.monotonic()
        try:
            results = await self._client.run_many(rnd.calls)
        except Unavailable as error:
            self._next_claim = self._next_report = time.monotonic() + ledger.book_unreachable(rnd, error)
            return
        self.depth.trip_took(time.monotonic() - sent)
        # Booked here, as the answer arrives: the claimed job is held (and heartbeated) from now on.
        outcome = ledger.book_round(rnd, results)
        now = time.monotonic()
        self._next_report = now + outcome.resend_after
        claimed = outcome.claimed
        if claimed is None:
            return
        self._next_claim = now + claimed.wait
        self._ahead.extend(claimed.start)
        # Claimed while the worker was stopping: handed back at once, never started.
        await heartbeat.release(ledger, self._client, claimed.release)

    async def _wind_down(self) -> None:
        """Stopping: the jobs claimed ahead go back at once; the outcomes ready are reported."""
        ledger = self._ledger
        if self._in_flight is not None:
            await asyncio.wait([self._in_flight])
            flight, self._in_flight = self._in_flight, None
            flight.result()
        await self._release_ahead()
        while reports := ledger.take_reports():
            rnd = ledger.round(reports, claim=0)
            try:
                results = await self._client.run_many(rnd.calls)
            except Unavailable as error:
                await asyncio.sleep(ledger.book_unreachable(rnd, error))
                continue
            resend_after = ledger.book_round(rnd, results).resend_after
            if resend_after:
                await asyncio.sleep(resend_after)

    async def _release_ahead(self) -> None:
        """Stopping: hands back the jobs claimed ahead (marked handed back before the first await, so that
        the loop never starts them)."""
        ahead = [h for h in self._ahead if self._ledger.book_started(h) == "release"]
        self._ahead.clear()
        await heartbeat.release(self._ledger, self._client, ahead)

    async def _run(self, h: Held) -> None:
        start = self._ledger.book_started(h)
        if start == "release":
            await heartbeat.release(self._ledger, self._client, [h])
        if start != "start":
            return
        began = time.monotonic()
        task = h.running = asyncio.create_task(self._handler(h.job))  # type: ignore[arg-type]
        # Waited on, not awaited: a lost lease cancels the handler's task, and that must not cancel this one.
        await asyncio.wait([task])
        self.depth.handler_took(time.monotonic() - began)
        cancelled = task.cancelled()
        error = None if cancelled else task.exception()
        self._ledger.book_outcome(h, cancelled=cancelled, error=error,
                                  error_text=error_text(error) if error is not None else "")

    async def _sleep(self, seconds: float) -> None:
        """Sleeps at most ``seconds``; a stop wakes it."""
        self._wake.clear()
        if self._ledger.stopping.is_set() or seconds <= 0:
            return
        await heartbeat.wait(self._wake, seconds)

    def _on_lost(self, h: Held) -> None:
        if h.started and not h.finished and h.running is not None:
            h.running.cancel()
