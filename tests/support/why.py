"""Helpers for the why tests: a worker's registry entry written as a worker would, and Redis's command counts."""

from __future__ import annotations

from typing import Any

from queues import EchoMQ, moves
from queues.health import primaries


def register(mq: EchoMQ, queue: str, worker: str, *, ttl_ms: int = 60_000, concurrency: int = 2,
             held: list[str] | None = None, host: str = "box") -> None:
    """What a worker's heartbeat writes (PROTOCOL.md, "Workers")."""
    mq.run(moves.register_worker(queue, worker, ttl_ms=ttl_ms, host=host, pid=7, runtime="python test",
                                 concurrency=concurrency, started_ms=1, held=held or []))


def reset_commandstats(mq: EchoMQ) -> None:
    for node in primaries(mq.redis):
        node.config_resetstat()


def commands_run(mq: EchoMQ) -> dict[str, int]:
    """Calls per command since the last reset, over every primary (a script's inner commands included)."""
    total: dict[str, int] = {}
    for node in primaries(mq.redis):
        stats: dict[str, Any] = node.info("commandstats")
        for name, entry in stats.items():
            total[name] = total.get(name, 0) + int(entry["calls"])
    return total


def redis_usec(mq: EchoMQ, command: str) -> float:
    """Microseconds Redis spent in ``command`` since the last reset (cmdstat_<command>), over every primary."""
    used = 0.0
    for node in primaries(mq.redis):
        entry = node.info("commandstats").get(f"cmdstat_{command}")
        if entry:
            used += float(entry["usec"])
    return used
