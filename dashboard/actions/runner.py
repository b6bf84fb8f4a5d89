"""Runs bulk actions outside the web request: one thread per run in the process that started it.

Progress goes to the run's audit row (at most every PROGRESS_EVERY_S), so any
console process can show it and any process can ask it to stop: the runner
checks for a cancel request between steps, each of which is one bounded call.
A run whose process died writes nothing more: after ``EMQ_RUN_ABANDONED_MINUTES``
without progress the sweep (:func:`abandoned_sweep`, run by every console
process) marks its row as abandoned, so its pages stop following it and a
cancel answers that there is nothing left to cancel.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Final

from django.conf import settings
from django.db import close_old_connections, connection
from django.db.models import Q
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
    # In the request's context: the run reads and moves on the deployment its confirmation was shown for.
    thread = threading.Thread(target=contextvars.copy_context().run, args=(_run, entry.pk, steps, stop),
                              name=f"emq-bulk-{entry.pk}", daemon=True)
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


def _save(entry_id: int, tally: Tally, **fields: object) -> int:
    """Writes the run's progress (and its end) while its row says it runs; 0 once the sweep marked it abandoned."""
    return AuditEntry.objects.filter(pk=entry_id, outcome=AuditEntry.Outcome.RUNNING).update(
        moved=tally.moved, skipped=tally.skipped, missing=tally.missing, errors=tally.errors,
        outcomes=tally.outcomes, updated_at=timezone.now(), **fields)


ABANDONED_PREFIX: Final = "abandoned: "


def abandoned_text(minutes: float) -> str:
    return (f"{ABANDONED_PREFIX}no progress for {minutes:g} minutes: the console process that ran it stopped; "
            "what it moved before is counted")


def abandoned_sweep() -> int:
    """Marks the running rows without progress for ``EMQ_RUN_ABANDONED_MINUTES`` (none of this process's live
    runs) as abandoned; returns how many. Any process may run it: the update is conditional, so two agree."""
    minutes = float(settings.EMQ_RUN_ABANDONED_MINUTES)
    cutoff = timezone.now() - timedelta(minutes=minutes)
    with _lock:
        ours = [pk for pk, thread in _threads.items() if thread.is_alive()]
    stale = AuditEntry.objects.filter(outcome=AuditEntry.Outcome.RUNNING).filter(
        Q(updated_at__lt=cutoff) | Q(updated_at__isnull=True, created_at__lt=cutoff)).exclude(pk__in=ours)
    return stale.update(outcome=AuditEntry.Outcome.ERROR, finished_at=timezone.now(), result=abandoned_text(minutes))


def abandoned_sweep_forever(stop: threading.Event, interval_s: float) -> None:
    """The sweep every ``interval_s`` until ``stop`` is set (a console process's daemon thread)."""
    while not stop.wait(interval_s):
        try:
            abandoned_sweep()
        except Exception:
            log.exception("the sweep of abandoned runs failed")
        finally:
            close_old_connections()


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
            # Cancelled from any process, or marked abandoned while this one was stalled: either way, stop.
            if not AuditEntry.objects.filter(pk=entry_id, outcome=AuditEntry.Outcome.RUNNING,
                                             cancel_requested_by="").exists():
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
