"""This console process's lease sweeper, and who holds the sweeper lock, for the pages.

Every server process offers to sweep (see :mod:`dashboard.asgi`); the lock in
:mod:`queues.sweeper` lets one of them at a time. The sweeping process also
runs queue discovery (:mod:`queues.discovery`) at ``EMQ_DISCOVERY_SCANS_PER_S``. Redis may be down when the
console starts: the sweeper is then started by a background thread that keeps
trying, so the console serves its pages (with a banner) meanwhile. Each
process also sweeps the audit log for bulk runs whose process died
(:func:`dashboard.actions.runner.abandoned_sweep`), at the same interval.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings

from dashboard.actions.runner import abandoned_sweep_forever
from queues import EmqError
from queues.client import default_actor
from queues.locks import LockHolder, Redlock
from queues.sweeper import ShardLocks, Sweeper, SweepReport, start_sweeper, sweeper_lock

log = logging.getLogger(__name__)

RETRY_S = 1.0

_state_lock = threading.Lock()
_sweeper: Sweeper | None = None
_starter: threading.Thread | None = None
_runs_sweep: threading.Thread | None = None
_stop = threading.Event()
_readers: dict[tuple[str, tuple[str, ...]], Redlock | ShardLocks] = {}


@dataclass(frozen=True, slots=True)
class SweeperStatus:
    """What the pages say about the sweeper: the lock's holder (from Redis) and this process's part."""

    holder: LockHolder | None
    error: str
    this_process: str  # our holder name; empty when this process does not sweep
    interval_s: float
    last: SweepReport | None

    @property
    def until(self) -> datetime | None:
        return datetime.fromtimestamp(self.holder.until, UTC) if self.holder else None

    @property
    def seconds_left(self) -> int:
        return max(0, round(self.holder.until - time.time())) if self.holder else 0

    @property
    def ours(self) -> bool:
        return self.holder is not None and self.holder.holder == self.this_process


def holder_name() -> str:
    return f"sweeper@{default_actor()}"


def _lock_urls(lock_urls: Sequence[str] | None) -> list[str]:
    return list(settings.EMQ_LOCK_URLS if lock_urls is None else lock_urls)


def sweeper_start(*, url: str | None = None, lock_urls: Sequence[str] | None = None,
                  interval_s: float | None = None, holder: str | None = None,
                  retry_s: float = RETRY_S) -> threading.Thread | None:
    """Starts this process's sweeper once (None when disabled: ``EMQ_SWEEPER_INTERVAL_S`` = 0).

    Returns the thread that starts it, which retries every ``retry_s`` while Redis cannot be reached.
    """
    global _starter, _runs_sweep
    interval = float(settings.EMQ_SWEEPER_INTERVAL_S if interval_s is None else interval_s)
    if interval <= 0:
        return None
    with _state_lock:
        if _starter is not None and (_starter.is_alive() or _sweeper is not None):
            return _starter
        _stop.clear()
        if _runs_sweep is None or not _runs_sweep.is_alive():
            _runs_sweep = threading.Thread(target=abandoned_sweep_forever, args=(_stop, interval),
                                           name="emq-abandoned-runs", daemon=True)
            _runs_sweep.start()
        options = {"url": url or str(settings.EMQ_REDIS_URL), "lock_urls": _lock_urls(lock_urls),
                   "interval_s": interval, "holder": holder or holder_name(),
                   "discovery_scans_per_s": float(settings.EMQ_DISCOVERY_SCANS_PER_S),
                   "discovery_count": int(settings.EMQ_DISCOVERY_SCAN_COUNT)}
        _starter = threading.Thread(target=_start_when_reachable, kwargs={**options, "retry_s": retry_s},
                                    name="emq-sweeper-start", daemon=True)
        _starter.start()
        return _starter


def _start_when_reachable(*, retry_s: float, **options: object) -> None:
    global _sweeper
    while not _stop.is_set():
        try:
            sweeper = start_sweeper(**options)  # type: ignore[arg-type]
        except (EmqError, OSError) as error:
            log.warning("the sweeper waits for redis: %s", error)
            _stop.wait(retry_s)
            continue
        with _state_lock:
            if _stop.is_set():
                sweeper.stop()
                return
            _sweeper = sweeper
        log.info("sweeping lapsed leases every %s s as %s", options["interval_s"], options["holder"])
        return


def sweeper_stop() -> None:
    """Stops this process's sweeper and releases the lock, so another process takes over at once."""
    global _sweeper, _starter
    _stop.set()
    with _state_lock:
        sweeper, _sweeper = _sweeper, None
        starter, _starter = _starter, None
    if starter is not None:
        starter.join(5)
    if sweeper is not None:
        sweeper.stop()


def running_sweeper() -> Sweeper | None:
    return _sweeper


def _reader(url: str, lock_urls: list[str]) -> Redlock | ShardLocks:
    key = (url, tuple(lock_urls))
    lock = _readers.get(key)
    if lock is None:
        lock = _readers[key] = sweeper_lock(url=url, lock_urls=lock_urls)
    return lock


def sweeper_status() -> SweeperStatus:
    """Who holds the sweeper lock and until when; never raises (an unreachable Redis is an error in words)."""
    sweeper = _sweeper
    interval = float(settings.EMQ_SWEEPER_INTERVAL_S)
    this_process = sweeper.lock.holder if sweeper else ""
    last = sweeper.last if sweeper else None
    try:
        lock = sweeper.lock if sweeper else _reader(str(settings.EMQ_REDIS_URL), _lock_urls(None))
    except (EmqError, OSError) as error:
        return SweeperStatus(None, f"cannot read the sweeper lock: {error}", this_process, interval, last)
    holder, unreachable = lock.inspect()
    why = ""
    if holder is None and unreachable == len(lock.masters):
        why = f"cannot read the sweeper lock: none of its {unreachable} Redis answers"
    return SweeperStatus(holder, why, this_process, interval, last)
