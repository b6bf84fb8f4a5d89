"""The "why" line at the top of the queue page and the job page: the why read's first reason, the rest below.

Built from one :class:`queues.why.Why` (the same answer ``emq why`` and the API give); the live pages
render it again with every push, so a pause, a worker's death or a lease lapse changes it within
the page's live latency, at one why read per push of a page that is on screen.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Final

from django.conf import settings

from queues import AsyncEchoMQ, EchoMQ, EmqError, why

from .presenters import QueueRow

# The live overview's reasons, shared by the tabs of this process: read again once older than this.
REASON_KEPT_S: Final = 5.0
KEPT_MAX: Final = 10_000
_kept: dict[str, tuple[float, why.Reason]] = {}

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


def _attach(rows: list[QueueRow], reasons: dict[str, why.Reason]) -> list[QueueRow]:
    return [replace(row, reason=reasons.get(row.name)) for row in rows]


def overview_reasons(mq: EchoMQ, names: list[str]) -> dict[str, why.Reason]:
    """The first why reason of each queue on screen: one pipelined round trip of why reads and one sweeper read
    (none when the column is off)."""
    if not names or not settings.EMQ_OVERVIEW_REASONS:
        return {}
    sweeper = mq.sweeper_lock()
    try:
        results = mq.run_many([why.queue_evidence(n) for n in names])
    except EmqError:
        return {}
    return _decided(names, results, sweeper)


async def overview_reasons_async(mq: AsyncEchoMQ, names: list[str]) -> dict[str, why.Reason]:
    """As :func:`overview_reasons`, for the live overview: reasons read less than REASON_KEPT_S ago by any tab
    of this process are reused, so tabs showing the same queues cost one read of them, not one each."""
    if not names or not settings.EMQ_OVERVIEW_REASONS:
        return {}
    now = time.monotonic()
    kept = {n: _kept[n][1] for n in names if n in _kept and now - _kept[n][0] < REASON_KEPT_S}
    wanted = [n for n in names if n not in kept]
    if wanted:
        sweeper = await mq.sweeper_lock()
        try:
            results = await mq.run_many([why.queue_evidence(n) for n in wanted])
        except EmqError:
            return kept
        fresh = _decided(wanted, results, sweeper)
        if len(_kept) > KEPT_MAX:
            _kept.clear()
        _kept.update((n, (now, reason)) for n, reason in fresh.items())
        kept.update(fresh)
    return kept


def _decided(names: list[str], results: list[Any], sweeper: why.Sweeper) -> dict[str, why.Reason]:
    return {name: (why.decide_queue(result, sweeper).top if isinstance(result, dict) else why.unknown(result).top)
            for name, result in zip(names, results)}


def with_reasons(rows: list[QueueRow], reasons: dict[str, why.Reason]) -> list[QueueRow]:
    return _attach(rows, reasons) if reasons else rows
