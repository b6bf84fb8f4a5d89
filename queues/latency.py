"""Wait and run time histograms, kept by the moves (``queues/lua/latency.lua``), and what they tell.

A claim counts the job's wait (due -> claimed) and a complete or fail its run (claimed -> now) into the
queue's minute and hour hashes, as fields ``W<bucket>`` and ``R<bucket>`` (PROTOCOL.md, "Latency
histograms"). The buckets are log-linear on integer milliseconds: exact below 32 ms, then each power
of two cut into 16 equal buckets, so no bucket is wider than 6.25 % of its values. A percentile read
from them is interpolated inside its bucket; what the test holds is its *rank* error (how far the
value's rank among the jobs lies from the percentile asked for), at most 1 % at p50, p95 and p99 on
100,000 long-tailed jobs, which this width gives with room to spare (BENCHMARKS.md).

A job claimed by a runtime that does not record, or before this change, is simply not in a histogram:
"not measured" (the move counters still count it), never a wait of zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .errors import InvalidInput
from .keys import QueueKeys
from .moves import Call, _int, _text, digits, refused_whole

SUB_BITS: Final = 4
SUB: Final = 1 << SUB_BITS
PERCENTILES: Final = (0.5, 0.95, 0.99)
# The slots one read may merge (histogram.lua): a day of minutes, or two months of hours.
MAX_SLOTS_PER_READ: Final = 1440
MAX_POINTS: Final = 240


def bucket_of(ms: int) -> int:
    """The bucket of an integer duration in ms (as latency.lua's ``latency_bucket``)."""
    if ms < 2 * SUB:
        return max(ms, 0)
    shift = ms.bit_length() - SUB_BITS - 1
    return shift * SUB + (ms >> shift)


def bucket_bounds(bucket: int) -> tuple[int, int]:
    """The ms ``[low, high)`` that ``bucket`` holds."""
    if bucket < 2 * SUB:
        return bucket, bucket + 1
    shift = bucket // SUB - 1
    low = (bucket - shift * SUB) << shift
    return low, low + (1 << shift)


@dataclass(frozen=True, slots=True)
class Histogram:
    """Durations counted per bucket; merging two is adding their counts."""

    counts: Mapping[int, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def merge(self, *others: Histogram) -> Histogram:
        merged = dict(self.counts)
        for other in others:
            for bucket, n in other.counts.items():
                merged[bucket] = merged.get(bucket, 0) + n
        return Histogram(merged)

    @classmethod
    def of(cls, durations_ms: Iterable[int]) -> Histogram:
        counts: dict[int, int] = {}
        for ms in durations_ms:
            b = bucket_of(ms)
            counts[b] = counts.get(b, 0) + 1
        return cls(counts)

    def percentile(self, fraction: float) -> int | None:
        """The duration (ms) that ``fraction`` of the counted jobs took at most, interpolated linearly
        inside its bucket; None when nothing was measured."""
        total = self.total
        if not total:
            return None
        target = fraction * total
        seen = 0
        for bucket in sorted(self.counts):
            n = self.counts[bucket]
            if seen + n >= target:
                low, high = bucket_bounds(bucket)
                inside = int((target - seen) / n * (high - low))
                return low + min(max(inside, 0), high - low - 1)
            seen += n
        return bucket_bounds(max(self.counts))[1] - 1

    def percentiles(self) -> dict[str, int | None]:
        """p50, p95 and p99 (ms; None: not measured)."""
        return {f"p{round(q * 100)}": self.percentile(q) for q in PERCENTILES}

    def fraction_under(self, limit_ms: int) -> float | None:
        """The share of counted jobs that took less than ``limit_ms`` (a bucket cut by the limit counts
        in proportion); None when nothing was measured."""
        total = self.total
        if not total:
            return None
        under = 0.0
        for bucket, n in self.counts.items():
            low, high = bucket_bounds(bucket)
            if high <= limit_ms:
                under += n
            elif low < limit_ms:
                under += n * (limit_ms - low) / (high - low)
        return under / total

    def le_counts(self, bounds_ms: Iterable[int]) -> list[int]:
        """Cumulative counts at or under each bound (Prometheus ``le``), a bucket counted under a bound
        when all of it is."""
        ordered = sorted(self.counts.items())
        out = []
        for bound in bounds_ms:
            out.append(sum(n for b, n in ordered if bucket_bounds(b)[1] - 1 <= bound))
        return out


@dataclass(frozen=True, slots=True)
class LatencyPoint:
    """One point of a latency read: ``slots`` minutes or hours merged."""

    start_ms: int
    size_ms: int
    enqueued: int
    completed: int
    failed: int
    wait: Histogram
    run: Histogram
    odd_slots: int = 0

    def merge(self, *others: LatencyPoint) -> LatencyPoint:
        every = (self, *others)
        return LatencyPoint(min(p.start_ms for p in every), sum(p.size_ms for p in every),
                            sum(p.enqueued for p in every), sum(p.completed for p in every),
                            sum(p.failed for p in every), self.wait.merge(*(p.wait for p in others)),
                            self.run.merge(*(p.run for p in others)), sum(p.odd_slots for p in every))


@dataclass(frozen=True, slots=True)
class Latency:
    queue: str
    resolution: str
    now_ms: int
    points: list[LatencyPoint]

    def whole(self) -> LatencyPoint:
        return self.points[0].merge(*self.points[1:])


def _point(start_ms: int, size_ms: int, flat: list[Any]) -> LatencyPoint:
    odd = int(flat[0]) if flat and isinstance(flat[0], int) else 0
    counts: dict[str, int] = {}
    wait: dict[int, int] = {}
    run: dict[int, int] = {}
    for i in range(1, len(flat) - 1, 2):
        name, value = _text(flat[i]), digits(flat[i + 1])
        if value is None:
            continue
        bucket = digits(name[1:]) if name[:1] in ("W", "R") else None
        if bucket is not None:
            (wait if name[0] == "W" else run)[bucket] = value
        else:
            counts[name] = value
    return LatencyPoint(start_ms, size_ms, counts.get("e", 0), counts.get("c", 0), counts.get("f", 0),
                        Histogram(wait), Histogram(run), odd)


def histogram(queue: str, *, resolution: str, first: int | None = None, per: int = 1,
              points: int = 1, back: int = 0) -> Call[Latency]:
    """``points`` points of ``per`` minutes (``resolution='m'``) or hours ('h') each, from ``first``
    (since the epoch; None: the slots that end ``back`` slots before the server's current one): each
    point's move counts and wait and run histograms, merged by the server."""
    keys = QueueKeys(queue)
    if resolution not in ("m", "h"):
        raise InvalidInput("resolution must be 'm' or 'h'")
    start = "" if first is None else _int(first, "first", 0)
    per = _int(per, "per", 1, MAX_POINTS)
    points = _int(points, "points", 1, MAX_POINTS)
    if per * points > MAX_SLOTS_PER_READ:
        raise InvalidInput(f"per * points must be at most {MAX_SLOTS_PER_READ}")
    slot_ms = 60_000 if resolution == "m" else 3_600_000

    def parse(reply: list[Any]) -> Latency:
        refused_whole("histogram", reply)
        now, begin, *flat = reply
        return Latency(keys.queue, resolution, int(now),
                       [_point((int(begin) + n * per) * slot_ms, per * slot_ms, list(p)) for n, p in enumerate(flat)])

    args: list[Any] = [resolution, start, per, points]
    if first is None and back:
        args.append(_int(back, "back", 0, 100_000))
    return Call("histogram", keys.script_keys(None), args, parse)


# The rates behind the time to drain: the last RATE_MINUTES whole minutes (the current one is partial).
RATE_MINUTES: Final = 10
PERCENTILE_MINUTES: Final = 60


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """What ``emq stats`` and the queue read tell of latency: percentiles over the last hour, and the
    rates of the last RATE_MINUTES whole minutes with the time they give the due backlog to drain."""

    wait: Histogram
    run: Histogram
    arrival_per_s: float
    service_per_s: float
    odd_slots: int

    def time_to_drain_s(self, due: int) -> float | None:
        """Seconds until ``due`` jobs are claimed at these rates: 0 when none is due, None when the
        backlog is not shrinking (claims no faster than arrivals)."""
        if due <= 0:
            return 0.0
        net = self.service_per_s - self.arrival_per_s
        return due / net if net > 0 else None

    def as_dict(self, due: int) -> dict[str, Any]:
        return {"wait_ms": self.wait.percentiles(), "run_ms": self.run.percentiles(),
                "wait_measured": self.wait.total, "run_measured": self.run.total,
                "arrival_per_s": round(self.arrival_per_s, 3), "service_per_s": round(self.service_per_s, 3),
                "time_to_drain_s": _rounded(self.time_to_drain_s(due)), "rate_window_s": RATE_MINUTES * 60}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def summarize(found: Latency) -> LatencySummary:
    """The summary of a :func:`summary_read`: its last PERCENTILE_MINUTES minutes merged for the
    percentiles, and the RATE_MINUTES whole minutes before the current one for the rates."""
    points = found.points
    hour = points[-PERCENTILE_MINUTES:]
    rates = points[-RATE_MINUTES - 1:-1]
    window_s = RATE_MINUTES * 60
    arrivals = sum(p.enqueued for p in rates)
    claims = sum(p.wait.total for p in rates)
    return LatencySummary(hour[0].wait.merge(*(p.wait for p in hour[1:])),
                          hour[0].run.merge(*(p.run for p in hour[1:])),
                          arrivals / window_s, claims / window_s, sum(p.odd_slots for p in points))


def summary_read(queue: str) -> Call[Latency]:
    """The minutes :func:`summarize` needs, ending with the server's current one."""
    return histogram(queue, resolution="m", points=max(PERCENTILE_MINUTES, RATE_MINUTES + 1))


def duration_text(ms: float | None) -> str:
    """A duration as a person reads it: '840 ms', '12.5 s', '4 min', '2.5 h', '3 d'; '-' for none."""
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms:.0f} ms"
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000)):
        if ms >= size:
            value = ms / size
            return f"{value:.0f} {unit}" if value >= 10 else f"{value:.1f} {unit}".replace(".0 ", " ")
    return f"{ms / 1000:.1f} s".replace(".0 ", " ")


def drain_text(summary: LatencySummary, due: int) -> str:
    """'~4 min at the last 10 min's rate', 'nothing due' or 'not draining'."""
    seconds = summary.time_to_drain_s(due)
    if due <= 0:
        return "nothing due"
    if seconds is None:
        return "not draining"
    return f"~{duration_text(seconds * 1000)} at the last {RATE_MINUTES} min's rate"


def describe(summary: LatencySummary, due: int) -> str:
    """The lines ``emq stats`` prints."""
    def three(h: Histogram) -> str:
        if not h.total:
            return "not measured"
        p = h.percentiles()
        return f"p50 {duration_text(p['p50'])}, p95 {duration_text(p['p95'])}, p99 {duration_text(p['p99'])} ({h.total} jobs)"
    return (f"  wait (last hour): {three(summary.wait)}\n  run (last hour): {three(summary.run)}\n"
            f"  arrivals {summary.arrival_per_s:.2f}/s, claims {summary.service_per_s:.2f}/s; "
            f"time to drain: {drain_text(summary, due)}")
