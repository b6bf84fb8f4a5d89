"""The one-task engine: one async handler without prefetch, each job's round trip and handler in one task.

With one handler and no prefetch the rounds of the pipelined engine cannot
overlap (the next claim waits for the handler), and each job there costs the
loop several wake-ups: the handler's task, the exchange, the round's task. Here
one task reports the last outcome and claims the next job (one ``finish_claim``
per job), awaits the handler on a task of its own (so that a lost lease cancels
the handler alone), and goes round again. The heartbeat, a lost lease and the
hand-back stay as they are and see the job in the same
:class:`~queues.worker.ledger.Ledger`.
"""

from __future__ import annotations

import asyncio
import logging

from ..client import AsyncEchoMQ
from ..errors import Unavailable
from . import heartbeat
from .handlers import Handler, error_text
from .ledger import Held, Ledger
from .settings import WorkerSettings

log = logging.getLogger("queues.worker")


class OneTaskEngine:
    def __init__(self, settings: WorkerSettings, ledger: Ledger, handler: Handler, client: AsyncEchoMQ) -> None:
        self._settings = settings
        self._ledger = ledger
        self._handler = handler
        self._client = client
        self._wake = asyncio.Event()
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
        ledger, client = self._ledger, self._client
        stopping = ledger.stopping
        while True:
            stopped = stopping.is_set()
            reports = ledger.take_reports()
            if stopped and not reports:
                return
            rnd = ledger.round(reports, claim=0 if stopped else 1)
            try:
                results = await client.run_many(rnd.calls)
            except Unavailable as error:
                await self._sleep(ledger.book_unreachable(rnd, error))
                continue
            outcome = ledger.book_round(rnd, results)
            claimed = outcome.claimed
            if claimed is not None and claimed.release:
                await heartbeat.release(ledger, client, claimed.release)
            wait = max(outcome.resend_after, claimed.wait if claimed is not None else 0.0)
            if wait:
                await self._sleep(wait)
            if claimed is None:
                continue
            for h in claimed.start:
                await self._run(h)

    async def _run(self, h: Held) -> None:
        start = self._ledger.book_started(h)
        if start == "release":
            await heartbeat.release(self._ledger, self._client, [h])
        if start != "start":
            return
        task = h.running = asyncio.create_task(self._handler(h.job))  # type: ignore[arg-type]
        # Waited on, not awaited: a lost lease cancels the handler's task, and that must not cancel this one.
        await asyncio.wait([task])
        cancelled = task.cancelled()
        error = None if cancelled else task.exception()
        self._ledger.book_outcome(h, cancelled=cancelled, error=error,
                                  error_text=error_text(error) if error is not None else "")

    async def _sleep(self, seconds: float) -> None:
        """Sleeps at most ``seconds``; a stop wakes it."""
        self._wake.clear()
        if self._ledger.stopping.is_set():
            return
        await heartbeat.wait(self._wake, seconds)

    def _on_lost(self, h: Held) -> None:
        if h.started and not h.finished and h.running is not None:
            h.running.cancel()
