"""The Workers page's data: the live workers of ``QUEUES_PER_PAGE`` registered queues at a time, read at once."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from queues import EchoMQ, reads
from queues.reads import Workers

QUEUES_PER_PAGE: Final = 200
WORKERS_PER_QUEUE: Final = 100
# The longest filter the page keeps (a queue name is at most this long too).
FILTER_MAX: Final = 128


@dataclass(frozen=True, slots=True)
class WorkerGroup:
    queue: str
    # None when the queue's workers could not be read; ``error`` says why.
    found: Workers | None
    error: str = ""


@dataclass(frozen=True, slots=True)
class WorkersPageData:
    # The queues with a live worker (that the filter keeps), and those whose workers could not be read.
    groups: list[WorkerGroup]
    now_ms: int
    total: int
    after: str
    next_after: str | None
    # The filter, as the page shows it ('' none): a queue whose name holds it keeps all its workers, any
    # other queue only its workers whose id or host holds it (case aside).
    text: str = ""


def _kept(group: WorkerGroup, needle: str) -> WorkerGroup | None:
    """The group as the filter ``needle`` (lower case) keeps it, or None when it keeps none of it."""
    found = group.found
    if not needle or needle in group.queue.lower():
        return group
    if found is None:
        return None
    workers = [w for w in found.workers if needle in w.id.lower() or needle in w.host.lower()]
    return replace(group, found=replace(found, workers=workers, live=len(workers))) if workers else None


def read_workers_page(mq: EchoMQ, *, after: str = "", text: str = "") -> WorkersPageData:
    """The queues after the name ``after``, filtered by ``text``; ``Unavailable`` when Redis does not answer.

    The filter applies to what one page reads (``QUEUES_PER_PAGE`` queues), so a page costs the same whatever
    it holds; the next page goes on after the last queue read. With a filter, the queues whose name holds it
    are read first (the registry's names are in memory), so a queue named in the filter is on the first page
    however many queues sort before it; the other queues follow, for their workers' ids and hosts.
    """
    text = text.strip()[:FILTER_MAX]
    known = sorted(mq.known_queues().names)
    needle = text.lower()
    if needle:
        ordered = [n for n in known if needle in n.lower()] + [n for n in known if needle not in n.lower()]
        start = ordered.index(after) + 1 if after in ordered else 0
        names = ordered[start:start + QUEUES_PER_PAGE + 1]
    else:
        names = [n for n in known if n > after][:QUEUES_PER_PAGE + 1]
    page = names[:QUEUES_PER_PAGE]
    results = mq.run_many([reads.workers(q, limit=WORKERS_PER_QUEUE) for q in page])
    groups = [WorkerGroup(name, None, str(result)) if isinstance(result, Exception) else WorkerGroup(name, result)
              for name, result in zip(page, results) if isinstance(result, Exception) or result.live]
    kept = [g for g in (_kept(group, text.lower()) for group in groups) if g is not None]
    live = [g.found for g in kept if g.found is not None]
    return WorkersPageData(kept, max((f.now_ms for f in live), default=0), sum(f.live for f in live), after,
                           page[-1] if len(names) > QUEUES_PER_PAGE else None, text)
