"""Runs bulk actions outside the web request: one thread per run in the process that started it.

Progress goes to the run's audit row (at most every PROGRESS_EVERY_S), so any
console process can show it and any process can ask it to stop: the runner
checks for a cancel request between steps, each of which is one bounded call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Final

from django.db import close_old_connections, connection
from django.utils import timezone

from queues import EmqError

from .bulk import Tally, drive
from .models import AuditEntry, bounded

log = logging.getLogger(__name__)

PROGRESS_EVERY_S: Final = 0.25

_stops: dict[int, threading.Event] = {}
_threads: dict[int, threading.Thread] = {}
_lock = threading.Lock()


def start(entry: AuditEntry, steps: Iterator[Tally]) -> None:
    stop = threading.Event()
    thread = threading.Thread(target=_run, args=(entry.pk, steps, stop), name=f"emq-bulk-{entry.pk}", daemon=True)
    with _lock:
        _stops[entry.pk] = stop
        _threads[entry.pk] = thread
    thread.start()


def request_stop(entry_id: int) -> None:
    """Stops a run of this process at once; runs of other processes see the audit row's flag."""
    with _lock:
        stop = _stops.get(entry_id)
    if stop is not None:
        stop.set()


def wait(entry_id: int, timeout: float | None = None) -> bool:
    """Waits for a run of this process to end; True when it has (or is not running here)."""
    with _lock:
        thread = _threads.get(entry_id)
    if thread is None:
        return True
    thread.join(timeout)
    return not thread.is_alive()


def _save(entry_id: int, tally: Tally, **fields: object) -> None:
    AuditEntry.objects.filter(pk=entry_id).update(
        moved=tally.moved, skipped=tally.skipped, missing=tally.missing, errors=tally.errors,
        outcomes=tally.outcomes, updated_at=timezone.now(), **fields)


def _run(entry_id: int, steps: Iterator[Tally], stop: threading.Event) -> None:
    last = Tally()
    saved_at = checked_at = time.monotonic()

    def on_progress(tally: Tally) -> None:
        nonlocal last, saved_at
        last = tally
        if time.monotonic() - saved_at >= PROGRESS_EVERY_S:
            _save(entry_id, tally)
            saved_at = time.monotonic()

    def should_stop() -> bool:
        nonlocal checked_at
        if stop.is_set():
            return True
        if time.monotonic() - checked_at >= PROGRESS_EVERY_S:
            checked_at = time.monotonic()
            if AuditEntry.objects.filter(pk=entry_id).exclude(cancel_requested_by="").exists():
                stop.set()
        return stop.is_set()

    try:
        end = drive(steps, should_stop=should_stop, on_progress=on_progress)
        outcome = AuditEntry.Outcome.CANCELLED if end.cancelled else AuditEntry.Outcome.FINISHED
        verb = "cancelled after" if end.cancelled else "finished in"
        _save(entry_id, end.tally, outcome=outcome, finished_at=timezone.now(),
              result=f"{verb} {end.seconds:.1f} s: {end.tally.describe()}")
    except EmqError as error:
        _save(entry_id, last, outcome=AuditEntry.Outcome.ERROR, finished_at=timezone.now(),
              result=bounded(f"stopped by an error after {last.describe()}: {error}"))
    except Exception as error:
        log.exception("bulk run %s failed", entry_id)
        _save(entry_id, last, outcome=AuditEntry.Outcome.ERROR, finished_at=timezone.now(),
              result=f"stopped by an unexpected error after {last.describe()}: {type(error).__name__}")
    finally:
        with _lock:
            _stops.pop(entry_id, None)
            _threads.pop(entry_id, None)
        close_old_connections()
        connection.close()
