"""This console process's scheduler: it offers to run the schedules' ticks, and the lock lets one process do it.

Started like the sweeper (see :mod:`dashboard.sweeper`): in the background, retrying while Redis cannot be
reached, so the console serves its pages meanwhile; stopped at exit, releasing the lock so another process
takes over at once. ``EMQ_SCHEDULER_INTERVAL_S`` = 0: this process never runs ticks.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings

from queues import EmqError
from queues.client import default_actor
from queues.scheduler import Scheduler, start_scheduler

log = logging.getLogger(__name__)

RETRY_S = 1.0

_state_lock = threading.Lock()
_scheduler: Scheduler | None = None
_starter: threading.Thread | None = None
_stop = threading.Event()


def scheduler_start(*, interval_s: float | None = None, retry_s: float = RETRY_S) -> threading.Thread | None:
    """Starts this process's scheduler once (None when disabled); the thread that starts it retries meanwhile."""
    global _starter
    interval = float(settings.EMQ_SCHEDULER_INTERVAL_S if interval_s is None else interval_s)
    if interval <= 0:
        return None
    with _state_lock:
        if _starter is not None and (_starter.is_alive() or _scheduler is not None):
            return _starter
        _stop.clear()
        options = {"url": str(settings.EMQ_REDIS_URL), "lock_urls": list(settings.EMQ_LOCK_URLS),
                   "interval_s": interval, "holder": f"scheduler@{default_actor()}"}
        _starter = threading.Thread(target=_start_when_reachable, kwargs={**options, "retry_s": retry_s},
                                    name="emq-scheduler-start", daemon=True)
        _starter.start()
        return _starter


def _start_when_reachable(*, retry_s: float, **options: object) -> None:
    global _scheduler
    while not _stop.is_set():
        try:
            scheduler = start_scheduler(**options)  # type: ignore[arg-type]
        except (EmqError, OSError) as error:
            log.warning("the scheduler waits for redis: %s", error)
            _stop.wait(retry_s)
            continue
        with _state_lock:
            if _stop.is_set():
                scheduler.stop()
                return
            _scheduler = scheduler
        return


def scheduler_stop() -> None:
    global _scheduler, _starter
    _stop.set()
    with _state_lock:
        scheduler, _scheduler = _scheduler, None
        starter, _starter = _starter, None
    if starter is not None:
        starter.join(5)
    if scheduler is not None:
        scheduler.stop()


def running_scheduler() -> Scheduler | None:
    return _scheduler
