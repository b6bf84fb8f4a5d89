"""What searches may cost a console process: how many run at once, per person and in all, and one duty cycle.

Every search step is a script that holds Redis for up to a few milliseconds;
many at once, or one after the other without a pause, would hold it most of
the time. So a person runs at most ``EMQ_SEARCH_PER_USER`` searches at once
and the process ``EMQ_SEARCH_PER_PROCESS`` (a search socket beyond them waits
its turn, saying so; a count for a confirmation is refused in words), and
every search of the process, bulk runs over a search included, shares one
:class:`~queues.search.Pacer`: together they keep Redis busy at most
``EMQ_SEARCH_DUTY`` of the time, however many there are.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Final

from django.conf import settings

from queues import InvalidInput
from queues.search import Limits, Pacer


class SearchBusy(InvalidInput):
    """No search slot is free for this person (or this process) now: the text says whose and how many."""


class SearchSlots:
    """Counts the searches running in this process, per person; thread-safe (views run in threads)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_user: Counter[object] = Counter()

    def running(self, user_key: object) -> tuple[int, int]:
        with self._lock:
            return self._by_user[user_key], sum(self._by_user.values())

    def take(self, user_key: object) -> None:
        """Takes a slot for one search of ``user_key``, or raises :class:`SearchBusy` saying why none is free."""
        per_user, per_process = settings.EMQ_SEARCH_PER_USER, settings.EMQ_SEARCH_PER_PROCESS
        with self._lock:
            mine, everyone = self._by_user[user_key], sum(self._by_user.values())
            if mine >= per_user:
                raise SearchBusy(f"{mine} searches of yours are running (at most {per_user} at once)")
            if everyone >= per_process:
                raise SearchBusy(f"{everyone} searches are running on this console process (at most {per_process} "
                                 "at once)")
            self._by_user[user_key] += 1

    def give(self, user_key: object) -> None:
        with self._lock:
            self._by_user[user_key] -= 1
            if self._by_user[user_key] <= 0:
                del self._by_user[user_key]

    @contextmanager
    def held(self, user_key: object) -> Iterator[None]:
        """A slot for a search that cannot wait (a count a confirmation asks for): refused in words when none is
        free."""
        try:
            self.take(user_key)
        except SearchBusy as busy:
            raise SearchBusy(f"not counted now: {busy}; try again when one of them ends") from None
        try:
            yield
        finally:
            self.give(user_key)


SLOTS = SearchSlots()
_pacer: Pacer | None = None
_pacer_lock = threading.Lock()


def process_pacer() -> Pacer:
    """The duty cycle every search of this process shares (made on first use, from the settings)."""
    global _pacer
    with _pacer_lock:
        if _pacer is None or _pacer.duty != settings.EMQ_SEARCH_DUTY:
            _pacer = Pacer(settings.EMQ_SEARCH_DUTY)
        return _pacer


CHECKED_MAX_MATCHES: Final = 10_000
CHECKED_STEP_MATCHES: Final = 50


def console_limits(limits: Limits, *, checked: bool = False) -> Limits:
    """``limits`` held to the console's Redis-time budget per search and, ``checked`` (a
    payload-text search whose matches are checked against masked values), to fewer matches: each comes with its
    head, which the check needs, and a step may read their payloads whole."""
    budget = settings.EMQ_SEARCH_REDIS_S
    bounded = replace(limits, redis_seconds=budget if limits.redis_seconds is None else min(limits.redis_seconds, budget))
    if checked:
        return replace(bounded, detail=None, max_matches=CHECKED_MAX_MATCHES, step_matches=CHECKED_STEP_MATCHES)
    return bounded
