"""Figures measured in rounds, EchoMQ then each peer, so that a drift of the machine lands on every side.

A *contest* is one figure (say "process, concurrency 1") with several *sides*
(EchoMQ's worker, BullMQ's, RQ's, the raw EVALSHA ceiling), each a function
that measures one round on a flushed server and returns a rate. The rounds of
a contest run A B C A B C ..., and the report gives each side's median and,
for each EchoMQ side against each other side, the median of the per-round
ratios: a ratio taken within a round compares two runs seconds apart, where
comparing two medians would compare runs minutes apart.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.support.redis_servers import RedisServer

from .common import Report


@dataclass(frozen=True, slots=True)
class Side:
    system: str
    how: str
    measure: Callable[[], float]


@dataclass(slots=True)
class Contest:
    what: str
    unit: str
    sides: list[Side]
    values: dict[str, list[float]] = field(default_factory=dict)

    def label(self, side: Side) -> str:
        return f"{side.system} ({side.how})"

    def ratios(self) -> list[tuple[str, str, list[float]]]:
        """(EchoMQ side, other side, its per-round ratios) for every EchoMQ side and every other side."""
        ours = [s for s in self.sides if s.system == "echomq"]
        theirs = [s for s in self.sides if s.system != "echomq"]
        out = []
        for a in ours:
            for b in theirs:
                pairs = zip(self.values.get(self.label(a), []), self.values.get(self.label(b), []))
                out.append((self.label(a), self.label(b), [x / y for x, y in pairs if y > 0]))
        return out


class Skipped(Exception):
    """A side that cannot run here (a peer not installed); the contest goes on without it."""


def run_contests(server: RedisServer, contests: list[Contest], report: Report, *, rounds: int) -> None:
    for contest in contests:
        for round_no in range(1, rounds + 1):
            for side in list(contest.sides):
                server.client().flushall()
                try:
                    value = side.measure()
                except Skipped as why:
                    print(f"{contest.label(side)} skipped: {why}", flush=True)
                    contest.sides.remove(side)
                    continue
                contest.values.setdefault(contest.label(side), []).append(value)
                report.add(side.system, f"{contest.what}, {side.how}, round {round_no}", value, contest.unit)
        server.client().flushall()
        summarize(contest, report)


def summarize(contest: Contest, report: Report) -> None:
    for side in contest.sides:
        values = contest.values.get(contest.label(side), [])
        if values:
            report.add(side.system, f"{contest.what}, {side.how}: median of {len(values)} rounds",
                       statistics.median(values), contest.unit,
                       "rounds: " + ", ".join(f"{v:,.0f}" for v in values))
    for ours, theirs, ratios in contest.ratios():
        if ratios:
            report.add("ratio", f"{contest.what}: {ours} / {theirs}, median of per-round ratios",
                       statistics.median(ratios), "x", "rounds: " + ", ".join(f"{r:.2f}" for r in ratios))
