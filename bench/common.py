"""What every benchmark shares: the figures it prints and the raw ceiling of the server."""

from __future__ import annotations

import csv
import io
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import redis

from tests.support.redis_servers import REDIS_SERVER, RedisServer

REDIS_BENCHMARK = REDIS_SERVER.replace("redis-server", "redis-benchmark")


@dataclass(frozen=True, slots=True)
class Figure:
    system: str
    what: str
    value: float
    unit: str
    note: str = ""

    def line(self) -> str:
        shown = f"{self.value:,.0f}" if self.unit in ("jobs/s", "calls/s") else f"{self.value:.3f}"
        return f"{self.system:<7} {self.what:<72} {shown:>10} {self.unit:<7} {self.note}"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Report:
    def __init__(self) -> None:
        self.figures: list[Figure] = []

    def add(self, system: str, what: str, value: float, unit: str, note: str = "") -> Figure:
        figure = Figure(system, what, value, unit, note)
        self.figures.append(figure)
        print(figure.line(), flush=True)
        return figure


def rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else float("inf")


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def evalsha_ceiling(server: RedisServer, *, clients: int = 1, pipeline: int = 1, requests: int = 50_000) -> float:
    """redis-benchmark of an EVALSHA of ``return 1`` on the same server: what no client can beat (calls/s)."""
    sha = server.client().script_load("return 1")
    out = subprocess.run([REDIS_BENCHMARK, "-p", str(server.port), "-n", str(requests), "-c", str(clients),
                          "-P", str(pipeline), "--csv", "evalsha", sha, "0"],
                         check=True, capture_output=True, text=True, timeout=300).stdout
    return float(next(csv.DictReader(io.StringIO(out)))["rps"])


def start_server() -> RedisServer:
    server = RedisServer().start()
    client: redis.Redis = server.client()
    client.config_set("maxmemory-policy", "noeviction")
    return server
