"""A worker's settings, checked once by :class:`~queues.worker.Worker` and read by its parts."""

from __future__ import annotations

import sys
from dataclasses import dataclass

RUNTIME = f"python {sys.version.split()[0]} emq"


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    queue: str
    actor: str
    concurrency: int
    prefetch: int
    lease_ms: int
    backoff_ms: int
    batch: int
    grace_ms: int
    poll_ms: int
    started_ms: int

    @property
    def slots(self) -> int:
        """The most leases the worker holds at once: one per handler, plus the prefetched."""
        return self.concurrency + self.prefetch
