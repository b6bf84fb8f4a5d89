"""How many jobs a lone handler claims at once, from how long its handler and a round trip take.

A lone handler that is quicker than a round trip would otherwise wait a round
trip per job, idle: one ``finish_claim`` per job, each reporting one outcome
and claiming one job. While the handler is quicker than both a round trip and
``FAST_HANDLER_S``, its engine claims as many jobs as it runs in one round
trip (at most ``MAX_DEPTH``): one round trip, and one script, then serve
several jobs. A job so claimed waits behind at most ``MAX_DEPTH - 1``
handlers of under ``FAST_HANDLER_S`` each, about one round trip. The
handler's time is estimated quick to rise and slow to fall, so that one slow
job brings the depth back to one at once; a slow handler always has one.
"""

from __future__ import annotations

from typing import Final

FAST_HANDLER_S: Final = 0.001
MAX_DEPTH: Final = 8


class ClaimDepth:
    def __init__(self) -> None:
        # Seconds; None before the first of each.
        self.handler_s: float | None = None
        self.trip_s: float | None = None

    def handler_took(self, seconds: float) -> None:
        before = self.handler_s
        # Quick to rise, slow to fall.
        self.handler_s = seconds if before is None or seconds > before else _smoothed(before, seconds)

    def trip_took(self, seconds: float) -> None:
        self.trip_s = _smoothed(self.trip_s, seconds)

    def wanted(self) -> int:
        """How many jobs to hold claimed (the running one not counted for the async engine's jobs ahead)."""
        handler_s, trip_s = self.handler_s, self.trip_s
        if handler_s is None or trip_s is None or handler_s >= FAST_HANDLER_S or handler_s >= trip_s:
            return 1
        return min(MAX_DEPTH, 1 + int(trip_s / max(handler_s, 1e-6)))


def _smoothed(before: float | None, sample: float) -> float:
    """A moving average that forgets an old sample in about ten new ones."""
    return sample if before is None else 0.9 * before + 0.1 * sample
