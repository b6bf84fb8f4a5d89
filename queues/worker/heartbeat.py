"""What a worker does on the event loop whichever engine runs its handlers: the heartbeat (extend every
held lease, renew the registry entry, sweep lapsed leases back) and handing jobs back with ``release``."""

from __future__ import annotations

import asyncio
import logging
import os
import socket

from .. import moves
from ..client import AsyncEchoMQ
from ..deploys import deploy_mark
from ..errors import EmqError, OutOfMemory, Unavailable
from .ledger import Held, Ledger
from .settings import RUNTIME, WorkerSettings

log = logging.getLogger("queues.worker")

HAND_BACK_TRIES = 3


async def beat(settings: WorkerSettings, ledger: Ledger, client: AsyncEchoMQ, stopped: asyncio.Event) -> None:
    """Every ``lease_ms / 3`` until ``stopped``: extends the held leases, renews the registry entry, sweeps."""
    interval = settings.lease_ms / 3000
    while True:
        await wait(stopped, interval)
        if stopped.is_set():
            return
        try:
            await extend_all(ledger, client)
            await register(settings, ledger, client)
            await sweep(settings, client)
        except Unavailable as error:
            ledger.stats.connection_errors += 1
            log.warning("heartbeat could not reach redis: %s", error)
        except EmqError as error:
            log.error("heartbeat failed: %s", error)


async def register(settings: WorkerSettings, ledger: Ledger, client: AsyncEchoMQ, *, leaving: bool = False) -> None:
    """This worker's entry in the queue's registry (PROTOCOL.md, "Workers"): it lives one lease unless renewed."""
    ttl_ms = max(settings.lease_ms, 1000)
    refusal = None if leaving else ledger.take_refusal()
    try:
        if leaving:
            await client.run(moves.unregister_worker(settings.queue, settings.actor))
        else:
            registered = await client.run(moves.register_worker(
                settings.queue, settings.actor, ttl_ms=ttl_ms, host=socket.gethostname(),
                pid=os.getpid(), runtime=RUNTIME, concurrency=settings.concurrency, started_ms=settings.started_ms,
                held=ledger.held_ids(), release=settings.release))
            if registered.new_release:
                # The first worker of a release on this queue marks the deploy on every chart.
                marked = await client.run(deploy_mark(settings.release))
                log.info("release %s is new to %s: deploy mark at %d", settings.release, settings.queue, marked.at_ms)
    except OutOfMemory as error:
        refusal = refusal or ("oom", str(error))
    except EmqError as error:  # the registry is for people watching; the work goes on without it
        log.warning("worker registry: %s", error)
    if refusal is not None:
        # Where the console looks for why nothing is claimed; it also keeps the entry alive under maxmemory.
        try:
            await client.run(moves.note_refusal(settings.queue, settings.actor, ttl_ms=ttl_ms, kind=refusal[0],
                                                text=refusal[1]))
        except EmqError as error:
            log.warning("worker registry: could not note a refused claim: %s", error)


async def extend_all(ledger: Ledger, client: AsyncEchoMQ) -> None:
    targets = ledger.extend_targets()
    for start in range(0, len(targets), moves.MAX_BATCH):
        chunk = targets[start:start + moves.MAX_BATCH]
        ledger.book_extends(chunk, await client.run_many(ledger.extend_calls(chunk)))


async def sweep(settings: WorkerSettings, client: AsyncEchoMQ) -> None:
    for _ in range(10):
        try:
            batch = await client.run(moves.recover_expired(settings.queue, limit=500, actor=settings.actor))
        except OutOfMemory:
            return  # nothing lapses back meanwhile either: every sweep is refused alike
        if batch.moved:
            log.info("recovered %d lapsed jobs of %s", batch.moved, settings.queue)
        if not batch.more:
            return


async def release(ledger: Ledger, client: AsyncEchoMQ, targets: list[Held]) -> None:
    """Hands back jobs whose handlers never started, at once (a stopping worker never starts them)."""
    if not targets:
        return
    calls = ledger.hand_back(targets)
    try:
        results = await client.run_many(calls)
    except Unavailable as error:
        ledger.book_released(targets, error)
        return
    ledger.book_released(targets, results)


async def hand_back(ledger: Ledger, client: AsyncEchoMQ, *, cancel_running: bool) -> list[Held]:
    """When the grace period ends: sends the outcomes that are ready and releases every job without one.

    Returns the jobs released; with ``cancel_running`` their async handlers are cancelled.
    """
    reports, running = ledger.take_for_hand_back()
    rnd = ledger.round(reports, claim=0)
    calls = rnd.calls + ledger.release_calls(running)
    if cancel_running:
        for h in running:
            if h.running is not None:
                h.running.cancel()
    for attempt in range(HAND_BACK_TRIES):
        try:
            results = await client.run_many(calls)
            break
        except Unavailable as error:
            ledger.stats.connection_errors += 1
            log.warning("hand back could not reach redis (%s)%s", error,
                        "; retrying" if attempt < HAND_BACK_TRIES - 1 else "")
            await asyncio.sleep(0.2 * (attempt + 1))
    else:
        log.error("could not hand back %d jobs: their leases will lapse and the sweep will recover them", len(running))
        return running
    ledger.book_round(rnd, results[:len(rnd.calls)])
    ledger.book_released(running, results[len(rnd.calls):])
    return running


async def wait(event: asyncio.Event, timeout: float) -> None:
    """Waits until ``event`` is set or ``timeout`` seconds pass."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        pass
