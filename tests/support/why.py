"""Helpers for the why tests: a worker's registry entry written as a worker would, and Redis's command counts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
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


def scripts_usec(mq: EchoMQ) -> float:
    """Microseconds Redis spent running scripts since the last reset: EVALSHA, and EVAL when one was not cached."""
    return redis_usec(mq, "evalsha") + redis_usec(mq, "eval")


HANDLERS = '''
import os
import time


def block(job):
    time.sleep(3600)


def slow(job):
    time.sleep(0.25)


def boom(job):
    raise RuntimeError("smtp said 550 for " + job.id)


def quick(job):
    return None
'''


def start_worker(url: str, queue: str, handler: str, folder: Path, *, concurrency: int = 1,
                 lease_ms: int = 1500) -> subprocess.Popen[bytes]:
    """A real ``emq worker`` process running one of :data:`HANDLERS` (block, slow, boom, quick)."""
    (folder / "why_handlers.py").write_text(HANDLERS)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{folder}{os.pathsep}{root}"}
    return subprocess.Popen([sys.executable, "-m", "queues", "--url", url, "worker", queue, "--handler",
                             f"why_handlers:{handler}", "--concurrency", str(concurrency), "--lease-ms", str(lease_ms)],
                            env=env, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGCONT)
        process.kill()
    process.wait(30)
