"""Clients that never read their answers leave a real daphne's memory where it was.

Forty raw sockets with tiny receive buffers ask for the largest answers a
viewer can ask for (pages of the audit log when every row names a thousand
jobs, a run's full job list, a 1 MiB payload) and read nothing; daphne's RSS
(from /proc) stays within 100 MB of its size before they came. Before, a page
of the log listed every row's jobs (500 rows: 16 MB), and forty such requests
took daphne past 1 GB.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from subprocess import Popen

import pytest

from queues import EchoMQ
from tests.support.daphne import console_env, manage, session_cookies, start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer

CLIENTS = 40
ROWS = 500
JOBS_A_ROW = 1000
GROWTH_AT_MOST_MB = 100
WINDOW_S = 8.0


@dataclass
class Console:
    port: int
    process: Popen[bytes]
    cookie: str
    run_id: int
    job_id: str

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    server = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-slow-readers-"))
    env = console_env(server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0", EMQ_DISCOVERY_SCANS_PER_S="0")
    manage(env, "migrate", "-v0")
    cookie = session_cookies(env, {"vera": "viewers"})["vera"]
    # Rows as large as a refused selection of a thousand jobs makes them (about 50 KB each).
    run_id = int(manage(env, "shell", "-c", (
        "from dashboard.actions.models import AuditEntry\n"
        f"jobs = [{{'id': f'job-{{n:012d}}', 'state': 'failed', 'attempts': '1'}} for n in range({JOBS_A_ROW})]\n"
        "rows = AuditEntry.objects.bulk_create(AuditEntry(username='otto', queue='mail', action='retry', "
        f"scope='selection', outcome='refused', jobs=jobs) for _ in range({ROWS}))\n"
        "print(AuditEntry.objects.order_by('-id').first().pk)")).strip().splitlines()[-1])
    mq = EchoMQ.from_url(server.url, actor="fill")
    job_id = mq.enqueue("mail", b"p" * (1024 * 1024 - 1))
    mq.close()
    url, daphne = start_daphne(env, workdir, "daphne")
    yield Console(int(url.rsplit(":", 1)[1].strip("/")), daphne, cookie, run_id, job_id)
    stop_daphne(daphne)
    server.cleanup()


def never_reading(console: Console, target: str, *, close: bool = False) -> socket.socket:
    conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: the window stays tiny
    conn.connect(("127.0.0.1", console.port))
    ending = "Connection: close\r\n\r\n" if close else "\r\n"
    conn.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: sessionid={console.cookie}\r\n{ending}"
                 .encode())
    return conn


def test_forty_clients_that_never_read_leave_daphnes_memory_within_100_mb(console: Console) -> None:
    targets = ["/api/audit?limit=100", "/api/audit?limit=500", f"/api/runs/{console.run_id}",
               f"/job/payload/?q=mail&id={console.job_id}"]
    for target in targets:  # each answered once, so what stays in memory after the first use is in the idle size
        with never_reading(console, target, close=True) as warm:
            warm.settimeout(30)
            while warm.recv(1 << 20):
                pass
    time.sleep(1)
    idle = console.rss_mb()

    clients = [never_reading(console, targets[n % len(targets)]) for n in range(CLIENTS)]
    peak = idle
    deadline = time.monotonic() + WINDOW_S
    while time.monotonic() < deadline:
        peak = max(peak, console.rss_mb())
        time.sleep(0.1)
    for conn in clients:
        conn.close()

    print(f"\n{CLIENTS} never-reading clients: daphne idle {idle:.0f} MB, peak {peak:.0f} MB")
    assert peak - idle < GROWTH_AT_MOST_MB

