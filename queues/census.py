"""A process's picture of every queue's counts, read a few queues at a time.

The overview sorts and totals thousands of queues. Reading each of them on
every render (or every push) would make the console's cost on Redis grow
with what exists, so a :class:`Census` keeps the last ``stats`` read of every
registered queue, and whoever owns it calls :meth:`Census.step` at a bounded
rate: a whole pass over N queues then takes N / rate seconds, and a page says
how old its readings are. What a page reads of its own rows is absorbed too,
so the queues on screen are never older in the census than on the screen.

Plain Python and thread-safe: a background thread steps it while the pages
(sync views, the live consumers' event loop) select from it.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from . import reads
from .client import EchoMQ
from .errors import EmqError
from .reads import QueueStats
from .why import census_severity

# Each sort and the order it starts in: the worst first where a number says how bad things are.
SORTS: Final = {"name": "asc", "failed": "desc", "due": "desc", "delayed": "desc", "active": "desc", "done": "desc",
                 "oldest": "desc", "lapsed": "desc", "reason": "desc"}
# The filter's mark for "names that start with" (else: names that contain, case-blind).
PREFIX_MARK: Final = "^"
# How long a count sort may be reused while only counts changed (the page says its order is a snapshot).
SELECTION_KEPT_S: Final = 1.0
_TOTALLED: Final = ("pending", "active", "done", "failed", "due", "lapsed")


def _sort_key(sort: str) -> Callable[[QueueStats], Any]:
    if sort == "failed":
        return lambda s: s.counts["failed"]
    if sort == "due":
        return lambda s: s.due
    if sort == "delayed":
        return lambda s: s.delayed
    if sort in ("active", "done"):
        return lambda s: s.counts[sort]
    if sort == "lapsed":
        return lambda s: s.lapsed
    if sort == "reason":
        return census_severity
    if sort == "oldest":
        # The oldest due job waits longest: a smaller score is an older one. No due job: waits 0.
        return lambda s: -s.oldest_due_ms if s.oldest_due_ms is not None else float("-inf")
    raise ValueError(f"no such sort: {sort!r}")


def name_matcher(name_filter: str) -> Callable[[str], bool] | None:
    """What the overview's filter keeps: names containing it, case-blind; with a leading ``^``, names
    starting with it. None: the filter keeps every name."""
    text = name_filter.strip()
    if text.startswith(PREFIX_MARK):
        prefix = text[len(PREFIX_MARK):].lower()
        return (lambda n: n.lower().startswith(prefix)) if prefix else None
    needle = text.lower()
    return (lambda n: needle in n.lower()) if needle else None


def filter_names(names: Iterable[str], name_filter: str) -> list[str]:
    matches = name_matcher(name_filter)
    return list(names) if matches is None else [n for n in names if matches(n)]


def _contribution(stats: QueueStats | None) -> tuple[int, ...]:
    if stats is None:
        return (0,) * len(_TOTALLED)
    return (stats.counts["pending"], stats.counts["active"], stats.counts["done"], stats.counts["failed"],
            stats.due, stats.lapsed)


def _order_signature(stats: QueueStats) -> tuple[Any, ...]:
    return (stats.counts["failed"], stats.due, stats.delayed, stats.counts["active"], stats.counts["done"], stats.lapsed,
            stats.oldest_due_ms)


@dataclass(frozen=True, slots=True)
class CensusTotals:
    """The sums over every queue the census has read, and how fresh they are."""

    queues: int  # registered
    read: int  # of them, read at least once (the rest are not in the sums)
    unreadable: int  # their last read failed
    pending: int
    active: int
    done: int
    failed: int
    due: int
    lapsed: int
    oldest_read_at: float | None  # unix seconds: the oldest reading in the sums
    last_pass_s: float | None  # how long the last whole pass took

    @property
    def delayed(self) -> int:
        return self.pending - self.due

    @property
    def complete(self) -> bool:
        return self.read >= self.queues

    def age_s(self, now: float | None = None) -> float | None:
        if self.oldest_read_at is None:
            return None
        return max(0.0, (time.time() if now is None else now) - self.oldest_read_at)


class Census:
    """The last ``stats`` of every registered queue; see the module's docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.names: list[str] | None = None  # None until the registry was read once
        self.names_error = ""
        self.names_odd: list[str] = []
        self._stats: dict[str, QueueStats] = {}
        self._read_at: dict[str, float] = {}
        self._errors: dict[str, str] = {}
        self._sums = [0] * len(_TOTALLED)
        self._cursor = 0
        self._pass_started: float | None = None
        self.last_pass_s: float | None = None
        # Bumped when a name comes or goes or a value that a sort uses changes: selections are kept until then.
        self.version = 0
        self.names_version = 0  # bumped when a name comes or goes
        self._selections: dict[tuple[str, str, bool], tuple[int, int, float, list[str]]] = {}

    # What is read ---------------------------------------------------------

    def set_names(self, names: Iterable[str], *, error: str = "", odd: Sequence[str] = ()) -> None:
        """The registered queues now (sorted here); the readings of queues no longer there are dropped.
        ``odd``: registry entries that are not queue names (the page lists them)."""
        ordered = sorted(set(names))
        with self._lock:
            self.names_error = error
            self.names_odd = list(odd)
            if ordered == self.names:
                return
            keep = set(ordered)
            for gone in [n for n in self._stats if n not in keep]:
                self._forget(gone)
            for gone in [n for n in self._errors if n not in keep]:
                del self._errors[gone]
            self.names = ordered
            self._cursor = min(self._cursor, len(ordered))
            self.names_version += 1
            self._bump()

    def refresh_names(self, mq: EchoMQ, *, force: bool = True) -> None:
        """Reads the registry (SSCAN); unless ``force``, only when its size (SCARD, O(1)) differs from ours."""
        if not force and self.names is not None and not self.names_error:
            try:
                if mq.queue_count() == len(self.names):
                    return
            except EmqError:
                pass  # the registry's master is away: known_queues says so and serves the list read last
        known = mq.known_queues()
        self.set_names(known.names, error=known.stale, odd=known.odd)

    def absorb(self, name: str, result: QueueStats | Exception) -> None:
        """A read of one queue, by the pass or by a page (a failed read keeps the last good numbers out)."""
        with self._lock:
            self._absorb(name, result, time.time())

    def absorb_many(self, names: Sequence[str], results: Sequence[QueueStats | Exception]) -> None:
        now = time.time()
        with self._lock:
            for name, result in zip(names, results):
                self._absorb(name, result, now)

    def step(self, mq: EchoMQ, at_most: int) -> int:
        """Reads the next ``at_most`` queues of the pass (pipelined ``stats``); returns how many scripts ran.

        A pass ends at the last name; the next call starts the next pass. Raises what ``run_many`` raises
        when Redis cannot be reached (the pass then resumes where it stopped).
        """
        with self._lock:
            names = self.names or []
            if self._cursor >= len(names):
                self._cursor = 0
            if self._cursor == 0:
                self._pass_started = time.monotonic()
            chunk = names[self._cursor:self._cursor + max(0, at_most)]
        if not chunk:
            return 0
        results = mq.run_many([reads.stats(n) for n in chunk])
        self.absorb_many(chunk, results)
        with self._lock:
            self._cursor += len(chunk)
            if self._cursor >= len(self.names or []) and self._pass_started is not None:
                self.last_pass_s = time.monotonic() - self._pass_started
        return len(chunk)

    @property
    def pass_done(self) -> bool:
        """The current pass has read its last queue (the next :meth:`step` starts another)."""
        with self._lock:
            return self._cursor >= len(self.names or [])

    # What the pages take -----------------------------------------------

    def stats(self, name: str) -> QueueStats | None:
        with self._lock:
            return self._stats.get(name)

    def readings(self, names: Iterable[str]) -> dict[str, QueueStats | str]:
        """Per name, its last reading or its last read's error (names never read are left out)."""
        with self._lock:
            found: dict[str, QueueStats | str] = {}
            for name in names:
                if name in self._stats:
                    found[name] = self._stats[name]
                elif name in self._errors:
                    found[name] = self._errors[name]
            return found

    def error(self, name: str) -> str:
        with self._lock:
            return self._errors.get(name, "")

    def select(self, name_filter: str = "", sort: str = "name", descending: bool | None = None) -> list[str]:
        """The registered names the filter keeps, in the sort's order (ties by name); queues not read yet
        (or unreadable) come last whatever the direction. Kept until the census changes."""
        sort = sort if sort in SORTS else "name"
        if descending is None:
            descending = SORTS[sort] == "desc"
        key = (name_filter.strip(), sort, descending)
        now = time.monotonic()
        with self._lock:
            kept = self._selections.get(key)
            # A count sort is kept up to SELECTION_KEPT_S while only counts changed: busy queues change
            # them many times a second, and every page of the same query shares the one sort.
            if kept is not None and (kept[0] == self.version
                                     or (kept[1] == self.names_version and now - kept[2] < SELECTION_KEPT_S)):
                return kept[3]
            names = filter_names(self.names or [], name_filter)
            if sort == "name":
                ordered = names[::-1] if descending else names
            else:
                by = _sort_key(sort)
                known = [(by(self._stats[n]), n) for n in names if n in self._stats]
                # Stable: equal values keep the names' order, in either direction.
                known.sort(key=lambda pair: pair[0], reverse=descending)
                ordered = [n for _, n in known] + [n for n in names if n not in self._stats]
            if len(self._selections) > 64:
                self._selections.clear()
            self._selections[key] = (self.version, self.names_version, now, ordered)
            return ordered

    def totals(self) -> CensusTotals:
        with self._lock:
            names = self.names or []
            oldest = min(self._read_at.values(), default=None)
            pending, active, done, failed, due, lapsed = self._sums
            return CensusTotals(len(names), len(self._stats), len(self._errors), pending, active, done, failed, due,
                                lapsed, oldest_read_at=oldest, last_pass_s=self.last_pass_s)

    # Inside the lock ------------------------------------------------------

    def _absorb(self, name: str, result: QueueStats | Exception, now: float) -> None:
        if not self._registered(name):
            return  # not (or no longer) registered: a page may show a queue the registry forgot
        if not isinstance(result, QueueStats):
            self._errors[name] = str(result) if isinstance(result, EmqError) else f"{type(result).__name__}: {result}"
            if name in self._stats:
                self._forget(name)
                self._bump()
            return
        self._errors.pop(name, None)
        previous = self._stats.get(name)
        for i, (old, new) in enumerate(zip(_contribution(previous), _contribution(result))):
            self._sums[i] += new - old
        self._stats[name] = result
        self._read_at[name] = now
        if previous is None or _order_signature(previous) != _order_signature(result):
            self._bump()

    def _registered(self, name: str) -> bool:
        if self.names is None:
            return True
        at = bisect_left(self.names, name)
        return at < len(self.names) and self.names[at] == name

    def _forget(self, name: str) -> None:
        previous = self._stats.pop(name)
        self._read_at.pop(name, None)
        for i, old in enumerate(_contribution(previous)):
            self._sums[i] -= old

    def _bump(self) -> None:
        self.version += 1
