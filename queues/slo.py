"""Latency objectives: "95 % of jobs wait under 30 s over 30 days", per queue or name pattern.

An objective lives in the hash ``emq:slos`` (``slo_set.lua``), its attainment and burn rates come
from the histograms the moves keep (:mod:`queues.latency`): attainment is the share of the jobs
measured in the window whose wait (or run) was under the bound; the burn rate of a shorter window is
how fast the error budget (the ``100 - target`` percent allowed over) is spent there: 1 means at the
pace that spends it exactly over the window, 14.4 over an hour spends 2 % of a 30-day budget.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from .client import EchoMQ
from .errors import InvalidInput
from .keys import validate_queue_name
from .latency import Histogram, LatencyPoint, histogram
from .moves import Call, _int, _text, refused_whole

SLO_KEY: Final = "emq:slos"
MAX_NAME_BYTES: Final = 128
MAX_WINDOW_DAYS: Final = 90
# The windows a burn rate is given for: (name, minutes); multi-window alerts pair a short one with a long.
BURN_WINDOWS: Final = (("5m", 5), ("30m", 30), ("1h", 60), ("6h", 360))
Metric = Literal["wait", "run"]


@dataclass(frozen=True, slots=True)
class Slo:
    name: str  # a queue, or a glob pattern of queue names
    metric: str
    under_ms: int
    target: str  # percent, as given ('95', '99.9'): exact, never a float's rounding
    window_days: int
    set_by: str = ""
    set_ms: int | None = None

    @property
    def target_ratio(self) -> float:
        return float(self.target) / 100

    @property
    def is_pattern(self) -> bool:
        return any(c in self.name for c in "*?[")

    def describe(self) -> str:
        return f"{self.target} % of jobs {'wait' if self.metric == 'wait' else 'run'} under " \
               f"{self.under_ms:,} ms over {self.window_days} d"

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "metric": self.metric, "under_ms": self.under_ms, "target": float(self.target),
                "window_days": self.window_days, "set_by": self.set_by, "set_ms": self.set_ms,
                "pattern": self.is_pattern, "objective": self.describe()}


def _validate_name(name: str) -> str:
    if not name or len(name.encode()) > MAX_NAME_BYTES:
        raise InvalidInput(f"an objective's name must be 1..{MAX_NAME_BYTES} bytes")
    if not any(c in name for c in "*?["):
        validate_queue_name(name)
    return name


def _parse(name: str, value: str) -> Slo | None:
    try:
        raw = json.loads(value)
        return Slo(name, str(raw["metric"]), int(raw["under_ms"]), str(raw["target"]), int(raw["window_days"]),
                   str(raw.get("set_by", "")), int(raw["set_ms"]) if raw.get("set_ms") is not None else None)
    except (ValueError, KeyError, TypeError):
        return None


@dataclass(frozen=True, slots=True)
class SloChange:
    name: str
    previous: Slo | None


def slo_set(name: str, *, metric: str, under_ms: int, target: float | str, window_days: int = 30,
            actor: str = "") -> Call[SloChange]:
    """Sets the objective of ``name`` (a queue, or a pattern such as ``mail-*``), replacing any."""
    name = _validate_name(name)
    if metric not in ("wait", "run"):
        raise InvalidInput("metric must be wait or run")
    under_ms = _int(under_ms, "under_ms", 1, 86_400_000)
    text = f"{float(target):.3f}".rstrip("0").rstrip(".") if not isinstance(target, str) else target
    try:
        if not 0 < float(text) < 100:
            raise ValueError
    except ValueError:
        raise InvalidInput(f"target must be a percent above 0 and below 100, not {target!r}") from None
    window_days = _int(window_days, "window_days", 1, MAX_WINDOW_DAYS)

    def parse(reply: list[Any]) -> SloChange:
        refused_whole("slo_set", reply, name)
        previous = _text(reply[1])
        return SloChange(name, _parse(name, previous) if previous else None)

    return Call("slo_set", [SLO_KEY], [name, metric, under_ms, text, window_days, actor], parse)


def slo_delete(name: str) -> Call[SloChange]:
    """Removes the objective of ``name``; refused (missing) when none is set."""
    name = _validate_name(name)

    def parse(reply: list[Any]) -> SloChange:
        refused_whole("slo_delete", reply, name)
        return SloChange(name, _parse(name, _text(reply[1])))

    return Call("slo_delete", [SLO_KEY], [name], parse)


@dataclass(frozen=True, slots=True)
class Slos:
    now_ms: int
    slos: list[Slo]
    unreadable: list[str] = field(default_factory=list)  # names whose value slo_set did not write

    def for_queue(self, queue: str) -> Slo | None:
        """The queue's own objective, else that of the longest pattern its name matches."""
        exact = next((s for s in self.slos if s.name == queue and not s.is_pattern), None)
        if exact:
            return exact
        matching = [s for s in self.slos if s.is_pattern and fnmatch.fnmatchcase(queue, s.name)]
        return max(matching, key=lambda s: (len(s.name), s.name), default=None)


def slos() -> Call[Slos]:
    """Every objective set, by name."""

    def parse(reply: list[Any]) -> Slos:
        refused_whole("slos", reply)
        now, *flat = reply
        found, odd = [], []
        for i in range(0, len(flat) - 1, 2):
            name = _text(flat[i])
            slo = _parse(name, _text(flat[i + 1]))
            if slo is None:
                odd.append(name)
            else:
                found.append(slo)
        return Slos(int(now), sorted(found, key=lambda s: s.name), sorted(odd))

    return Call("slos", [SLO_KEY], [], parse)


@dataclass(frozen=True, slots=True)
class SloStatus:
    """How a queue stands against its objective."""

    queue: str
    slo: Slo
    attainment: float | None  # over the window; None: nothing measured in it
    measured: int
    burn: dict[str, float | None]  # window name -> burn rate (None: nothing measured in it)

    @property
    def budget_left(self) -> float | None:
        """The share of the window's error budget not spent yet (negative: overspent)."""
        if self.attainment is None:
            return None
        allowed = 1 - self.slo.target_ratio
        return 1 - (1 - self.attainment) / allowed

    @property
    def burning_fast(self) -> bool:
        """Both the 1 h and the 5 min burn rate at 14.4 or more: 2 % of a 30-day budget in an hour,
        and still going (the page-worthy pair of the multi-window alert)."""
        fast, now = self.burn.get("1h"), self.burn.get("5m")
        return fast is not None and now is not None and fast >= 14.4 and now >= 14.4

    def as_dict(self) -> dict[str, Any]:
        return {"queue": self.queue, **self.slo.as_dict(), "attainment": _ratio(self.attainment),
                "measured": self.measured, "budget_left": _ratio(self.budget_left),
                "burn_rate": {k: None if v is None else round(v, 3) for k, v in self.burn.items()},
                "burning_fast": self.burning_fast}


def _ratio(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _burn(found: Histogram, slo: Slo) -> tuple[float | None, float | None]:
    under = found.fraction_under(slo.under_ms)
    if under is None:
        return None, None
    allowed = 1 - slo.target_ratio
    return under, (1 - under) / allowed


def _kind(point: LatencyPoint, slo: Slo) -> Histogram:
    return point.wait if slo.metric == "wait" else point.run


def burn_calls(queue: str) -> list[Call[Any]]:
    """The reads the burn rates need, merged server-side: the last hour by minute (the 5 min, 30 min and
    1 h windows) and the last 6 hours as 6 points of 60 minutes."""
    return [histogram(queue, resolution="m", points=60), histogram(queue, resolution="m", per=60, points=6)]


def window_calls(queue: str, slo: Slo) -> list[Call[Any]]:
    """The reads the attainment needs: the objective's window as days of 24 hours (at most 60 days a
    read), ending with the current hour."""
    calls: list[Call[Any]] = []
    for start in range(0, slo.window_days, 60):
        span = min(60, slo.window_days - start)
        calls.append(histogram(queue, resolution="h", per=24, points=span, back=24 * start))
    return calls


def status_calls(queue: str, slo: Slo) -> list[Call[Any]]:
    return burn_calls(queue) + window_calls(queue, slo)


def _raised(results: list[Any]) -> list[Any]:
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def window_attainment(slo: Slo, results: list[Any]) -> tuple[float | None, int]:
    """(attainment, jobs measured) from the results of :func:`window_calls`."""
    points = [p for found in _raised(results) for p in found.points]
    whole = _kind(points[0], slo).merge(*(_kind(p, slo) for p in points[1:]))
    return _burn(whole, slo)[0], whole.total


def burn_rates(slo: Slo, results: list[Any]) -> dict[str, float | None]:
    """Window name -> burn rate, from the results of :func:`burn_calls`."""
    minutes, hours6 = _raised(results)
    by_minute = minutes.points
    burn: dict[str, float | None] = {}
    for name, span in BURN_WINDOWS:
        part = by_minute[-span:] if span <= 60 else hours6.points
        burn[name] = _burn(_kind(part[0], slo).merge(*(_kind(p, slo) for p in part[1:])), slo)[1]
    return burn


def status_of(queue: str, slo: Slo, results: list[Any]) -> SloStatus:
    """The status from the results of :func:`status_calls`, in order (an exception among them is raised)."""
    attainment, measured = window_attainment(slo, results[2:])
    return SloStatus(queue, slo, attainment, measured, burn_rates(slo, results[:2]))


def slo_status(mq: EchoMQ, queue: str, slo: Slo) -> SloStatus:
    return status_of(queue, slo, mq.run_many(status_calls(queue, slo)))
