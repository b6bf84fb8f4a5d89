"""Loops a cluster test runs beside its faults: a worker serving, a claim/complete loop that waits for a replica."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

from queues import EchoMQ, NothingToClaim, Refused, Unavailable, moves
from queues.connection import connect
from queues.errors import NotReplicated
from queues.worker import Worker


class Background:
    """Runs ``loop(stop)`` in a thread; ``stop()`` ends it and re-raises what it raised."""

    def __init__(self, loop: Callable[[threading.Event], Any]) -> None:
        self.event = threading.Event()
        self.error: BaseException | None = None
        self.result: Any = None

        def target() -> None:
            try:
                self.result = loop(self.event)
            except BaseException as error:  # reported by stop()
                self.error = error
        self.thread = threading.Thread(target=target, daemon=True)
        self.thread.start()

    def stop(self) -> Any:
        self.event.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "a background loop did not stop"
        if self.error:
            raise self.error
        return self.result


def serve_in_thread(worker: Worker) -> Callable[[threading.Event], Any]:
    def loop(flag: threading.Event) -> Any:
        async def main() -> Any:
            stop = asyncio.Event()

            async def relay() -> None:
                while not flag.is_set():
                    await asyncio.sleep(0.05)
                stop.set()
            relay_task = asyncio.create_task(relay())
            stats = await worker.serve(stop)
            await relay_task
            return stats
        return asyncio.run(main())
    return loop


def waiting_worker(url: str, queues: list[str], acked: list[tuple[str, str, int, float]]) -> Callable[[threading.Event], int]:
    """A hand-written claim/complete loop with WAIT 1: records each completion a replica acknowledged.

    It works every job it holds, as a runtime must: a claim that fewer replicas acknowledged (on a master
    that lost its replica, every claim) still ran and still holds its jobs; walking away from them would
    leave their leases to lapse and spend one of their three attempts each time, until the last one
    lapses to failed. A completion whose outcome is unknown (Redis unreachable) is sent again (a job it did
    complete is then refused); one that ran without its WAIT is done but not recorded as acknowledged.
    """
    def loop(stop: threading.Event) -> int:
        mq = EchoMQ(connect(url), actor="waiting", wait_replicas=1, wait_timeout_ms=500)
        unavailable = 0
        while not stop.is_set():
            for queue in queues:
                try:
                    jobs = mq.claim(queue, lease_ms=1500, count=5)
                except NothingToClaim:
                    continue
                except NotReplicated as unconfirmed:
                    jobs = unconfirmed.result  # type: ignore[assignment]
                except Unavailable:
                    unavailable += 1
                    time.sleep(0.05)
                    continue
                # One script and one WAIT for the batch, so that no lease lapses while WAITs time out one by one.
                while jobs and not stop.is_set():
                    try:
                        finished = mq.run(moves.complete_many(queue, [(job.id, job.token) for job in jobs],
                                                              actor=mq.actor))
                    except NotReplicated:
                        break
                    except Unavailable:
                        unavailable += 1
                        time.sleep(0.05)
                        continue
                    acked.extend([(queue, job.id, job.attempts, time.monotonic())
                              for job, at in zip(jobs, finished) if not isinstance(at, Refused)])
                    break
        return unavailable
    return loop
