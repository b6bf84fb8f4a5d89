"""The failures of every queue: the largest failure groups of ``QUEUES_PER_PAGE`` registered queues at a time.

Each queue's groups are one bounded read (its ``GROUPS_PER_QUEUE`` largest, O(groups shown)), all of a
page's queues in one round trip, so the page costs the same whatever the keyspace holds; when more queues
are registered than one page reads, the page says so and links to the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from queues import EchoMQ
from queues.failures import FailureGroup, FailureGroups, groups

QUEUES_PER_PAGE: Final = 50
GROUPS_PER_QUEUE: Final = 10


@dataclass(frozen=True, slots=True)
class QueueFailureGroup:
    queue: str
    group: FailureGroup


@dataclass(frozen=True, slots=True)
class FailuresEverywhere:
    # The groups of the queues read, largest first.
    rows: list[QueueFailureGroup]
    # Each queue read that has failed jobs, with its totals (and why its groups cannot be read, if so).
    queues: list[FailureGroups]
    # Queues read, how many are registered, and where the next page starts (None: this was the last).
    read_count: int
    registered: int
    after: str
    next_after: str | None
    now_ms: int
    # Queues whose groups could not be read at all (a key of another type, say): name, why.
    unreadable: list[tuple[str, str]]

    @property
    def failed(self) -> int:
        return sum(q.failed for q in self.queues)

    @property
    def stopped_early(self) -> bool:
        return self.next_after is not None


def read_failures_everywhere(mq: EchoMQ, *, after: str = "") -> FailuresEverywhere:
    """The queues whose names sort after ``after``, ``QUEUES_PER_PAGE`` of them; ``Unavailable`` when Redis does
    not answer."""
    names = sorted(mq.known_queues().names)
    following = [n for n in names if n > after]
    page = following[:QUEUES_PER_PAGE]
    results = mq.run_many([groups(name, limit=GROUPS_PER_QUEUE) for name in page]) if page else []
    read: list[FailureGroups] = []
    unreadable: list[tuple[str, str]] = []
    for name, result in zip(page, results):
        if isinstance(result, Exception):
            unreadable.append((name, str(result)))
        elif result.problem:
            unreadable.append((name, result.problem))
        elif result.failed:
            read.append(result)
    rows = sorted((QueueFailureGroup(r.queue, g) for r in read for g in r.groups),
                  key=lambda row: (-row.group.count, row.queue, row.group.id))
    return FailuresEverywhere(rows, read, len(page), len(names), after,
                              page[-1] if len(following) > QUEUES_PER_PAGE else None,
                              max((r.now_ms for r in read), default=0), unreadable)
