"""The queue page's history chart: plain SVG drawn on the server (no script, no inline style: CSP-safe).

Axes with labels, one line per outcome, and a column per minute or hour whose
``<title>`` is the hover text (every value of that slot, and the wait p50/p95).
The deploy marks of a range, read and placed here, are drawn the same way on every chart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from dashboard.services import read
from queues import InvalidInput, Unavailable, reads
from queues.deploys import DeployMark, deploy_marks
from queues.follower import Throughput
from queues.reads import Series, SeriesPoint

# range -> (resolution, slots, label)
RANGES: Final = {"1h": ("m", 60, "1 hour, per minute"), "24h": ("h", 24, "24 hours, per hour"),
                 "30d": ("h", 720, "30 days, per hour")}
LINES: Final = (("enqueued", "enqueued"), ("completed", "completed"), ("failed", "failed for good"),
                ("recovered", "recovered"))
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 640, 170, 44, 22, 8


@dataclass(frozen=True)
class Column:
    x: float
    width: float
    title: str


@dataclass(frozen=True)
class Chart:
    range: str
    label: str
    width: int
    height: int
    lines: list[tuple[str, str, str, int]]  # css class, legend, points, total over the range
    columns: list[Column]
    y_ticks: list[tuple[float, str]]
    x_ticks: list[tuple[float, str]]
    plot_left: int
    plot_bottom: float
    plot_right: int
    # Deploy marks in the range: (x, hover text), drawn as vertical lines.
    marks: list[tuple[float, str]] = field(default_factory=list)


def _when(ms: int, resolution: str) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%H:%M" if resolution == "m" else "%d %b %H:00")


def _wait(ms: int | None) -> str:
    if ms is None:
        return "—"
    return f"≤ {ms / 1000:g} s" if ms < 60_000 else f"≤ {ms // 60_000} min"


def mark_lines(marks: list[DeployMark], *, start_ms: int, span_ms: int, left: int, width: float
               ) -> list[tuple[float, str]]:
    """The marks from ``start_ms`` for ``span_ms`` as (x, hover text), for a plot ``width`` wide from ``left``."""
    return [(round(left + (m.at_ms - start_ms) / span_ms * width, 1),
             f"deploy {m.label} at {datetime.fromtimestamp(m.at_ms / 1000, UTC):%Y-%m-%d %H:%M} UTC")
            for m in marks if start_ms <= m.at_ms < start_ms + span_ms]


def marks_between(since_ms: int, until_ms: int) -> list[DeployMark]:
    """The deploy marks a chart of that range draws; none when they cannot be read now (the chart still is)."""
    try:
        # Bounded: at most 100 marks in the range (a mark a minute for over an hour is not a chart's to show).
        return read(lambda mq: mq.run(deploy_marks(since_ms=since_ms, until_ms=until_ms, limit=100))).marks
    except (Unavailable, InvalidInput):
        return []


def live_window_marks(throughput: Throughput, now_ms: int) -> list[DeployMark]:
    """The deploy marks a live moves chart's window (the follower's last few minutes) draws."""
    window_ms = throughput.buckets * throughput.bucket_s * 1000
    return marks_between(max(now_ms - window_ms, 0), now_ms + window_ms) if now_ms else []


def chart_from(series: Series, range_key: str, marks: list[DeployMark] | None = None) -> Chart:
    points: list[SeriesPoint] = series.points
    peak: int = max([1] + [getattr(p, name) for p in points for name, _ in LINES])
    plot_w, plot_h = WIDTH - LEFT - 4, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(points), 1)

    def y(value: int) -> float:
        return round(TOP + plot_h - value / peak * plot_h, 1)

    lines = [(name, legend, " ".join(f"{round(LEFT + (i + 0.5) * step, 1)},{y(getattr(p, name))}"
                                     for i, p in enumerate(points)), sum(getattr(p, name) for p in points))
             for name, legend in LINES]
    columns = [Column(round(LEFT + i * step, 2), round(step, 2),
                      f"{_when(p.start_ms, series.resolution)} UTC: enqueued {p.enqueued}, completed {p.completed}, "
                      f"failed {p.failed}, recovered {p.recovered}; waited p50 {_wait(p.wait_percentile_ms(0.5))}, "
                      f"p95 {_wait(p.wait_percentile_ms(0.95))}")
               for i, p in enumerate(points)]
    x_ticks = [(round(LEFT + i * step, 1), _when(points[i].start_ms, series.resolution))
               for i in sorted({0, len(points) // 2, len(points) - 1})] if points else []
    size = 60_000 if series.resolution == "m" else 3_600_000
    start = points[0].start_ms if points else 0
    drawn = mark_lines(marks or [], start_ms=start, span_ms=size * max(len(points), 1), left=LEFT, width=plot_w)
    return Chart(range_key, RANGES[range_key][2], WIDTH, HEIGHT, lines, columns,
                 [(y(0), "0"), (y(peak), str(peak))], x_ticks, LEFT, TOP + plot_h, WIDTH - 4, drawn)


def queue_history_context(queue: str, range_key: str) -> dict[str, Any]:
    """``history_chart`` for the queue page (None when Redis cannot be read now), and the ranges to pick from."""
    range_key = range_key if range_key in RANGES else "1h"
    resolution, slots, _ = RANGES[range_key]
    size = 60_000 if resolution == "m" else 3_600_000
    try:
        now = read(lambda mq: mq.server_time_ms(queue))
        series = read(lambda mq: mq.run(reads.series(queue, resolution=resolution, first=now // size - slots + 1,
                                                     count=slots)))
    except (Unavailable, InvalidInput):
        return {"history_chart": None, "history_ranges": list(RANGES), "history_range": range_key}
    marks = marks_between((now // size - slots + 1) * size, now + size)
    return {"history_chart": chart_from(series, range_key, marks), "history_ranges": list(RANGES),
            "history_range": range_key}
