"""How much another client of Redis suffers: the worst PING round trip and the share of time Redis was busy.

Run as its own process (``python -m tests.support.redis_stall PORT CONTROL_PORT
SECONDS``), so the test's own event loop and threads never delay a PING; it
prints the :class:`Stall` as one JSON line. The PING client is a raw socket
speaking RESP (nothing between it and the server), one PING every
``INTERVAL_S``, sent at the same instant as one to a control: an idle
redis-server on the same machine. A stall of this client's own process (on a
shared machine at load 10 one alone can pass 50 ms) delays both answers
alike, so the delay Redis adds is how much later its answer came than the
control's, in the same round; ``added_ms`` is the worst of those and
``added_p99_ms`` the 99th percentile (what one descheduling of Redis's own
process on a loaded 2-core machine cannot move).
``busy`` is the CPU time of Redis's main thread (INFO cpu) over the wall time
of the window; the slowest command is Redis's own figure (its slow log).
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

INTERVAL_S: Final = 0.005
ROOT: Final = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Stall:
    worst_ms: float
    pings: int
    busy: float
    slowest_command_ms: float
    control_worst_ms: float
    added_ms: float
    added_p99_ms: float


def _command(conn: socket.socket, *words: str) -> bytes:
    conn.sendall(f"*{len(words)}\r\n".encode() + b"".join(f"${len(w)}\r\n{w}\r\n".encode() for w in words))
    data = conn.recv(65536)
    if data.startswith(b"$"):
        length = int(data[1:data.index(b"\r\n")])
        header = data.index(b"\r\n") + 2
        while len(data) < header + length + 2:
            data += conn.recv(65536)
        return data[header:header + length]
    return data


def _main_thread_cpu_s(conn: socket.socket) -> float:
    info = _command(conn, "INFO", "cpu").decode()
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    return float(fields["used_cpu_sys_main_thread"]) + float(fields["used_cpu_user_main_thread"])


def _ping_both_s(conn: socket.socket, control: socket.socket) -> tuple[float, float]:
    """One PING to each, sent together; each round trip until its answer was seen."""
    sent = time.perf_counter()
    conn.sendall(b"*1\r\n$4\r\nPING\r\n")
    control.sendall(b"*1\r\n$4\r\nPING\r\n")
    replies = {conn: b"", control: b""}
    took: dict[socket.socket, float] = {}
    while len(took) < 2:
        readable, _, _ = select.select([s for s in replies if s not in took], [], [], 30)
        seen = time.perf_counter()
        for s in readable:
            replies[s] += s.recv(64)
            if replies[s].endswith(b"\r\n"):
                took[s] = seen - sent
    return took[conn], took[control]


def measure(port: int, control_port: int, seconds: float) -> Stall:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn, \
            socket.create_connection(("127.0.0.1", control_port), timeout=30) as control:
        for c in (conn, control):
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _command(conn, "CONFIG", "SET", "slowlog-log-slower-than", "1000")
        _command(conn, "SLOWLOG", "RESET")
        started, cpu_before = time.monotonic(), _main_thread_cpu_s(conn)
        worst = control_worst = added = 0.0
        deltas: list[float] = []
        pings = 0
        while time.monotonic() - started < seconds:
            loaded, idle = _ping_both_s(conn, control)
            worst, control_worst, added = max(worst, loaded), max(control_worst, idle), max(added, loaded - idle)
            deltas.append(loaded - idle)
            pings += 1
            time.sleep(INTERVAL_S)
        busy = (_main_thread_cpu_s(conn) - cpu_before) / (time.monotonic() - started)
        slowest_us = _slowest_us(conn)
    p99 = sorted(deltas)[int(len(deltas) * 0.99)] if deltas else 0.0
    return Stall(worst * 1000, pings, busy, slowest_us / 1000, control_worst * 1000, added * 1000, p99 * 1000)


def _slowest_us(conn: socket.socket) -> int:
    """The longest duration in the slow log (each entry: id, time, duration in µs, ...), read as RESP."""
    conn.sendall(b"*3\r\n$7\r\nSLOWLOG\r\n$3\r\nGET\r\n$3\r\n128\r\n")
    conn.settimeout(0.5)
    data = b""
    try:
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
    except TimeoutError:
        pass
    lines = data.split(b"\r\n")
    # An entry is *6 (or *4), :id, :time, :duration: the duration follows two integers after an array header.
    durations = [int(lines[i + 3][1:]) for i in range(len(lines) - 3)
                 if lines[i].startswith(b"*") and lines[i + 1].startswith(b":") and lines[i + 2].startswith(b":")
                 and lines[i + 3].startswith(b":")]
    return max(durations, default=0)


def start(port: int, control_port: int, seconds: float) -> subprocess.Popen[str]:
    """Starts the measuring process; read its figure with :func:`result`."""
    return subprocess.Popen([sys.executable, "-m", "tests.support.redis_stall", str(port), str(control_port),
                             str(seconds)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def result(process: subprocess.Popen[str], timeout: float = 120) -> Stall:
    out, _ = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise AssertionError(f"the PING client exited with {process.returncode}")
    return Stall(**json.loads(out))


if __name__ == "__main__":
    figure = measure(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]))
    print(json.dumps(asdict(figure)))
