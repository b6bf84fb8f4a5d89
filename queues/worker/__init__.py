"""The worker runner: claims jobs, runs a handler on each, reports the outcome.

A handler is a callable taking a :class:`~queues.ClaimedJob`: returning means
complete, raising means fail (the error text is kept as ``last_error`` and the
job is retried after a backoff while attempts remain). A plain function runs
on one of ``concurrency`` handler threads; a coroutine function is awaited on
the worker's loop.

The worker is made of parts, each in its own module: a ledger of the jobs it
holds (:mod:`.ledger`: every claim, outcome, report and release is booked
there, once), three engines that run handlers and make the round trips (the
pipelined one in :mod:`.pipelined`; for one handler without prefetch, the
one-thread one in :mod:`.single` for a sync handler on standalone Redis and the
one-task one in :mod:`.one_task` for an async handler), the heartbeat and the
hand-back they share (:mod:`.heartbeat`), and this facade, which checks the
settings, connects, picks the engine and handles signals.

In steady state each round trip reports the outcomes that are ready and claims
the next jobs. ``prefetch`` (default 0) lets the worker claim that many jobs
ahead of its running handlers, so that a finished handler starts its next job
without waiting for a round trip. A prefetched job is leased from its claim:
the heartbeat extends it like any other, a refused extend drops it before it
starts, and a stop hands it back at once. With the default no job waits: a
handler starts as soon as its job is claimed; but a lone async handler (the
default ``concurrency=1``) claims its next job as it starts one, so that the
round trip travels while it works (:mod:`.one_task`): that job is leased,
heartbeated and handed back on a stop like a prefetched one. A lone handler
quicker than a round trip holds more, up to a round trip's worth of jobs
(:mod:`.depth`); so do several handlers without prefetch that are that quick:
as many jobs again as there are handlers (:mod:`.pipelined`). A heartbeat extends every held
lease each ``lease_ms / 3``; a job whose extend is refused is lost (an operator
cancelled it, or it lapsed and was recovered): its result is never reported and
an async handler is cancelled. The same heartbeat sweeps lapsed leases of dead
workers back with ``recover_expired``.

When Redis is over ``maxmemory`` it refuses every move but ``extend`` before
running it (``OutOfMemory``): the worker then keeps the outcomes its handlers
reported, claims nothing, and sends them again with a growing pause (up to
5 s), while the heartbeat keeps their leases; so a job whose handler returned
is completed once Redis has room, not lost to a lapsed lease.

On SIGTERM (or when the ``stop`` event of :meth:`Worker.serve` is set) the
worker stops claiming and no handler starts any more (from the moment Python
sees the signal, before the loop has run anything else): every job not yet
started (prefetched, or returned by a claim that was in flight) is handed back
at once with the ``release`` move; running handlers get ``grace_ms`` to finish,
then their jobs are handed back too, so no job is left in limbo.

With ``wait_replicas=N`` every move is followed by ``WAIT N wait_timeout_ms``
on the same connection (PROTOCOL.md, "WAIT"); a move fewer replicas
acknowledged is counted in ``stats.not_replicated`` and logged.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from typing import Protocol

from .. import moves
from ..client import AsyncEchoMQ, default_actor
from ..errors import InvalidInput
from ..keys import validate_queue_name
from . import heartbeat
from .handlers import Handler, HandlerThreads, error_text, event_loop_factory, is_async, load_handler
from .ledger import Ledger, WorkerStats
from .one_task import OneTaskEngine
from .pipelined import PipelinedEngine
from .settings import WorkerSettings, detect_release
from .single import SingleThreadEngine

log = logging.getLogger("queues.worker")

MAX_BACKOFF_S = 5.0


class Engine(Protocol):
    async def run(self, stop: asyncio.Event, hurry: asyncio.Event) -> None: ...

    def wake(self) -> None: ...

    def busy(self) -> bool: ...


class Worker:
    """Runs ``handler`` on the jobs of ``queue``, ``concurrency`` at a time.

    Give either ``url`` (a client is made and closed by the worker) or an
    :class:`AsyncEchoMQ` ``client``. ``prefetch`` is how many jobs may wait,
    leased, for a free handler (see the module's notes). ``batch`` caps the jobs claimed in one
    call (up to 1000); ``grace_ms`` is how long a shutdown waits for running
    handlers; ``poll_ms`` is the longest idle sleep between claims. ``wait_replicas`` and
    ``wait_timeout_ms`` make the worker's own client follow each move with ``WAIT`` (with ``client``,
    give them to the client instead).
    """

    def __init__(self, *, queue: str, handler: Handler | str, concurrency: int = 1, prefetch: int = 0,
                 lease_ms: int = 30_000,
                 backoff_ms: int = 1_000, url: str | None = None, client: AsyncEchoMQ | None = None,
                 batch: int = 100, grace_ms: int = 10_000, poll_ms: int = 200, actor: str | None = None,
                 wait_replicas: int = 0, wait_timeout_ms: int = 1000, release: str | None = None) -> None:
        self.queue = validate_queue_name(queue)
        self.handler: Handler = load_handler(handler) if isinstance(handler, str) else handler
        if not callable(self.handler):
            raise InvalidInput(f"handler must be callable, not {type(self.handler).__name__}")
        if client is not None and url is not None:
            raise InvalidInput("give either url or client, not both")
        if client is not None and wait_replicas:
            raise InvalidInput("give wait_replicas to the client (AsyncEchoMQ(..., wait_replicas=N)), not the worker")
        self.actor = actor or (client.actor if client is not None else default_actor())
        self.settings = WorkerSettings(
            queue=self.queue, actor=self.actor,
            concurrency=moves._int(concurrency, "concurrency", 1, 10_000),
            prefetch=moves._int(prefetch, "prefetch", 0, 10_000),
            lease_ms=moves._int(lease_ms, "lease_ms", 100, 86_400_000),
            backoff_ms=moves._int(backoff_ms, "backoff_ms", 0, 86_400_000),
            batch=moves._int(batch, "batch", 1, moves.MAX_BATCH),
            grace_ms=moves._int(grace_ms, "grace_ms", 0, 86_400_000),
            poll_ms=moves._int(poll_ms, "poll_ms", 1, 60_000),
            started_ms=int(time.time() * 1000),
            release=detect_release() if release is None else release)
        self.concurrency, self.prefetch = self.settings.concurrency, self.settings.prefetch
        self.lease_ms, self.grace_ms = self.settings.lease_ms, self.settings.grace_ms
        self.wait_replicas = moves._int(wait_replicas, "wait_replicas", 0, 100)
        self.wait_timeout_ms = moves._int(wait_timeout_ms, "wait_timeout_ms", 0, 3_600_000)
        self._url = url
        self._client = client
        self.ledger = Ledger(queue=self.queue, actor=self.actor, lease_ms=self.settings.lease_ms,
                             backoff_ms=self.settings.backoff_ms, poll_ms=self.settings.poll_ms)
        self._hurry = asyncio.Event()
        self._engine: Engine | None = None

    @property
    def stats(self) -> WorkerStats:
        return self.ledger.stats

    # Entry points ------------------------------------------------------------

    def run(self) -> WorkerStats:
        """Blocks until SIGTERM or SIGINT (a second one skips the rest of the grace period).

        When sync handlers are still running after their jobs were handed
        back, the process exits (status 0) instead of returning: Python cannot
        stop a thread, and waiting for it would keep the process alive for nothing.
        """
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            stats = runner.run(self._serve_until_signalled())
        if self._engine is not None and self._engine.busy():
            log.warning("handler threads still running after their jobs were handed back; exiting")
            logging.shutdown()
            sys.stdout.flush()
            os._exit(0)
        return stats

    async def _serve_until_signalled(self) -> WorkerStats:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            if stop.is_set():
                log.info("second %s: handing back running jobs now", signal.Signals(signum).name)
                self._hurry.set()
                self._wake()
            else:
                log.info("%s: stopping; running handlers get %d ms", signal.Signals(signum).name, self.grace_ms)
                # Before the loop runs anything else: a claim answered from now on starts no handler.
                self.ledger.stopping.set()
                stop.set()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)
            # The loop runs on_signal on its next turn, after callbacks already due (a claim's reply that
            # would start a handler, say); Python runs this one on the main thread as soon as it sees the
            # signal, so that from then on no handler starts. The loop is still woken to run on_signal.
            signal.signal(signum, self._stopping_now)
        try:
            return await self.serve(stop)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    def _stopping_now(self, signum: int, frame: object) -> None:
        self.ledger.stopping.set()

    async def serve(self, stop: asyncio.Event | None = None) -> WorkerStats:
        """Works until ``stop`` is set, then shuts down gracefully; returns the tallies."""
        stop = stop or asyncio.Event()
        self.ledger.stopping.clear()
        client = self._client or await self._connect(stop)
        if client is None:
            return self.stats
        engine = self._engine = self._make_engine(client)
        watcher = asyncio.create_task(self._relay(stop))
        stopped = asyncio.Event()
        await heartbeat.register(self.settings, self.ledger, client)
        beating = asyncio.create_task(heartbeat.beat(self.settings, self.ledger, client, stopped))
        log.info("worker %s on %s: concurrency %d, lease %d ms", self.actor, self.queue, self.concurrency,
                 self.lease_ms)
        try:
            await engine.run(stop, self._hurry)
        finally:
            # The heartbeat is told to stop, not cancelled: on Python 3.11 a cancel
            # that lands as a Redis reply arrives can be lost inside the client,
            # and the heartbeat would then beat on and keep serve() from returning.
            stopped.set()
            watcher.cancel()
            await asyncio.gather(beating, watcher, return_exceptions=True)
            await heartbeat.register(self.settings, self.ledger, client, leaving=True)
            if self._client is None:
                await client.close()
        log.info("worker %s stopped: %s", self.actor, self.stats)
        return self.stats

    def _make_engine(self, client: AsyncEchoMQ) -> Engine:
        # One handler without prefetch: a sync one works on a thread and connection of its own, an async one
        # in one task.
        if self.concurrency == 1 and not self.prefetch:
            if is_async(self.handler):
                return OneTaskEngine(self.settings, self.ledger, self.handler, client)
            runner = client.blocking_runner()
            if runner is not None:
                return SingleThreadEngine(self.settings, self.ledger, self.handler, client, runner)
        return PipelinedEngine(self.settings, self.ledger, self.handler, client)

    async def _connect(self, stop: asyncio.Event) -> AsyncEchoMQ | None:
        delay = 0.1
        while not stop.is_set():
            try:
                return await asyncio.to_thread(AsyncEchoMQ.from_url, self._url, actor=self.actor,
                                               wait_replicas=self.wait_replicas, wait_timeout_ms=self.wait_timeout_ms)
            except Exception as error:
                self.stats.connection_errors += 1
                log.warning("cannot reach redis (%s); retrying in %.1f s", error, delay)
                await heartbeat.wait(stop, delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        return None

    async def _relay(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self.ledger.stopping.set()
        self._wake()

    def _wake(self) -> None:
        if self._engine is not None:
            self._engine.wake()


__all__ = ["Worker", "WorkerStats", "Handler", "HandlerThreads", "load_handler", "error_text", "event_loop_factory"]
