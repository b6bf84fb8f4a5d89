"""The one-thread engine: one sync handler without prefetch, the job's whole life on one thread.

With one handler and no prefetch the rounds of the pipelined engine cannot
overlap (the next claim waits for the handler), and for a sync handler each
job would cross from the loop to a thread and back. Here the handler's thread
makes its round trips itself, blocking, on a connection of its own
(:class:`~queues.client.BlockingRunner`): one round trip per job (the last
outcome and the next claim) and no loop hop. A handler quicker than a round
trip gets several jobs per claim instead, as many as
:class:`~queues.worker.depth.ClaimDepth` says (at most eight), and the next
round reports all their outcomes at once. The heartbeat, a lost lease and
the hand-back stay on the loop and see the job in the same
:class:`~queues.worker.ledger.Ledger`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from ..client import AsyncEchoMQ, BlockingRunner
from ..errors import Unavailable
from . import heartbeat
from .depth import ClaimDepth
from .handlers import Handler, error_text
from .ledger import Held, Ledger
from .settings import WorkerSettings

log = logging.getLogger("queues.worker")


class SingleThreadEngine:
    def __init__(self, settings: WorkerSettings, ledger: Ledger, handler: Handler, client: AsyncEchoMQ,
                 runner: BlockingRunner) -> None:
        self._settings = settings
        self._ledger = ledger
        self._handler = handler
        self._client = client
        self._runner = runner
        self._busy = False
        self.depth = ClaimDepth()

    def busy(self) -> bool:
        """Whether the handler still runs (Python cannot stop a thread)."""
        return self._busy

    def wake(self) -> None:
        """The thread sleeps on the ledger's ``stopping`` event, which wakes it."""

    async def run(self, stop: asyncio.Event, hurry: asyncio.Event) -> None:
        """Runs the thread until stopped; hands its job back if the grace period runs out."""
        working = self._start_thread()
        stopped: asyncio.Future[Any] = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([working, stopped], return_when=asyncio.FIRST_COMPLETED)
            self._ledger.stopping.set()
            if not working.done():
                hurried: asyncio.Future[Any] = asyncio.create_task(hurry.wait())
                await asyncio.wait([working, hurried], timeout=self._settings.grace_ms / 1000,
                                   return_when=asyncio.FIRST_COMPLETED)
                hurried.cancel()
            if not working.done():
                await heartbeat.hand_back(self._ledger, self._client, cancel_running=False)
        finally:
            self._ledger.stopping.set()
            stopped.cancel()
            working.cancel()
            await asyncio.gather(working, stopped, return_exceptions=True)
        if not working.cancelled() and working.exception() is not None:
            raise working.exception()  # type: ignore[misc]

    def _start_thread(self) -> asyncio.Future[None]:
        """Starts :meth:`_one_by_one`; the future is done when it returns."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()

        def settle(error: BaseException | None) -> None:
            if not finished.done():
                finished.set_result(None) if error is None else finished.set_exception(error)

        def work() -> None:
            error: BaseException | None = None
            try:
                self._one_by_one()
            except BaseException as raised:  # handed to the loop, which raises it from serve()
                error = raised
            finally:
                self._runner.close()
            try:
                loop.call_soon_threadsafe(settle, error)
            except RuntimeError:  # the loop is closed: the worker has stopped
                pass

        threading.Thread(target=work, name=f"emq-{self._settings.queue}", daemon=True).start()
        return finished

    def _one_by_one(self) -> None:
        ledger, runner = self._ledger, self._runner
        stopping = ledger.stopping
        while True:
            stopped = stopping.is_set()
            reports = ledger.take_reports()
            if stopped and not reports:
                return
            rnd = ledger.round(reports, claim=0 if stopped else self.depth.wanted())
            sent = time.monotonic()
            try:
                results = runner.run_many(rnd.calls)
            except Unavailable as error:
                stopping.wait(ledger.book_unreachable(rnd, error))
                continue
            self.depth.trip_took(time.monotonic() - sent)
            outcome = ledger.book_round(rnd, results)
            claimed = outcome.claimed
            if claimed is not None and claimed.release:
                self._release(claimed.release)
            wait = max(outcome.resend_after, claimed.wait if claimed is not None else 0.0)
            if wait:
                stopping.wait(wait)
            if claimed is None or not claimed.start:
                continue
            for n, h in enumerate(claimed.start):
                if stopping.is_set():
                    # The jobs of this claim not started yet go back in one round trip.
                    rest = [later for later in claimed.start[n:] if ledger.book_started(later) == "release"]
                    if rest:
                        self._release(rest)
                    break
                self._run(h)

    def _run(self, h: Held) -> None:
        start = self._ledger.book_started(h)
        if start != "start":
            if start == "release":
                self._release([h])
            return
        error: BaseException | None = None
        self._busy = True
        began = time.monotonic()
        try:
            self._handler(h.job)
        except BaseException as raised:  # the handler's error is the job's outcome
            error = raised
        finally:
            self._busy = False
        self.depth.handler_took(time.monotonic() - began)
        self._ledger.book_outcome(h, cancelled=False, error=error,
                                  error_text=error_text(error) if error is not None else "")

    def _release(self, targets: list[Held]) -> None:
        ledger = self._ledger
        calls = ledger.release_calls(targets)
        try:
            results = self._runner.run_many(calls)
        except Unavailable as error:
            ledger.book_released(targets, error)
            return
        ledger.book_released(targets, results)
