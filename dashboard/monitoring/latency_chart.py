"""The queue page's latency panel: wait and run p50/p95/p99 as plain SVG (as the history chart), the
numbers over the range, the arrival and claim rates, the time to drain, and the objective if one applies.

Each range is one histogram read merged by the server: 1 h as 60 minutes, 24 h as 24 hours, 30 d as
30 days of 24 hours; so the page's cost is a fixed number of slots whatever the queue's traffic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from dashboard.services import read
from queues import InvalidInput, Refused, Unavailable, latency, slo
from queues.deploys import DeployMark
from queues.latency import Histogram, Latency, LatencyPoint, duration_text

from .charts import mark_lines, marks_between

# range -> (resolution, slots per point, points, label)
RANGES: Final = {"1h": ("m", 1, 60, "1 hour, per minute"), "24h": ("h", 1, 24, "24 hours, per hour"),
                 "30d": ("h", 24, 30, "30 days, per day")}
LINES: Final = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99))
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 150, 52, 22, 8
# Log-scale ticks, ms.
TICKS_MS: Final = (1, 10, 100, 1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000)


@dataclass(frozen=True)
class Column:
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class LatencyChart:
    kind: str  # 'wait' or 'run'
    label: str
    width: int
    height: int
    lines: list[tuple[str, str]]  # css class (p50, p95, p99), points
    columns: list[Column]
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str]]
    plot_left: int
    plot_bottom: float
    plot_right: int
    whole: dict[str, int | None]  # p50, p95, p99 over the range
    measured: int
    # Deploy marks in the range: (x, hover text), drawn as vertical lines as on the history chart.
    marks: list[tuple[float, str]] = field(default_factory=list)

    @property
    def whole_shown(self) -> list[tuple[str, str]]:
        return [(name, duration_text(value)) for name, value in self.whole.items()]


def _when(ms: int, resolution: str, per: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%H:%M" if resolution == "m" else "%d %b" if per > 1 else "%d %b %H:00")


def _histogram(point: LatencyPoint, kind: str) -> Histogram:
    return point.wait if kind == "wait" else point.run


def chart_from(found: Latency, range_key: str, kind: str, marks: list[DeployMark] | None = None) -> LatencyChart:
    resolution, per, _, label = RANGES[range_key]
    points = found.points
    values = [[_histogram(p, kind).percentile(q) for _, q in LINES] for p in points]
    seen = [v for row in values for v in row if v is not None]
    low = math.log10(max(min(seen, default=1), 1))
    high = math.log10(max(max(seen, default=1000), 10))
    low, high = math.floor(low), max(math.ceil(high), math.floor(low) + 1)
    plot_w, plot_h = WIDTH - LEFT - 4, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(points), 1)

    def y(ms: int) -> float:
        return round(TOP + plot_h - (math.log10(max(ms, 1)) - low) / (high - low) * plot_h, 1)

    lines = []
    for n, (name, _) in enumerate(LINES):
        # A slot with nothing measured breaks the line rather than drawing a zero.
        segments = " ".join(f"{round(LEFT + (i + 0.5) * step, 1)},{y(v)}"
                            for i, row in enumerate(values) if (v := row[n]) is not None)
        lines.append((name, segments))
    columns = []
    for i, (p, row) in enumerate(zip(points, values)):
        h = _histogram(p, kind)
        shown = ", ".join(f"{name} {duration_text(v)}" for (name, _), v in zip(LINES, row)) if h.total \
            else "not measured"
        columns.append(Column(round(LEFT + i * step, 2), round(step, 2),
                              f"{_when(p.start_ms, resolution, per)} UTC: {kind} {shown} ({h.total} jobs)"))
    ticks = [(y(t), duration_text(t)) for t in TICKS_MS if low <= math.log10(t) <= high]
    x_ticks = [(round(LEFT + i * step, 1), _when(points[i].start_ms, resolution, per))
               for i in sorted({0, len(points) // 2, len(points) - 1})] if points else []
    whole = _histogram(points[0], kind).merge(*(_histogram(p, kind) for p in points[1:]))
    drawn = mark_lines(marks or [], start_ms=points[0].start_ms, span_ms=sum(p.size_ms for p in points),
                       left=LEFT, width=plot_w)
    return LatencyChart(kind, label, WIDTH, HEIGHT, lines, columns, ticks, x_ticks, LEFT, TOP + plot_h, WIDTH - 4,
                        whole.percentiles(), whole.total, drawn)


@dataclass(frozen=True)
class LatencyPanel:
    range: str
    ranges: list[str]
    wait: LatencyChart
    run: LatencyChart
    summary: latency.LatencySummary
    drain: str
    objective: slo.SloStatus | None
    unreadable_slots: int

    @property
    def charts(self) -> list[LatencyChart]:
        return [self.wait, self.run]

    @property
    def rates(self) -> str:
        return f"{self.summary.arrival_per_s:.2f}/s arriving, {self.summary.service_per_s:.2f}/s claimed"

    @property
    def attainment(self) -> str:
        found = self.objective
        if found is None or found.attainment is None:
            return "not measured"
        return f"{found.attainment * 100:.2f} % of {found.measured} jobs"

    @property
    def burn(self) -> list[tuple[str, str]]:
        found = self.objective
        if found is None:
            return []
        return [(name, "—" if found.burn.get(name) is None else f"{found.burn[name]:.2f}×") for name in ("1h", "6h")]


def queue_latency_context(queue: str, range_key: str, due: int) -> dict[str, Any]:
    """``latency_panel`` for the queue page (None when Redis cannot be read now)."""
    range_key = range_key if range_key in RANGES else "1h"
    resolution, per, points, _ = RANGES[range_key]
    try:
        found, recent = read(lambda mq: mq.run_many([latency.histogram(queue, resolution=resolution, per=per,
                                                                       points=points),
                                                     latency.summary_read(queue)]))
        for result in (found, recent):
            if isinstance(result, Exception):
                raise result
        objective = read(lambda mq: mq.run(slo.slos())).for_queue(queue)
        status = read(lambda mq: slo.slo_status(mq, queue, objective)) if objective else None
    except (Unavailable, InvalidInput, Refused):
        return {"latency_panel": None}
    summary = latency.summarize(recent)
    marks = marks_between(found.points[0].start_ms, found.points[-1].start_ms + found.points[-1].size_ms)
    return {"latency_panel": LatencyPanel(range_key, list(RANGES), chart_from(found, range_key, "wait", marks),
                                          chart_from(found, range_key, "run", marks), summary,
                                          latency.drain_text(summary, due), status,
                                          sum(p.odd_slots for p in found.points))}
