"""The scheduler: enqueues the schedules' ticks, in one process at a time.

Each round takes from the schedule index (``emq:schedule_index``, kept by the lease index's take and
settle scripts) the queues one of whose schedules may be due, reads each one's due schedules (the
``schedules`` read, up to now), computes each one's tick (:func:`plan_tick`: cron with cronsim, or an
interval) and sends ``schedule_tick`` for it, then settles the queue's score to its earliest next tick.

The lock (``emq:lock:scheduler``, the sweeper's kind: a lease on the EchoMQ Redis or a Redlock over
``EMQ_LOCK_URLS``) only saves work: every tick is checked by its script, so two schedulers at once (a
holder paused past its lock) enqueue each tick once all the same. A tick whose answer was lost
(``Unavailable``: a connection cut by a failover) or that fewer replicas than asked acknowledged
(``NotReplicated``) is sent again, first thing, in the next round: the script answers ``ticked`` when it
is there, and enqueues it when a failover lost it, so it ends enqueued exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from . import lease_index
from .client import EchoMQ
from .connection import connect, redis_url
from .errors import EmqError, NotReplicated, Refused, Unavailable
from .keys import SCHEDULE_INDEX, SCHEDULER_LOCK
from .locks import LockLost, Redlock, lock_clients
from .moves import Call
from .schedules import LATE_AFTER_MS, PAGE_LIMIT, Schedule, SchedulePage, TickResult, schedule_tick, schedules
from .sweeper import lock_urls_from_env

DEFAULT_INTERVAL_S: Final = 1.0
QUEUES_PER_STEP: Final = 100
# A queue whose read or tick failed (its master is down, say) is due again this much later.
RETRY_AFTER_MS: Final = 1_000

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TickPlan:
    queue: str
    name: str
    what: str  # tick | skip
    tick_ms: int
    next_ms: int
    version: int

    def call(self, actor: str) -> Call[TickResult]:
        return schedule_tick(self.queue, self.name, what=self.what, tick_ms=self.tick_ms,  # type: ignore[arg-type]
                             next_ms=self.next_ms, version=self.version, actor=actor)


def plan_tick(schedule: Schedule, now_ms: int) -> TickPlan | None:
    """What a scheduler at ``now_ms`` sends for ``schedule``: None when it is not due (or paused, or odd).

    Only the latest tick at or before now is considered (ticks that passed unseen are not made up); it is
    late when now is more than LATE_AFTER_MS past it, and then a ``skip`` schedule moves past it."""
    when, next_ms = schedule.when, schedule.next_ms
    if schedule.paused or when is None or schedule.key_type != "hash" or next_ms is None or next_ms > now_ms:
        return None
    tick = max(when.latest_at(now_ms), next_ms)
    late = now_ms - tick > LATE_AFTER_MS
    what = "skip" if late and schedule.missed == "skip" else "tick"
    return TickPlan(schedule.queue, schedule.name, what, tick, when.next_after(tick), schedule.version)


@dataclass(slots=True)
class TickReport:
    queues: int = 0
    enqueued: list[str] = field(default_factory=list)  # job ids
    skipped: int = 0
    refused: dict[str, str] = field(default_factory=dict)  # "queue/name" -> the script's reason
    errors: dict[str, str] = field(default_factory=dict)  # queue (or "queue/name") -> what failed
    unsettled: int = 0  # ticks to send again next round
    finished: bool = True

    @property
    def clean(self) -> bool:
        return not self.errors and not self.unsettled


def _value(result: Any) -> Any:
    """A call's result, NotReplicated unwrapped (it did run); an exception is returned as it is."""
    return result.result if isinstance(result, NotReplicated) else result


def _run(mq: EchoMQ, call: Any) -> Any:
    """``mq.run(call)``; a move fewer replicas acknowledged counts as done (the index is a hint)."""
    try:
        return mq.run(call)
    except NotReplicated as error:
        return error.result


class Ticker:
    """The rounds without the lock: what a scheduler does once it holds it (tests run two at once)."""

    def __init__(self, mq: EchoMQ, *, actor: str | None = None, queues_per_step: int = QUEUES_PER_STEP) -> None:
        self.mq = mq
        self.actor = actor or f"scheduler@{mq.actor}"
        self.queues_per_step = queues_per_step
        # Ticks sent whose outcome is not known for sure: sent again at the start of the next round.
        self.unsettled: dict[tuple[str, str], TickPlan] = {}

    def _send(self, plans: list[TickPlan], report: TickReport) -> dict[str, int | None]:
        """Sends the plans (pipelined); returns each queue's earliest score after its last tick."""
        earliest: dict[str, int | None] = {}
        for plan, result in zip(plans, self.mq.run_many([plan.call(self.actor) for plan in plans])):
            where = f"{plan.queue}/{plan.name}"
            if isinstance(result, (Unavailable, NotReplicated)):
                self.unsettled[(plan.queue, plan.name)] = plan
                if isinstance(result, Unavailable):
                    report.errors[where] = str(result)
                elif isinstance(result.result, TickResult):
                    self._took(plan, result.result, report, earliest)
                continue
            self.unsettled.pop((plan.queue, plan.name), None)
            if isinstance(result, Refused):
                report.refused[where] = result.reason
            elif isinstance(result, Exception):
                report.errors[where] = str(result)
            else:
                self._took(plan, result, report, earliest)
        report.unsettled = len(self.unsettled)
        return earliest

    @staticmethod
    def _took(plan: TickPlan, result: TickResult, report: TickReport, earliest: dict[str, int | None]) -> None:
        if result.outcome == "enqueued":
            report.enqueued.append(result.job_id)
        elif result.outcome == "skipped":
            report.skipped += 1
        earliest[plan.queue] = result.earliest_ms

    def tick_queue(self, queue: str, now_ms: int, report: TickReport | None = None) -> tuple[TickReport, int | None]:
        """Reads ``queue``'s due schedules and sends their ticks; (report, the queue's earliest score after)."""
        report = report or TickReport()
        page = _run(self.mq, schedules(queue, up_to_ms=now_ms, limit=PAGE_LIMIT))
        plans = [plan for plan in (plan_tick(s, now_ms) for s in page.schedules) if plan is not None]
        earliest = self._send(plans, report).get(queue, page.earliest_ms) if plans else page.earliest_ms
        return report, earliest

    def run_round(self, *, now_ms: int | None = None, budget_s: float | None = None,
                  between_steps: Callable[[], bool] | None = None) -> TickReport:
        """One round over the queues the index says are due; ``now_ms`` (default: the server's clock) is the
        time the ticks are computed for, so a test can drive the clock (a tick later than the server's
        clock is refused by the script)."""
        started = time.monotonic()
        report = TickReport()
        if self.unsettled:
            self._send(list(self.unsettled.values()), report)
        looked: set[str] = set()
        while True:
            due = _run(self.mq, lease_index.take_due(limit=self.queues_per_step, index_key=SCHEDULE_INDEX))
            fresh = [name for name in due.names if name not in looked]
            now = due.now_ms if now_ms is None else now_ms
            next_scores: dict[str, int] = {}
            pages = self.mq.run_many([schedules(name, up_to_ms=now, limit=PAGE_LIMIT) for name in fresh])
            plans: list[TickPlan] = []
            for name, page in zip(fresh, pages):
                page = _value(page)
                looked.add(name)
                if isinstance(page, Exception):
                    report.errors[name] = str(page)
                    next_scores[name] = due.now_ms + RETRY_AFTER_MS
                    continue
                next_scores[name] = _settled_score(page, now)
                plans.extend(plan for plan in (plan_tick(s, now) for s in page.schedules) if plan is not None)
            for name, earliest in self._send(plans, report).items():
                if earliest is not None and not (name in next_scores and next_scores[name] == now):
                    next_scores[name] = earliest
            for name in due.names:
                # A queue taken twice in a round (its score already passed again: a driven clock) keeps it.
                next_scores.setdefault(name, now)
            if due.names:
                _run(self.mq, lease_index.settle(due.mark, next_scores, index_key=SCHEDULE_INDEX))
            report.queues = len(looked)
            if not fresh:
                break
            if between_steps is not None and not between_steps():
                report.finished = False
                break
            if budget_s is not None and time.monotonic() - started >= budget_s:
                report.finished = False
                break
        return report


def _settled_score(page: SchedulePage, now_ms: int) -> int:
    """The queue's index score after this read: 0 (out of the index) when it holds no schedule; now when the
    page held more due schedules than it showed (due again next round); else its earliest score."""
    if page.total == 0:
        return 0
    if page.after is not None:
        return now_ms
    return page.earliest_ms if page.earliest_ms is not None else 0


def scheduler_lock(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                   interval_s: float = DEFAULT_INTERVAL_S, holder: str | None = None) -> Redlock:
    """The sweeper's kind of lock on ``emq:lock:scheduler``: a Redlock over ``lock_urls`` (default
    ``EMQ_LOCK_URLS``) when two or more, else a lease on one Redis; it lives three intervals (3 s at least)."""
    urls = lock_urls_from_env() if lock_urls is None else list(lock_urls)
    ttl_ms = max(int(interval_s * 3000), 3000)
    if len(urls) >= 2:
        return Redlock(lock_clients(urls), SCHEDULER_LOCK, ttl_ms=ttl_ms, holder=holder)
    client = lock_clients(urls, timeout_s=1.0)[0] if urls else connect(redis_url(url), socket_timeout=1.0)
    return Redlock([client], SCHEDULER_LOCK, ttl_ms=ttl_ms, holder=holder)


class Scheduler:
    """Each round: hold the lock (take it, or extend it if ours), then a :class:`Ticker` round."""

    def __init__(self, mq: EchoMQ, lock: Redlock, *, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.mq, self.lock, self.interval_s = mq, lock, interval_s
        self.ticker = Ticker(mq, actor=lock.holder)
        self.last: TickReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def holds_lock(self) -> bool:
        try:
            if self.lock.lease is not None:
                self.lock.extend()
                return True
        except LockLost:
            log.warning("scheduler lost %s; another process may run the ticks now", self.lock.key)
        except EmqError as error:
            log.warning("scheduler could not extend %s: %s", self.lock.key, error)
            return False
        return self.lock.try_acquire() is not None

    def _still_held(self) -> bool:
        try:
            self.lock.extend()
        except LockLost:
            log.warning("scheduler lost %s during a round", self.lock.key)
            return False
        return True

    def run_once(self, *, now_ms: int | None = None) -> TickReport | None:
        """One round; None when another process holds the lock (or Redis could not be reached)."""
        try:
            if not self.holds_lock():
                return None
            self.last = self.ticker.run_round(now_ms=now_ms, budget_s=max(self.interval_s, 0.1),
                                              between_steps=self._still_held)
        except EmqError as error:
            log.warning("scheduler round failed: %s", error)
            return None
        return self.last

    def run(self) -> None:
        try:
            while not self._stop.is_set():
                self.run_once()
                self._stop.wait(self.interval_s)
        finally:
            try:
                self.lock.release()
            except Exception as error:  # the lock lapses by itself; another process takes over then
                log.warning("scheduler could not release %s: %s", self.lock.key, error)

    def start(self) -> Scheduler:
        self._thread = threading.Thread(target=self.run, name="emq-scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    async def run_async(self) -> None:
        try:
            while not self._stop.is_set():
                await asyncio.to_thread(self.run_once)
                await asyncio.sleep(self.interval_s)
        finally:
            await asyncio.to_thread(self.lock.release)


def start_scheduler(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                    interval_s: float = DEFAULT_INTERVAL_S, holder: str | None = None) -> Scheduler:
    """What a console process (or ``emq scheduler``) calls: its own client and lock, ticking in a thread."""
    mq = EchoMQ.from_url(url, actor=holder)
    lock = scheduler_lock(url=url, lock_urls=lock_urls, interval_s=interval_s, holder=mq.actor)
    return Scheduler(mq, lock, interval_s=interval_s).start()
