"""The queue page's data: its counts, the page of jobs its window shows, where the jobs the page still
shows are now, its live workers and why it is (not) draining, read at one instant."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from queues import AsyncEchoMQ, EchoMQ, reads, redaction, why
from queues.moves import Call
from queues.reads import JobState, Page, QueueStats, Workers

from ..presenters import Window
from ..redaction import Reader, masker_for

WORKERS_READ: Final = 100


@dataclass(frozen=True, slots=True)
class QueuePageData:
    window: Window
    stats: QueueStats
    page: Page
    # The jobs the page still shows that are no longer on this page of the state (where each is now).
    elsewhere: list[JobState]
    # None when the workers registry cannot tell now (unknown is not none).
    workers: Workers | None
    why: why.Why


def queue_calls(window: Window, shown: list[str]) -> list[Call[Any]]:
    """The page's reads, in one round trip."""
    return [reads.stats(window.queue), reads.page(window.queue, window.state, **window.where()),
            reads.states(window.queue, shown), reads.workers(window.queue, limit=WORKERS_READ),
            why.queue_evidence(window.queue), redaction.config(window.queue)]


def queue_page_data(window: Window, results: list[Any], sweeper: why.Sweeper, reader: Reader) -> QueuePageData:
    """The page's object from :func:`queue_calls`' results, its payload previews masked for ``reader``. The
    counts, the page of jobs and the queue's masked paths are the page: when one cannot be read, its error is
    raised; the other parts are flagged (none elsewhere, workers unknown, the why line unknown, in words)."""
    stats, page, states, workers, evidence, config = results
    for part in (stats, page, config):
        if isinstance(part, Exception):
            raise part
    masker = masker_for(reader, config)
    if masker is not None:
        page = replace(page, rows=[masker.row(row) for row in page.rows])
    on_page = {row.id for row in page.rows}
    elsewhere = [s for s in states if s.id not in on_page] if isinstance(states, list) else []
    answer = why.unknown(evidence) if isinstance(evidence, Exception) else why.decide_queue(evidence, sweeper)
    return QueuePageData(window, stats, page, elsewhere, None if isinstance(workers, Exception) else workers, answer)


def read_queue_page(mq: EchoMQ, window: Window, *, reader: Reader, shown: list[str] | None = None) -> QueuePageData:
    """For a view and the API; ``Unavailable`` when Redis does not answer."""
    results = mq.run_many(queue_calls(window, shown or []))
    return queue_page_data(window, results, mq.sweeper_lock(), reader)


async def read_queue_page_async(mq: AsyncEchoMQ, window: Window, *, reader: Reader,
                                shown: list[str] | None = None) -> QueuePageData:
    """For the live page: the same calls and the same object, over the async client."""
    results = await mq.run_many(queue_calls(window, shown or []))
    return queue_page_data(window, results, await mq.sweeper_lock(), reader)
