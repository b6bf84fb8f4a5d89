"""The worker runner: claims jobs, runs a handler on each, reports the outcome.

A handler is a callable taking a :class:`~queues.ClaimedJob`: returning means
complete, raising means fail (the error text is kept as ``last_error`` and the
job is retried after a backoff while attempts remain). A plain function runs
on one of ``concurrency`` handler threads (fed through one queue; their
outcomes come back to the loop in batches, one wake-up per batch rather than
one per job); a coroutine function is awaited on the worker's loop.

Every round trip to Redis is one pipeline of independent moves, each still its
own atomic script: one ``complete_many`` for the completions that are ready,
one ``fail`` per failure, and one ``claim`` of up to as many jobs as there are
free slots. Two such rounds may be in flight at once (each claiming at most
half the slots), so that Redis and the handlers work at the same time. A job
holds its slot from its claim until its outcome is acknowledged, so the worker
never holds more leases than ``concurrency + prefetch``.

With one sync handler and no prefetch, rounds cannot overlap (the next claim
waits for the handler), so the handler's thread makes its round trips itself,
blocking, on a connection of its own (standalone Redis over a plain
connection; otherwise it goes through the loop as above): each job is one
round trip, the last outcome and the next claim pipelined as two scripts, and
no hop through the event loop. The heartbeat, lost leases and the hand-back
below work the same on it.

``prefetch`` (default 0) lets the worker claim that many jobs ahead of its
running handlers, so that a finished handler starts its next job without
waiting for a round trip. A prefetched job is leased from its claim: the
heartbeat extends it like any other, a refused extend drops it before it
starts, and a stop hands it back at once (it never starts once the worker
is stopping). With the default no job waits: a handler starts as soon as its
job is claimed. A heartbeat extends every held lease each ``lease_ms / 3``; a job
whose extend is refused is lost (an operator cancelled it, or it lapsed and
was recovered): its result is never reported and an async handler is
cancelled. The same heartbeat sweeps lapsed leases of dead workers back with
``recover_expired``.

When Redis is over ``maxmemory`` it refuses every move but ``extend`` before
running it (``OutOfMemory``): the worker then keeps the outcomes its handlers
reported, claims nothing, and sends them again with a growing pause (up to
5 s), while the heartbeat keeps their leases; so a job whose handler returned
is completed once Redis has room, not lost to a lapsed lease.

On SIGTERM (or when the ``stop`` event of :meth:`Worker.serve` is set) the
worker stops claiming, lets running handlers finish for ``grace_ms`` and then
hands the rest back with the ``release`` move, so no job is left in limbo.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from queue import Empty, SimpleQueue
from typing import Any, Awaitable, Callable, Union

from . import moves
from .client import AsyncEchoMQ, BlockingRunner, default_actor
from .errors import EmqError, InvalidInput, NothingToClaim, OutOfMemory, Refused, Unavailable
from .keys import validate_queue_name
from .moves import Call, ClaimedJob

log = logging.getLogger("queues.worker")

Handler = Callable[[ClaimedJob], Union[Any, Awaitable[Any]]]

MAX_ERROR_CHARS = 2000
MAX_BACKOFF_S = 5.0
MAX_ROUNDS_IN_FLIGHT = 2
RUNTIME = f"python {sys.version.split()[0]} emq"


def load_handler(spec: str) -> Handler:
    """Imports ``"package.module:callable"`` (the callable may be dotted: ``mod:Class.method``)."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise InvalidInput(f"handler must be written module:callable (e.g. myapp.jobs:send_mail), not {spec!r}")
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise InvalidInput(f"handler must be written module:callable (e.g. myapp.jobs:send_mail), not {spec!r}")
    # A console script does not put the working directory on sys.path, but
    # handlers usually live in the project the worker is started from.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise InvalidInput(f"handler {spec!r}: no module named {error.name!r} (is it on PYTHONPATH?)") from error
        raise InvalidInput(f"handler {spec!r}: importing {module_name!r} failed: {error}") from error
    except Exception as error:
        raise InvalidInput(f"handler {spec!r}: importing {module_name!r} failed: "
                           f"{type(error).__name__}: {error}") from error
    walked = module_name
    for part in attribute.split("."):
        if not part.isidentifier():
            raise InvalidInput(f"handler {spec!r}: {attribute!r} is not a dotted name")
        try:
            target = getattr(target, part)
        except AttributeError:
            raise InvalidInput(f"handler {spec!r}: {walked!r} has no attribute {part!r}") from None
        walked = f"{walked}.{part}" if walked != module_name else f"{module_name}:{part}"
    if not callable(target):
        raise InvalidInput(f"handler {spec!r} is not callable (it is a {type(target).__name__})")
    return target  # type: ignore[no-any-return]


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop when it is installed (a worker's many small round trips cost less on it)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop  # type: ignore[no-any-return]


def _is_async(handler: Handler) -> bool:
    return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(getattr(handler, "__call__", None))


def error_text(error: BaseException) -> str:
    """What a failed job keeps as ``last_error``: the exception and where it was raised, bounded."""
    text = "".join(traceback.format_exception_only(type(error), error)).strip()
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        last = frames[-1]
        text += f" (at {os.path.basename(last.filename)}:{last.lineno} in {last.name})"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 3] + "..."


class HandlerThreads:
    """``count`` threads running a sync handler; each job's outcome lands on a future of the loop.

    A job goes to the threads through one queue and its outcome comes back
    through a deque; the loop is woken once for all the outcomes that arrived
    since its last wake-up, not once per job as ``run_in_executor`` does.
    """

    def __init__(self, handler: Callable[[ClaimedJob], Any], count: int, name: str,
                 loop: asyncio.AbstractEventLoop) -> None:
        self._handler = handler
        self._loop = loop
        self._jobs: SimpleQueue[tuple[ClaimedJob, asyncio.Future[Any]] | None] = SimpleQueue()
        self._done: deque[tuple[asyncio.Future[Any], Any, BaseException | None]] = deque()
        self._lock = threading.Lock()
        self._wake_pending = False
        self._busy = 0
        self._threads = [threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True) for n in range(count)]
        for thread in self._threads:
            thread.start()

    def submit(self, job: ClaimedJob) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self._loop.create_future()
        self._jobs.put((job, future))
        return future

    def busy(self) -> bool:
        """Whether a handler is still running (a thread cannot be stopped)."""
        return self._busy > 0

    def shutdown(self) -> None:
        """Idle threads end; a job not yet started is dropped (its lease was handed back or lost)."""
        while True:
            try:
                item = self._jobs.get_nowait()
            except Empty:
                break
            if item is not None:
                item[1].cancel()
        for _ in self._threads:
            self._jobs.put(None)

    def _work(self) -> None:
        while (item := self._jobs.get()) is not None:
            job, future = item
            with self._lock:
                self._busy += 1
            try:
                outcome: tuple[asyncio.Future[Any], Any, BaseException | None] = (future, self._handler(job), None)
            except BaseException as error:  # the handler's error is the job's outcome
                outcome = (future, None, error)
            with self._lock:
                self._busy -= 1
                self._done.append(outcome)
                wake, self._wake_pending = not self._wake_pending, True
            if wake:
                try:
                    self._loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop is closed: the worker has stopped
                    return

    def _deliver(self) -> None:
        with self._lock:
            self._wake_pending = False
            done, self._done = self._done, deque()
        for future, result, error in done:
            if future.done():
                continue
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)


@dataclass
class WorkerStats:
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    lost: int = 0
    released: int = 0
    refused_reports: int = 0
    connection_errors: int = 0
    out_of_memory: int = 0


@dataclass(eq=False)
class _Held:
    """A job this worker holds a lease on, from its claim until its outcome is acknowledged."""

    job: ClaimedJob
    running: asyncio.Future[Any] | None = None
    report: Call[Any] | None = None
    outcome: str = ""
    sent: bool = False
    lost: bool = False
    handed_back: bool = False
    lease_deadline_ms: int = 0
    notes: list[str] = field(default_factory=list)


class Worker:
    """Runs ``handler`` on the jobs of ``queue``, ``concurrency`` at a time.

    Give either ``url`` (a client is made and closed by the worker) or an
    :class:`AsyncEchoMQ` ``client``. ``prefetch`` is how many jobs may wait,
    leased, for a free handler (see the module's notes). ``batch`` caps the jobs claimed in one
    call (up to 1000); ``grace_ms`` is how long a shutdown waits for running
    handlers; ``poll_ms`` is the longest idle sleep between claims.
    """

    def __init__(self, *, queue: str, handler: Handler | str, concurrency: int = 1, prefetch: int = 0,
                 lease_ms: int = 30_000,
                 backoff_ms: int = 1_000, url: str | None = None, client: AsyncEchoMQ | None = None,
                 batch: int = 100, grace_ms: int = 10_000, poll_ms: int = 200, actor: str | None = None) -> None:
        self.queue = validate_queue_name(queue)
        self.handler: Handler = load_handler(handler) if isinstance(handler, str) else handler
        if not callable(self.handler):
            raise InvalidInput(f"handler must be callable, not {type(self.handler).__name__}")
        self.concurrency = moves._int(concurrency, "concurrency", 1, 10_000)
        self.prefetch = moves._int(prefetch, "prefetch", 0, 10_000)
        self.lease_ms = moves._int(lease_ms, "lease_ms", 100, 86_400_000)
        self.backoff_ms = moves._int(backoff_ms, "backoff_ms", 0, 86_400_000)
        self.batch = moves._int(batch, "batch", 1, moves.MAX_BATCH)
        self.grace_ms = moves._int(grace_ms, "grace_ms", 0, 86_400_000)
        self.poll_ms = moves._int(poll_ms, "poll_ms", 1, 60_000)
        if client is not None and url is not None:
            raise InvalidInput("give either url or client, not both")
        self._url = url
        self._client = client
        self.actor = actor or (client.actor if client is not None else default_actor())
        self._async = _is_async(self.handler)
        self.stats = WorkerStats()
        self._held: dict[str, _Held] = {}
        self._outbox: list[_Held] = []
        self._waiting: deque[_Held] = deque()
        self._running = 0
        self._wake = asyncio.Event()
        self._interrupt = asyncio.Event()
        self._hurry = asyncio.Event()
        self._stop = asyncio.Event()
        self._in_grace = False
        self._reporting = self._claiming = 0
        self._round_size = self.batch
        self._next_claim = self._pause_until = 0.0
        self._backoff = 0.1
        self._oom_backoff = 0.1
        self._threads: HandlerThreads | None = None
        # With one sync handler on a thread of its own (see _serve_on_thread), it and the loop book held jobs,
        # outcomes and tallies under this lock.
        self._lock = threading.Lock()
        self._thread_stop = threading.Event()
        self._closed = False
        self._busy_here = False
        self._started_ms = int(time.time() * 1000)

    # Entry points ------------------------------------------------------------

    def run(self) -> WorkerStats:
        """Blocks until SIGTERM or SIGINT (a second one skips the rest of the grace period).

        When sync handlers are still running after their jobs were handed
        back, the process exits (status 0) instead of returning: Python cannot
        stop a thread, and waiting for it would keep the process alive for nothing.
        """
        with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
            stats = runner.run(self._serve_until_signalled())
        if self._busy_here or self._threads is not None and self._threads.busy():
            # Python cannot stop a thread; the jobs of the handlers still in one
            # have been handed back, so nothing is gained by waiting for them.
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
                self._hurry_or_wake()
            else:
                log.info("%s: stopping; running handlers get %d ms", signal.Signals(signum).name, self.grace_ms)
                stop.set()

        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, on_signal, signum)
        try:
            return await self.serve(stop)
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                loop.remove_signal_handler(signum)

    async def serve(self, stop: asyncio.Event | None = None) -> WorkerStats:
        """Works until ``stop`` is set, then shuts down gracefully; returns the tallies."""
        stop = stop or asyncio.Event()
        self._stop, self._in_grace = stop, False
        self._thread_stop, self._closed = threading.Event(), False
        # Two rounds of half the slots each keep Redis and this process busy at the same time.
        slots = self.concurrency + self.prefetch
        self._round_size = min(self.batch, -(-slots // 2) if slots >= 4 else slots)
        self._next_claim = self._pause_until = 0.0
        client = self._client or await self._connect(stop)
        if client is None:
            return self.stats
        # One sync handler without prefetch works on a thread and connection of its own (see _serve_on_thread).
        runner = client.blocking_runner() if self.concurrency == 1 and not self.prefetch and not self._async \
            else None
        if not self._async and runner is None:
            self._threads = HandlerThreads(self.handler, self.concurrency, f"emq-{self.queue}",
                                           asyncio.get_running_loop())
        watcher = asyncio.create_task(self._relay(stop))
        stopped = asyncio.Event()
        await self._register(client)
        heartbeat = asyncio.create_task(self._heartbeat(client, stopped))
        log.info("worker %s on %s: concurrency %d, lease %d ms", self.actor, self.queue, self.concurrency,
                 self.lease_ms)
        try:
            if runner is not None:
                await self._serve_on_thread(client, runner, stop)
            else:
                await self._exchange(client, stop)
        finally:
            # The heartbeat is told to stop, not cancelled: on Python 3.11 a cancel
            # that lands as a Redis reply arrives can be lost inside the client,
            # and the heartbeat would then beat on and keep serve() from returning.
            stopped.set()
            watcher.cancel()
            await asyncio.gather(heartbeat, watcher, return_exceptions=True)
            await self._register(client, leaving=True)
            if self._threads is not None:
                self._threads.shutdown()
            if self._client is None:
                await client.close()
        log.info("worker %s stopped: %s", self.actor, self.stats)
        return self.stats

    async def _connect(self, stop: asyncio.Event) -> AsyncEchoMQ | None:
        delay = 0.1
        while not stop.is_set():
            try:
                return await asyncio.to_thread(AsyncEchoMQ.from_url, self._url, actor=self.actor)
            except Exception as error:
                self.stats.connection_errors += 1
                log.warning("cannot reach redis (%s); retrying in %.1f s", error, delay)
                await _wait(stop, delay)
                delay = min(delay * 2, MAX_BACKOFF_S)
        return None

    async def _relay(self, stop: asyncio.Event) -> None:
        await stop.wait()
        self._hurry_or_wake()

    # The exchange: outcomes out, new jobs in, one pipeline per round trip -----

    async def _exchange(self, client: AsyncEchoMQ, stop: asyncio.Event) -> None:
        """Starts rounds (outcomes out, a claim for the free slots in) until stopped.

        Up to two rounds are in flight at once, so that handlers run and the
        next round is packed while Redis works on the previous one.
        """
        rounds: set[asyncio.Task[None]] = set()
        grace_end: float | None = None
        try:
            while True:
                now = time.monotonic()
                if stop.is_set() and grace_end is None:
                    grace_end = now + self.grace_ms / 1000
                    self._in_grace = True
                    if self._waiting:
                        await self._release_waiting(client)
                    continue
                if grace_end is not None:
                    if not self._held and not rounds:
                        return
                    if now >= grace_end or self._hurry.is_set():
                        if rounds:
                            await asyncio.wait(rounds)
                        await self._hand_back(client)
                        return
                if now < self._pause_until:
                    await self._sleep(self._pause_until - now, self._interrupt, lambda: False)
                    continue
                if len(rounds) >= MAX_ROUNDS_IN_FLIGHT:
                    await self._sleep(None, self._wake, lambda: False)
                    continue
                ready = sum(1 for h in self._outbox if not (h.lost or h.handed_back))
                free = self.concurrency + self.prefetch - len(self._held) + self._reporting - self._claiming + ready
                want = min(free, self._round_size) if grace_end is None and now >= self._next_claim else 0
                if not ready and want <= 0:
                    timeout = grace_end - now if grace_end is not None else self._next_claim - now if free > 0 else None
                    await self._sleep(timeout, self._wake, lambda: bool(self._outbox))
                    continue
                reports = self._take_reports()
                # Booked before the round's task first runs, so the next pass sees these slots as taken.
                self._reporting += len(reports)
                self._claiming += want
                task = asyncio.create_task(self._round(client, reports, want))
                rounds.add(task)
                task.add_done_callback(lambda done: self._round_done(rounds, done))
        finally:
            if rounds:
                await asyncio.wait(rounds)

    # One sync handler, no prefetch: the job's whole life on one thread ---------

    async def _serve_on_thread(self, client: AsyncEchoMQ, runner: BlockingRunner, stop: asyncio.Event) -> None:
        """Runs :meth:`_one_by_one_on_thread` until stopped; hands its job back if the grace period runs out.

        With one handler and no prefetch the rounds of :meth:`_exchange` cannot
        overlap (the next claim waits for the handler), and for a sync handler
        each job crosses from the loop to a thread and back. Here the handler's
        thread makes its round trips itself, blocking, on a connection of its
        own: one round trip per job (the last outcome and the next claim, two
        scripts pipelined) and no loop hop. The heartbeat, a lost lease and a
        hand-back, on the loop, see the job in ``_held`` as in the exchange;
        the thread and the loop book it under ``_lock``.
        """
        working = self._start_thread(runner)
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([working, stopped], return_when=asyncio.FIRST_COMPLETED)
            self._thread_stop.set()
            if not working.done():
                self._in_grace = True
                hurried = asyncio.create_task(self._hurry.wait())
                await asyncio.wait([working, hurried], timeout=self.grace_ms / 1000,
                                   return_when=asyncio.FIRST_COMPLETED)
                hurried.cancel()
            if not working.done():
                await self._hand_back(client)
        finally:
            self._thread_stop.set()
            stopped.cancel()
            working.cancel()
            await asyncio.gather(working, stopped, return_exceptions=True)
        if not working.cancelled() and working.exception() is not None:
            raise working.exception()  # type: ignore[misc]

    def _start_thread(self, runner: BlockingRunner) -> asyncio.Future[None]:
        """Starts :meth:`_one_by_one_on_thread`; the future is done when it returns."""
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()

        def settle(error: BaseException | None) -> None:
            if not finished.done():
                finished.set_result(None) if error is None else finished.set_exception(error)

        def work() -> None:
            error: BaseException | None = None
            try:
                self._one_by_one_on_thread(runner)
            except BaseException as raised:  # handed to the loop, which raises it from serve()
                error = raised
            finally:
                runner.close()
            try:
                loop.call_soon_threadsafe(settle, error)
            except RuntimeError:  # the loop is closed: the worker has stopped
                pass

        threading.Thread(target=work, name=f"emq-{self.queue}", daemon=True).start()
        return finished

    def _one_by_one_on_thread(self, runner: BlockingRunner) -> None:
        """One sync handler on this thread, its round trips on its own blocking connection: no loop hop."""
        stop = self._thread_stop
        while True:
            stopping = stop.is_set()
            with self._lock:
                reports = self._take_reports()
            if stopping and not reports:
                return
            groups, calls = self._report_calls(reports)
            if not stopping:
                calls.append(moves.claim(self.queue, lease_ms=self.lease_ms, worker=self.actor, count=1))
            try:
                results = runner.run_many(calls)
            except Unavailable as error:
                with self._lock:
                    self._requeue(reports)
                    wait = self._unreachable(error)
                stop.wait(wait)
                continue
            with self._lock:
                self._backoff = 0.1
                retry = self._settle_groups(groups, results)
                self._requeue(retry)
                pause = self._retry_pause(results[:len(groups)]) if retry else 0.0
                claimed = None if stopping else self._claimed_here(results[-1])
                if isinstance(claimed, _Held) and self._closed:
                    # Claimed while the loop handed back what this worker held: hand this one back too.
                    self._held.pop(claimed.job.id)
                    claimed.handed_back = True
            wait = max(pause, claimed if isinstance(claimed, float) else 0.0)
            if wait:
                stop.wait(wait)
            if not isinstance(claimed, _Held):
                continue
            if claimed.handed_back:
                self._release_here(runner, claimed)
                return
            error: BaseException | None = None
            self._busy_here = True
            try:
                self.handler(claimed.job)
            except BaseException as raised:  # the handler's error is the job's outcome
                error = raised
            finally:
                self._busy_here = False
            with self._lock:
                self._book(claimed, False, error)

    def _claimed_here(self, result: Any) -> _Held | float:
        """The claimed job, now held; or how long to wait before the next claim (seconds)."""
        if not isinstance(result, list) or not result:
            return max(self._take_claim(result) - time.monotonic(), 0.0)
        job: ClaimedJob = result[0]
        self.stats.claimed += 1
        h = _Held(job, lease_deadline_ms=job.lease_deadline_ms)
        self._held[job.id] = h
        return h

    def _release_here(self, runner: BlockingRunner, h: _Held) -> None:
        try:
            result = runner.run_many([moves.release(self.queue, h.job.id, h.job.token, actor=self.actor)])[0]
        except Unavailable as error:
            result = error
        with self._lock:
            if isinstance(result, Exception):
                log.warning("release of job %s refused: %s", h.job.id, result)
            else:
                self.stats.released += 1

    def _unreachable(self, error: Unavailable) -> float:
        """Counts a round that did not reach Redis; returns how long to wait before the next (seconds)."""
        self.stats.connection_errors += 1
        log.warning("redis unavailable (%s); retrying in %.1f s", error, self._backoff)
        wait, self._backoff = self._backoff, min(self._backoff * 2, MAX_BACKOFF_S)
        return wait

    def _out_of_memory(self) -> float:
        """Counts a round Redis refused for want of memory; returns how long to back off (seconds).

        Nothing ran: the finished jobs wait in the outbox (their leases kept by the heartbeat, whose
        extend Redis still runs) and no new job is claimed until a move gets through again.
        """
        self.stats.out_of_memory += 1
        if self._oom_backoff == 0.1:
            log.warning("redis is out of memory: holding %d outcomes and claiming nothing until it has room",
                        len(self._outbox))
        wait, self._oom_backoff = self._oom_backoff, min(self._oom_backoff * 2, MAX_BACKOFF_S)
        return wait

    def _round_done(self, rounds: set[asyncio.Task[None]], done: asyncio.Task[None]) -> None:
        # Woken only once the round has left the set, so the loop never waits on a finished round.
        rounds.discard(done)
        self._wake.set()
        if not done.cancelled() and done.exception() is not None:
            log.error("a round failed: %s", done.exception())

    async def _round(self, client: AsyncEchoMQ, reports: list[_Held], want: int) -> None:
        groups, calls = self._report_calls(reports)
        if want > 0:
            calls.append(moves.claim(self.queue, lease_ms=self.lease_ms, worker=self.actor, count=want))
        try:
            results = await client.run_many(calls)
        except Unavailable as error:
            self._requeue(reports)
            self._pause_until = self._next_claim = time.monotonic() + self._unreachable(error)
            return
        finally:
            self._reporting -= len(reports)
            self._claiming -= want
        self._backoff = 0.1
        retry = self._settle_groups(groups, results)
        if retry:
            self._requeue(retry)
            self._pause_until = time.monotonic() + self._retry_pause(results[:len(groups)])
        if want > 0:
            self._next_claim = self._take_claim(results[-1])

    async def _sleep(self, timeout: float | None, event: asyncio.Event, ready: Callable[[], bool]) -> None:
        """Sleeps ``timeout`` seconds at most, until ``event``; a stop or a hurry wakes it too."""
        if timeout is not None and timeout <= 0:
            return
        event.clear()
        # Callbacks run on this loop, so nothing can be set between the clear and these checks.
        if ready() or (self._stop.is_set() and not self._in_grace) or self._hurry.is_set():
            return
        if timeout is None:
            await event.wait()
            return
        try:
            async with asyncio.timeout(timeout):
                await event.wait()
        except TimeoutError:
            pass

    def _take_reports(self) -> list[_Held]:
        reports = [h for h in self._outbox if not h.lost and not h.handed_back]
        self._outbox = []
        for h in reports:
            h.sent = True
        return reports

    def _requeue(self, reports: list[_Held]) -> None:
        for h in reports:
            h.sent = False
        self._outbox = reports + self._outbox

    def _report_calls(self, reports: list[_Held]) -> tuple[list[list[_Held]], list[Call[Any]]]:
        """One ``complete_many`` per 1000 completions, one ``fail`` per failure; returns them with their jobs."""
        done = [h for h in reports if h.outcome == "complete"]
        groups = [done[i:i + moves.MAX_BATCH] for i in range(0, len(done), moves.MAX_BATCH)]
        calls: list[Call[Any]] = [moves.complete_many(self.queue, [(h.job.id, h.job.token) for h in group],
                                                      actor=self.actor) for group in groups]
        for h in reports:
            if h.outcome != "complete":
                groups.append([h])
                calls.append(h.report)  # type: ignore[arg-type]
        return groups, calls

    def _settle_groups(self, groups: list[list[_Held]], results: list[Any]) -> list[_Held]:
        """Books each report's answer; returns the reports to send again (Redis was not reached)."""
        retry: list[_Held] = []
        for group, result in zip(groups, results):
            answers = result if isinstance(result, list) else [result] * len(group)
            for h, answer in zip(group, answers):
                if not self._settle(h, answer):
                    retry.append(h)
        return retry

    def _retry_pause(self, results: list[Any]) -> float:
        """How long to wait before sending again the reports that did not run (seconds)."""
        if any(isinstance(r, OutOfMemory) or isinstance(r, list) and any(isinstance(a, OutOfMemory) for a in r)
               for r in results):
            return self._out_of_memory()
        return 0.05

    def _settle(self, h: _Held, result: Any) -> bool:
        """Books a report's answer; False when it must be sent again (Redis was not reached, or refused it for
        want of memory before running it)."""
        if isinstance(result, (Unavailable, OutOfMemory)):
            return False
        self._held.pop(h.job.id, None)
        if isinstance(result, Refused):
            self.stats.refused_reports += 1
            log.warning("%s of job %s not recorded: %s", h.outcome, h.job.id, result)
        elif isinstance(result, Exception):
            self.stats.refused_reports += 1
            log.error("%s of job %s not recorded: %s", h.outcome, h.job.id, result)
        elif h.outcome == "complete":
            self.stats.completed += 1
        else:
            self.stats.failed += 1
        return True

    def _take_claim(self, result: Any) -> float:
        """Starts the claimed jobs; returns when the next claim may be sent (monotonic seconds)."""
        now = time.monotonic()
        if isinstance(result, NothingToClaim):
            self._oom_backoff = 0.1
            return now + self._idle_seconds(result)
        if isinstance(result, OutOfMemory):
            return now + self._out_of_memory()
        if isinstance(result, Exception):
            self.stats.connection_errors += isinstance(result, Unavailable)
            log.warning("claim failed: %s", result)
            return now + self.poll_ms / 1000
        jobs: list[ClaimedJob] = result
        self._oom_backoff = 0.1
        for job in jobs:
            self._start(job)
        return now

    def _idle_seconds(self, empty: NothingToClaim) -> float:
        """Until the next claimable job is due by the server's own clock (EMPTY carries both times), at most
        ``poll_ms``: a job may be enqueued meanwhile. Zero when the claim ran out of budget moving
        unclaimable jobs out of the way: the next call makes progress again."""
        wait = empty.wait_ms
        longest = self.poll_ms / 1000
        return longest if wait is None else min(wait / 1000, longest)

    def _hurry_or_wake(self) -> None:
        # A stop or a hurry wakes both sleeps: the idle one and the back-off after a connection error.
        self._wake.set()
        self._interrupt.set()

    # Handlers ----------------------------------------------------------------

    def _start(self, job: ClaimedJob) -> None:
        self.stats.claimed += 1
        h = _Held(job, lease_deadline_ms=job.lease_deadline_ms)
        self._held[job.id] = h
        if self._running < self.concurrency:
            self._run(h)
        else:
            self._waiting.append(h)

    def _start_waiting(self) -> None:
        while self._waiting and self._running < self.concurrency and not self._in_grace:
            h = self._waiting.popleft()
            if not (h.lost or h.handed_back):
                self._run(h)

    def _run(self, h: _Held) -> None:
        job = h.job
        self._running += 1
        if self._async:
            h.running = asyncio.get_running_loop().create_task(self.handler(job))  # type: ignore[arg-type]
        else:
            assert self._threads is not None
            h.running = self._threads.submit(job)
        h.running.add_done_callback(lambda future: self._finished(h, future))

    def _finished(self, h: _Held, future: asyncio.Future[Any]) -> None:
        self._running -= 1
        self._start_waiting()
        cancelled = future.cancelled()
        self._book(h, cancelled, None if cancelled else future.exception())
        self._wake.set()

    def _book(self, h: _Held, cancelled: bool, error: BaseException | None) -> None:
        """Puts a finished handler's outcome in the outbox, unless its job was lost or handed back."""
        if h.lost or h.handed_back:
            if self._held.get(h.job.id) is h and not h.sent:
                self._held.pop(h.job.id)
            return
        if cancelled:
            h.outcome, h.report = "fail", moves.fail(self.queue, h.job.id, h.job.token, error="handler cancelled",
                                                    backoff_ms=self.backoff_ms, actor=self.actor)
        elif error is not None:
            h.outcome, h.report = "fail", moves.fail(self.queue, h.job.id, h.job.token, error=error_text(error),
                                                    backoff_ms=self.backoff_ms, actor=self.actor)
        else:
            h.outcome = "complete"
        self._outbox.append(h)

    def _lose(self, h: _Held, refusal: Exception) -> None:
        h.lost = True
        self.stats.lost += 1
        log.warning("lost the lease on job %s: %s", h.job.id, refusal)
        if h.running is not None and not h.running.done():
            if self._async:
                h.running.cancel()
        else:
            # Finished (its report is dropped) or never started (it leaves the waiting line).
            self._held.pop(h.job.id, None)
            self._outbox = [other for other in self._outbox if other is not h]
            self._waiting = deque(other for other in self._waiting if other is not h)
            self._wake.set()

    # Heartbeat and sweep -------------------------------------------------------

    async def _heartbeat(self, client: AsyncEchoMQ, stopped: asyncio.Event) -> None:
        interval = self.lease_ms / 3000
        while True:
            await _wait(stopped, interval)
            if stopped.is_set():
                return
            try:
                await self._extend_all(client)
                await self._register(client)
                await self._sweep(client)
            except Unavailable as error:
                with self._lock:
                    self.stats.connection_errors += 1
                log.warning("heartbeat could not reach redis: %s", error)
            except EmqError as error:
                log.error("heartbeat failed: %s", error)

    async def _register(self, client: AsyncEchoMQ, *, leaving: bool = False) -> None:
        """This worker's entry in the queue's registry (PROTOCOL.md, "Workers"): it lives one lease unless renewed."""
        with self._lock:
            held = [h.job.id for h in self._held.values() if not (h.lost or h.handed_back)]
        try:
            if leaving:
                await client.run(moves.unregister_worker(self.queue, self.actor))
            else:
                await client.run(moves.register_worker(
                    self.queue, self.actor, ttl_ms=max(self.lease_ms, 1000), host=socket.gethostname(),
                    pid=os.getpid(), runtime=RUNTIME, concurrency=self.concurrency, started_ms=self._started_ms,
                    held=held))
        except EmqError as error:  # the registry is for people watching; the work goes on without it
            log.warning("worker registry: %s", error)

    async def _extend_all(self, client: AsyncEchoMQ) -> None:
        with self._lock:
            holding = [h for h in self._held.values() if not (h.lost or h.handed_back or h.sent)]
        for start in range(0, len(holding), moves.MAX_BATCH):
            chunk = holding[start:start + moves.MAX_BATCH]
            calls = [moves.extend(self.queue, h.job.id, h.job.token, lease_ms=self.lease_ms, actor=self.actor)
                     for h in chunk]
            results = await client.run_many(calls)
            with self._lock:
                for h, result in zip(chunk, results):
                    if isinstance(result, Refused):
                        # A report sent meanwhile moves the job on; only its own answer counts.
                        if not (h.sent or h.handed_back or h.lost):
                            self._lose(h, result)
                    elif isinstance(result, Exception):
                        log.warning("extend of job %s failed: %s", h.job.id, result)
                    else:
                        h.lease_deadline_ms = result

    async def _sweep(self, client: AsyncEchoMQ) -> None:
        for _ in range(10):
            try:
                batch = await client.run(moves.recover_expired(self.queue, limit=500, actor=self.actor))
            except OutOfMemory:
                return  # nothing lapses back meanwhile either: every sweep is refused alike
            if batch.moved:
                log.info("recovered %d lapsed jobs of %s", batch.moved, self.queue)
            if not batch.more:
                return

    # Shutdown ------------------------------------------------------------------

    async def _release_waiting(self, client: AsyncEchoMQ) -> None:
        """Hands back the prefetched jobs no handler has started: a stopping worker never starts them."""
        waiting = [h for h in self._waiting if not (h.lost or h.handed_back)]
        self._waiting.clear()
        for h in waiting:
            h.handed_back = True
        try:
            results = await client.run_many([moves.release(self.queue, h.job.id, h.job.token, actor=self.actor)
                                             for h in waiting])
        except Unavailable as error:
            self.stats.connection_errors += 1
            log.warning("could not hand back %d prefetched jobs (%s): their leases will lapse and the sweep "
                        "will recover them", len(waiting), error)
            results = [error] * len(waiting)
        for h, result in zip(waiting, results):
            self._held.pop(h.job.id, None)
            if isinstance(result, Exception):
                log.warning("release of job %s refused: %s", h.job.id, result)
            else:
                self.stats.released += 1

    async def _hand_back(self, client: AsyncEchoMQ) -> None:
        """Releases every job whose handler has not finished, after sending the outcomes that are ready."""
        with self._lock:
            self._closed = True
            reports = self._take_reports()
            running = [h for h in self._held.values() if not h.outcome and not h.lost]
            for h in running:
                h.handed_back = True
                if self._async and h.running is not None:
                    h.running.cancel()
        groups, calls = self._report_calls(reports)
        reported = len(calls)
        calls += [moves.release(self.queue, h.job.id, h.job.token, actor=self.actor) for h in running]
        for attempt in range(3):
            try:
                results = await client.run_many(calls)
                break
            except Unavailable as error:
                self.stats.connection_errors += 1
                log.warning("hand back could not reach redis (%s)%s", error, "; retrying" if attempt < 2 else "")
                await asyncio.sleep(0.2 * (attempt + 1))
        else:
            log.error("could not hand back %d jobs: their leases will lapse and the sweep will recover them",
                      len(running))
            return
        with self._lock:
            self._settle_groups(groups, results[:reported])
            for h, result in zip(running, results[reported:]):
                self._held.pop(h.job.id, None)
                if isinstance(result, Exception):
                    log.warning("release of job %s refused: %s", h.job.id, result)
                else:
                    self.stats.released += 1
        if self._async:
            await asyncio.gather(*(h.running for h in running if h.running is not None), return_exceptions=True)


async def _wait(event: asyncio.Event, timeout: float) -> None:
    """Waits until ``event`` is set or ``timeout`` seconds pass."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        pass


__all__ = ["Worker", "WorkerStats", "Handler", "load_handler", "error_text", "event_loop_factory"]
