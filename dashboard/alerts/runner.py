"""This console process's alert evaluator: a round every ``EMQ_ALERTS_INTERVAL_S``, under a single-holder lock.

Every console process offers to evaluate; the lock ``emq:lock:alerts`` (a
lease on the EchoMQ Redis, or a Redlock over ``EMQ_LOCK_URLS``, as the
sweeper's) lets one of them at a time. A round extends the lock after every
rule, and ends at once when it is lost. Redis may be down at start: the
thread keeps trying (rounds that cannot take the lock do nothing).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.conf import settings
from django.db import close_old_connections

from queues import EmqError
from queues.client import default_actor
from queues.connection import connect
from queues.keys import ALERTS_LOCK
from queues.locks import LockLost, Redlock, lock_clients

from .evaluator import RoundReport, evaluate_round

log = logging.getLogger(__name__)


class AlertEvaluator:
    def __init__(self, make_lock: Callable[[], Redlock], *, interval_s: float) -> None:
        self.make_lock, self.interval_s = make_lock, interval_s
        self._lock: Redlock | None = None
        self.last: RoundReport | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def lock(self) -> Redlock:
        # Made on first use, in the evaluator's thread: a Redis that is down at start cannot stop the console.
        if self._lock is None:
            self._lock = self.make_lock()
        return self._lock

    def holds_lock(self) -> bool:
        try:
            if self.lock.lease is not None:
                self.lock.extend()
                return True
        except LockLost:
            log.warning("the alert evaluator lost %s; another process may evaluate now", self.lock.key)
        return self.lock.try_acquire() is not None

    def _still_held(self) -> bool:
        try:
            self.lock.extend()
        except LockLost:
            return False
        return True

    def run_once(self) -> RoundReport | None:
        """One round; None when another process holds the lock (or Redis cannot be reached)."""
        close_old_connections()
        try:
            if not self.holds_lock():
                return None
            self.last = evaluate_round(still_held=self._still_held)
        except (EmqError, OSError) as error:
            log.warning("alert round failed: %s", error)
            return None
        finally:
            close_old_connections()
        return self.last

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.run_once()
            except Exception:  # a round's fault is logged; the next round runs
                log.exception("alert round failed")
            self._stop.wait(self.interval_s)
        if self._lock is not None:
            self._lock.release()

    def start(self) -> AlertEvaluator:
        self._thread = threading.Thread(target=self.run, name="emq-alerts", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)


_state = threading.Lock()
_running: AlertEvaluator | None = None


def alerts_lock(*, interval_s: float, holder: str | None = None) -> Redlock:
    """The sweeper's kind of lock on ``emq:lock:alerts``: a Redlock over ``EMQ_LOCK_URLS`` when it lists two or
    more, else a lease on the EchoMQ Redis; it lives three intervals (3 s at least)."""
    urls = list(settings.EMQ_LOCK_URLS)
    ttl_ms = max(int(interval_s * 3000), 3000)
    holder = holder or f"alerts@{default_actor()}"
    if len(urls) >= 2:
        return Redlock(lock_clients(urls), ALERTS_LOCK, ttl_ms=ttl_ms, holder=holder)
    client = lock_clients(urls, timeout_s=1.0)[0] if urls else connect(str(settings.EMQ_REDIS_URL), socket_timeout=1.0)
    return Redlock([client], ALERTS_LOCK, ttl_ms=ttl_ms, holder=holder)


def alerts_start(*, interval_s: float | None = None) -> AlertEvaluator | None:
    """Starts this process's evaluator once (None when ``EMQ_ALERTS_INTERVAL_S`` is 0)."""
    global _running
    interval = float(settings.EMQ_ALERTS_INTERVAL_S if interval_s is None else interval_s)
    if interval <= 0:
        return None
    with _state:
        if _running is None:
            _running = AlertEvaluator(lambda: alerts_lock(interval_s=interval), interval_s=interval).start()
        return _running


def alerts_stop() -> None:
    global _running
    with _state:
        running, _running = _running, None
    if running is not None:
        running.stop()
