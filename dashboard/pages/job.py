"""The job page's data: the job, its history and whether the worker holding it is gone, read at one instant."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from queues import AsyncEchoMQ, EchoMQ, EmqError, reads, redaction, why
from queues.moves import Call
from queues.reads import Event, JobView, Workers
from queues.redaction import Masker

from ..redaction import Reader, masker_for

# How many of the queue's workers the read looks through for the one holding the job.
WORKERS_READ: Final = 1000


@dataclass(frozen=True, slots=True)
class JobPageData:
    view: JobView
    # Newest first; empty, with ``history_error`` saying why, when the history could not be read.
    history: list[Event]
    history_error: str
    # An active job whose worker has no live entry; False when the registry cannot tell (unknown is not gone).
    worker_gone: bool
    why: why.Why
    # How the payload was masked for the reader (None: shown as stored); ``view`` is already masked.
    masker: Masker | None = None

    @property
    def missing(self) -> bool:
        """Neither the job's hash nor an entry in any state's set: no such job."""
        return not self.view.exists and not self.view.scores


def job_calls(queue: str, job_id: str, *, payload_bytes: int = reads.JOB_PAYLOAD_BYTES) -> list[Call[Any]]:
    """The page's reads, in one round trip: the job, its history, the queue's workers, the why evidence, and
    the queue's masked paths."""
    return [reads.job(queue, job_id, payload_bytes=payload_bytes), reads.history(queue, job_id),
            reads.workers(queue, limit=WORKERS_READ), why.job_evidence(queue, job_id), redaction.config(queue)]


def _worker_gone(view: JobView, workers: Workers | Exception) -> bool:
    worker = view.text("worker")
    if view.state != "active" or not worker or isinstance(workers, Exception):
        return False
    return workers.live <= len(workers.workers) and worker not in {w.id for w in workers.workers}


def job_page_data(results: list[Any], sweeper: why.Sweeper, reader: Reader) -> JobPageData:
    """The page's object from :func:`job_calls`' results, its payload masked for ``reader``; a job (or the queue's
    masked paths) that cannot be read raises its error (the page cannot be shown), a part that cannot be read
    is flagged in words."""
    view, history, workers, evidence, config = results
    for part in (view, config):
        if isinstance(part, Exception):
            raise part
    masker = masker_for(reader, config)
    if masker is not None:
        view = masker.view(view)
    answer = why.unknown(evidence) if isinstance(evidence, Exception) else why.decide_job(evidence, sweeper)
    if isinstance(history, EmqError):
        return JobPageData(view, [], str(history), _worker_gone(view, workers), answer, masker)
    if isinstance(history, Exception):
        raise history
    return JobPageData(view, history, "", _worker_gone(view, workers), answer, masker)


def read_job_page(mq: EchoMQ, queue: str, job_id: str, *, reader: Reader,
                  payload_bytes: int = reads.JOB_PAYLOAD_BYTES) -> JobPageData:
    """For a view and the API; ``Unavailable`` when Redis does not answer."""
    results = mq.run_many(job_calls(queue, job_id, payload_bytes=payload_bytes))
    return job_page_data(results, mq.sweeper_lock(), reader)


async def read_job_page_async(mq: AsyncEchoMQ, queue: str, job_id: str, *, reader: Reader,
                              payload_bytes: int = reads.JOB_PAYLOAD_BYTES) -> JobPageData:
    """For the live page: the same calls and the same object, over the async client."""
    results = await mq.run_many(job_calls(queue, job_id, payload_bytes=payload_bytes))
    return job_page_data(results, await mq.sweeper_lock(), reader)
