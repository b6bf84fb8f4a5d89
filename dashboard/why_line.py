"""The "why" line at the top of the queue page and the job page: the why read's first reason, the rest below.

Built from one :class:`queues.why.Why` (the same answer ``emq why`` and the API give); the live pages
render it again with every push, so a pause, a worker's death or a lease lapse changes it within
the page's live latency, at one why read per push of a page that is on screen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from queues import why

# How a reason looks: bad (not moving, someone must act), warn (waiting on something), ok (moving or done).
_TONE = {
    "unknown": "bad", "paused": "warn", "claims_refused": "bad", "no_live_worker": "bad",
    "arrivals_outpace_service": "bad", "at_capacity": "warn", "sweeper_not_running": "bad",
    "no_cause_found": "warn", "worker_gone": "bad", "lease_lapsed": "warn", "integrity": "bad",
    "missing": "warn", "attempts_exhausted": "bad", "corrupt": "bad", "failed": "warn",
}


@dataclass(frozen=True, slots=True)
class WhyLine:
    answer: why.Why

    @property
    def top(self) -> why.Reason:
        return self.answer.top

    @property
    def rest(self) -> list[why.Reason]:
        return self.answer.reasons[1:]

    @property
    def tone(self) -> str:
        return _TONE.get(self.top.code, "ok")

    @property
    def unknown(self) -> bool:
        return self.top.code == "unknown"

    @property
    def as_of_ms(self) -> int | None:
        return self.answer.as_of_ms


def why_line(answer: why.Why) -> WhyLine:
    return WhyLine(answer)


def why_context(answer: why.Why) -> dict[str, Any]:
    return {"why": why_line(answer)}


def why_down(error: str) -> dict[str, Any]:
    """The line while Redis does not answer: unknown, never the last answer passed off as now."""
    return why_context(why.unknown(error or "Redis is unreachable"))
