"""The Workers page's data: the live workers of ``QUEUES_PER_PAGE`` registered queues at a time, read at once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from queues import EchoMQ, reads
from queues.reads import Workers

QUEUES_PER_PAGE: Final = 200
WORKERS_PER_QUEUE: Final = 100


@dataclass(frozen=True, slots=True)
class WorkerGroup:
    queue: str
    # None when the queue's workers could not be read; ``error`` says why.
    found: Workers | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class WorkersPageData:
    # The queues with a live worker, and those whose workers could not be read.
    groups: list[WorkerGroup]
    now_ms: int
    total: int
    after: str
    next_after: str | None


def read_workers_page(mq: EchoMQ, *, after: str = "") -> WorkersPageData:
    """The queues after the name ``after``; ``Unavailable`` when Redis does not answer."""
    names = [n for n in mq.known_queues().names if n > after][:QUEUES_PER_PAGE + 1]
    page = names[:QUEUES_PER_PAGE]
    results = mq.run_many([reads.workers(q, limit=WORKERS_PER_QUEUE) for q in page])
    groups = [WorkerGroup(name, None, str(result)) if isinstance(result, Exception) else WorkerGroup(name, result)
              for name, result in zip(page, results) if isinstance(result, Exception) or result.live]
    live = [g.found for g in groups if g.found is not None]
    return WorkersPageData(groups, max((f.now_ms for f in live), default=0), sum(f.live for f in live), after,
                           page[-1] if len(names) > QUEUES_PER_PAGE else None)
