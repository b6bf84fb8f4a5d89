"""Request bodies against a real daphne: a 200 MB body is refused as it arrives, a stalled one is cut."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
BODY_TIMEOUT_S = 2.0
REQUEST_DEADLINE_S = 6.0
# Twice the body's: a stalled body is idle too, and the two timers at one moment made the close a race.
IDLE_TIMEOUT_S = 4.0


@dataclass
class Daphne:
    port: int
    process: subprocess.Popen[bytes]

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)


@pytest.fixture(scope="module")
def daphne() -> Iterator[Daphne]:
    workdir = Path(tempfile.mkdtemp(prefix="emq-limits-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "SECRET_KEY": "limits-tests-only-" + "k" * 40,
           "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "DEBUG": "0", "EMQ_SWEEPER_INTERVAL_S": "0",
           "EMQ_BODY_TIMEOUT_S": str(BODY_TIMEOUT_S),
           "EMQ_REQUEST_DEADLINE_S": str(REQUEST_DEADLINE_S), "EMQ_IDLE_TIMEOUT_S": str(IDLE_TIMEOUT_S), "EMQ_REDIS_URL": f"redis://127.0.0.1:{free_port()}/0",
           "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, cwd=ROOT, check=True,
                   timeout=120)
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
                                "dashboard.asgi:application"], env=env, cwd=ROOT, stdout=subprocess.DEVNULL,
                               stderr=open(workdir / "daphne.log", "wb"))
    server = Daphne(port, process)
    deadline = time.monotonic() + 60
    while True:
        try:
            _request(server, b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise
            time.sleep(0.2)
    yield server
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def _request(server: Daphne, data: bytes) -> bytes:
    with server.connect() as conn:
        conn.sendall(data)
        return _read_all(conn)


def _read_all(conn: socket.socket) -> bytes:
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
    return answer


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


def _post_head(path: str, length: int | None, content_type: str = "application/x-www-form-urlencoded") -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: {content_type}\r\n"
            f"{size}\r\n").encode()


def _stream(server: Daphne, head: bytes, total: int, *, chunked: bool = False) -> tuple[bytes, int]:
    """Sends ``head`` and then up to ``total`` body bytes while reading; returns the answer and the bytes sent."""
    piece = b"x" * (256 * 1024)
    if chunked:
        piece = b"%x\r\n%s\r\n" % (len(piece), piece)
    sent = 0
    answer = b""
    with server.connect() as conn:
        conn.sendall(head)
        conn.setblocking(False)
        while sent < total:
            readable, writable, _ = select.select([conn], [conn], [], 10)
            if readable:
                try:
                    chunk = conn.recv(65536)
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                answer += chunk
                if b"\r\n\r\n" in answer:
                    break
            elif writable:
                try:
                    sent += conn.send(piece[: total - sent])
                except (BrokenPipeError, ConnectionResetError):
                    break
            else:
                raise AssertionError("the server neither answered nor took more of the body for 10 s")
        conn.setblocking(True)
        conn.settimeout(30)
        try:
            answer += _read_all(conn)
        except ConnectionResetError:
            pass
    return answer, sent


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_200_mb_anonymous_login_post_is_refused_without_daphne_growing(daphne: Daphne, chunked: bool) -> None:
    before = daphne.rss_kib()

    answer, sent = _stream(daphne, _post_head("/login/", None if chunked else 200 * MB), 200 * MB, chunked=chunked)

    grown_mib = (daphne.rss_kib() - before) / 1024
    assert _status(answer) == 413, answer[:300]
    assert b"larger than" in answer
    assert grown_mib < 10, f"daphne grew by {grown_mib:.1f} MiB"
    assert sent < 200 * MB  # it stopped reading long before the end
    print(f"\n{'chunked' if chunked else 'content-length'}: sent {sent / MB:.1f} MiB of 200 before the 413; "
          f"daphne RSS {before / 1024:.1f} -> {daphne.rss_kib() / 1024:.1f} MiB")


def test_a_body_over_the_general_limit_is_refused_by_its_length_before_any_of_it_is_sent(daphne: Daphne) -> None:
    with daphne.connect() as conn:
        conn.sendall(_post_head("/actions/job/", 2 * MB))
        answer = _read_all(conn)

    assert _status(answer) == 413


def test_an_order_over_4_kib_is_refused_with_413(daphne: Daphne) -> None:
    body = b"{" + b" " * 5000 + b"}"
    answer = _request(daphne, _post_head("/api/orders", len(body), "application/json") + body)

    assert _status(answer) == 413


def test_a_stalled_body_is_cut_after_the_timeout(daphne: Daphne) -> None:
    with daphne.connect() as conn:
        conn.sendall(_post_head("/login/", 1000) + b"username=a")
        started = time.monotonic()
        answer = _read_all(conn)
        waited = time.monotonic() - started

    assert _status(answer) == 408, answer[:300]
    assert BODY_TIMEOUT_S - 0.5 < waited < BODY_TIMEOUT_S + 20


def test_a_body_that_trickles_in_within_the_timeout_is_read(daphne: Daphne) -> None:
    body = b"username=nobody&password=wrong-password"
    with daphne.connect() as conn:
        conn.sendall(_post_head("/login/", len(body)))
        for start in range(0, len(body), 10):
            time.sleep(BODY_TIMEOUT_S / 4)
            conn.sendall(body[start:start + 10])
        answer = _read_all(conn)

    # Read in full and handed to Django, whose CSRF check refuses a post without a token.
    assert _status(answer) == 403, answer[:300]


def _trickle(server: Daphne, head: bytes, pieces: list[bytes], every_s: float) -> bytes:
    """Sends ``head``, then one piece each ``every_s`` until the server answers; returns the answer."""
    with server.connect() as conn:
        conn.sendall(head)
        for piece in pieces:
            readable, _, _ = select.select([conn], [], [], every_s)
            if readable:
                break
            conn.sendall(piece)
        else:
            raise AssertionError("the server took every piece without answering")
        return _read_all(conn)


def test_headers_that_trickle_in_without_ever_stalling_are_cut_at_the_deadline(daphne: Daphne) -> None:
    # One header line a second for up to a minute: never a stall, but not a request within the deadline.
    head = b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    answer = _trickle(daphne, head, [b"X-Slow-%d: x\r\n" % n for n in range(60)], every_s=1.0)

    assert _status(answer) == 408, answer[:300]
    assert b"did not arrive whole" in answer


def test_a_body_that_trickles_in_without_ever_stalling_is_cut_at_the_deadline(daphne: Daphne) -> None:
    # One byte a second, half the stall timeout: only the deadline stops it.
    answer = _trickle(daphne, _post_head("/login/", 1000), [b"x"] * 60, every_s=BODY_TIMEOUT_S / 2)

    assert _status(answer) == 408, answer[:300]
    assert b"did not arrive whole" in answer


@pytest.mark.parametrize("after_a_request", [False, True], ids=["fresh", "kept-alive"])
def test_an_idle_connection_is_closed_after_the_idle_timeout(daphne: Daphne, after_a_request: bool) -> None:
    with daphne.connect() as conn:
        if after_a_request:
            conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += conn.recv(65536)
            assert _status(answer) == 200, answer[:300]
        conn.settimeout(30)  # under Twisted's own timeout, 60 s: the console's setting closed it
        while conn.recv(65536):  # the rest of the answer, if any, then the close
            pass


def test_under_api_the_refusals_daphne_writes_itself_are_json(daphne: Daphne) -> None:
    with daphne.connect() as conn:
        conn.sendall(_post_head("/api/queue/actions", 2 * MB, "application/json"))
        answer = _read_all(conn)

    head, _, body = answer.partition(b"\r\n\r\n")
    assert _status(answer) == 413 and b"Content-Type: application/json" in head
    assert "larger than" in json.loads(body)["error"]
