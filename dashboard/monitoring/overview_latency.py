"""The overview's latency table: p95 wait and time to drain of the queues on the page, sortable, and the
queues whose objective burns fast.

Bounded to what is on screen: one histogram read of 11 minutes per queue shown (and, for a queue with an
objective, the two reads of its burn rates), pipelined; the sort orders those rows only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from dashboard.services import read
from queues import Refused, Unavailable, latency, slo
from queues.latency import Latency, duration_text

SORTS: Final = {"p95": "p95 wait, longest first", "drain": "time to drain, longest first (not draining first)",
                "name": "name"}
WINDOW_MINUTES: Final = latency.RATE_MINUTES


@dataclass(frozen=True)
class LatencyRow:
    queue: str
    p95_wait_ms: int | None
    time_to_drain_s: float | None
    due: int
    measured: int
    burning_fast: bool
    objective: str

    @property
    def p95_text(self) -> str:
        return duration_text(self.p95_wait_ms) if self.measured else "not measured"

    @property
    def drain_text(self) -> str:
        if self.due <= 0:
            return "nothing due"
        if self.time_to_drain_s is None:
            return "not draining"
        return f"~{duration_text(self.time_to_drain_s * 1000)}"


def _row(queue: str, due: int, found: Latency, status: slo.SloStatus | None) -> LatencyRow:
    whole = found.points[:-1]  # the ten whole minutes before this one
    wait = whole[0].wait.merge(*(p.wait for p in whole[1:]))
    summary = latency.LatencySummary(wait, whole[0].run, sum(p.enqueued for p in whole) / (WINDOW_MINUTES * 60),
                                     wait.total / (WINDOW_MINUTES * 60), 0)
    return LatencyRow(queue, wait.percentile(0.95), summary.time_to_drain_s(due), due, wait.total,
                      bool(status and status.burning_fast), status.slo.describe() if status else "")


def _sort_key(sort: str, row: LatencyRow) -> tuple[Any, ...]:
    if sort == "p95":
        return (row.p95_wait_ms is None, -(row.p95_wait_ms or 0), row.queue)
    if sort == "drain":
        stuck = row.due > 0 and row.time_to_drain_s is None
        return (not stuck, -(row.time_to_drain_s or 0), row.queue)
    return (row.queue,)


def overview_latency_context(dues: dict[str, int], sort: str) -> dict[str, Any]:
    """``latency_rows`` for the queues on the overview's page (their names -> due), sorted by ``sort``."""
    sort = sort if sort in SORTS else "name"
    names = list(dues)
    if not names:
        return {"latency_rows": [], "latency_sort": sort, "latency_sorts": SORTS}
    try:
        objectives = read(lambda mq: mq.run(slo.slos()))
        chosen = [(q, o) for q in names if (o := objectives.for_queue(q)) is not None]
        calls: list[Any] = [latency.histogram(q, resolution="m", points=WINDOW_MINUTES + 1) for q in names]
        calls += [c for q, _ in chosen for c in slo.burn_calls(q)]
        results = read(lambda mq: mq.run_many(calls))
    except (Unavailable, Refused):  # Redis down, or emq:slos of another type
        return {"latency_rows": None, "latency_sort": sort, "latency_sorts": SORTS}
    statuses: dict[str, slo.SloStatus] = {}
    for i, (q, o) in enumerate(chosen):
        try:
            burn = slo.burn_rates(o, results[len(names) + 2 * i:len(names) + 2 * i + 2])
        except Exception:  # one queue's odd data must not hide the others
            continue
        statuses[q] = slo.SloStatus(q, o, None, 0, burn)
    rows = [_row(q, dues[q], found, statuses.get(q)) for q, found in zip(names, results)
            if isinstance(found, Latency)]
    return {"latency_rows": sorted(rows, key=lambda r: _sort_key(sort, r)), "latency_sort": sort,
            "latency_sort_label": SORTS[sort], "latency_sorts": SORTS,
            "burning_fast": [r.queue for r in rows if r.burning_fast]}
