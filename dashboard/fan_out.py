"""One read asked of several deployments at once, each within a time budget, saying which answered.

A deployment that is down, slow or unreachable never holds the others' answers back, and never drops out
silently: its :class:`Answer` says it did not answer and why, and the page names it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from queues import EchoMQ, EmqError, validate_job_id
from queues.reads import QueueStats

from .deployments import Deployment

T = TypeVar("T")

# Queues whose counts are added up per deployment, at most: the registry may hold far more.
TOTALS_QUEUES: Final = 500
# Queues looked through for a job id, at most, per deployment.
FIND_QUEUES: Final = 5000
TOTAL_STATES: Final = ("pending", "active", "done", "failed")

# Threads stay bounded however many pages ask: a deployment that does not answer holds one until its socket
# timeout (the budget) lapses.
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="emq-fan-out")
_clients: dict[tuple[str, float], EchoMQ] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class Answer(Generic[T]):
    deployment: Deployment
    value: T | None = None
    error: str = ""  # why there is no value; "" when the deployment answered
    elapsed_ms: int = 0

    @property
    def answered(self) -> bool:
        return not self.error


def _client(url: str, budget_s: float) -> EchoMQ:
    key = (url, budget_s)
    client = _clients.get(key)
    if client is None:
        made = EchoMQ.from_url(url, actor="console", socket_timeout=budget_s)
        with _lock:
            client = _clients.setdefault(key, made)
        if client is not made:
            made.close()
    return client


def forget_fan_out_clients() -> None:
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


def _timed(deployment: Deployment, call: Callable[[EchoMQ], T], budget_s: float) -> tuple[T, int]:
    started = time.monotonic()
    value = call(_client(deployment.url, budget_s))
    return value, int((time.monotonic() - started) * 1000)


def fan_out(deployments: Sequence[Deployment], call: Callable[[EchoMQ], T], *, budget_s: float) -> list[Answer[T]]:
    """``call`` on each deployment's Redis at once; each answer within ``budget_s``, or why there is none."""
    return fan_out_each(deployments, lambda _: call, budget_s=budget_s)


def fan_out_each(deployments: Sequence[Deployment], call_for: Callable[[Deployment], Callable[[EchoMQ], T]], *,
                 budget_s: float, pool: ThreadPoolExecutor | None = None) -> list[Answer[T]]:
    """As :func:`fan_out`, with a call of its own for each deployment (``call_for(deployment)``), on ``pool``
    (else the one of the reads)."""
    runner = pool or _pool
    futures: list[Future[tuple[T, int]]] = [runner.submit(_timed, d, call_for(d), budget_s) for d in deployments]
    wait(futures, timeout=budget_s)
    answers: list[Answer[T]] = []
    for deployment, future in zip(deployments, futures):
        if not future.done():
            future.cancel()
            answers.append(Answer(deployment, error=f"{deployment.name} did not answer within {budget_s:g} s"))
            continue
        error = future.exception()
        if error is not None:
            reason = str(error) if isinstance(error, EmqError) else f"{type(error).__name__}: {error}"
            answers.append(Answer(deployment, error=f"{deployment.name} did not answer: {reason}"[:300]))
            continue
        value, elapsed_ms = future.result()
        answers.append(Answer(deployment, value=value, elapsed_ms=elapsed_ms))
    return answers


@dataclass(frozen=True)
class Totals:
    """A deployment's job counts, added up over its first TOTALS_QUEUES queues."""

    queues: int
    counted: int
    counts: dict[str, int] = field(default_factory=dict)
    unread: int = 0  # queues whose counts could not be read (an odd key, a master down)
    stale: str = ""


def deployment_totals(mq: EchoMQ) -> Totals:
    known = mq.known_queues()
    names = known.names[:TOTALS_QUEUES]
    results = mq.stats_many(names) if names else []
    counts = dict.fromkeys(TOTAL_STATES, 0)
    unread = 0
    for result in results:
        if isinstance(result, QueueStats):
            for state in TOTAL_STATES:
                counts[state] += result.counts.get(state, 0)
        else:
            unread += 1
    return Totals(len(known.names), len(names), counts, unread, known.stale)


def job_finder(job_id: str) -> Callable[[EchoMQ], list[str]]:
    """The read that lists the queues (of a deployment's first FIND_QUEUES) holding a job with this id."""
    job_id = validate_job_id(job_id)

    def find(mq: EchoMQ) -> list[str]:
        return mq.find_job(job_id, mq.known_queues().names[:FIND_QUEUES])

    return find


@dataclass(frozen=True)
class EveryDeployment:
    """What the page (and the API) over every deployment shows: each one's totals, where a job id is, and
    the sentences naming the deployments that did not answer."""

    totals: list[Answer[Totals]]
    found: list[Answer[list[str]]] | None
    missing: list[str]
    # Deployments that answered with only some of their figures (a master down, the queue list unreadable).
    partial: list[str]


def every_deployment(deployments: Sequence[Deployment], *, job_id: str, budget_s: float) -> EveryDeployment:
    """Asks ``deployments`` for their totals (and, with ``job_id``, where it is) at once; raises InvalidInput for
    a job id that is not one."""
    finder = job_finder(job_id) if job_id else None
    totals = fan_out(deployments, deployment_totals, budget_s=budget_s)
    found = fan_out(deployments, finder, budget_s=budget_s) if finder is not None else None
    missing = [answer.error for answer in totals if not answer.answered]
    missing += [answer.error for answer in found or [] if not answer.answered and answer.error not in missing]
    partial = [_partly(answer.deployment.name, answer.value) for answer in totals
               if answer.value is not None and (answer.value.unread or answer.value.stale)]
    return EveryDeployment(totals, found, missing, partial)


def _partly(name: str, totals: Totals) -> str:
    parts = [f"{totals.unread} of its {totals.counted} queues counted could not be read"] if totals.unread else []
    return f"{name} answered in part: {'; '.join(parts + ([totals.stale] if totals.stale else []))}"[:400]
