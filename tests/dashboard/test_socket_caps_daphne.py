"""500 sockets from one viewer against a real daphne: every handshake is answered, all but the viewer's share
are closed with 4429 at once, and another user's page and live socket are served meanwhile."""

from __future__ import annotations

import asyncio
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import websockets

from dashboard.socket_caps import TOO_MANY_SOCKETS
from queues import EchoMQ
from tests.support.daphne import console_env, manage, session_cookies, start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer

SOCKETS = 500
PER_USER = 20
# Another user's page before the caps: 13 s under the same 500 sockets. A bound, with room for a loaded machine.
PAGE_WITHIN_S = 5.0


@dataclass
class Console:
    url: str
    cookies: dict[str, str]
    access_log: Path

    def ws(self, user: str, path: str = "/ws/overview/") -> websockets.connect:
        return websockets.connect(self.url.replace("http://", "ws://").rstrip("/") + path, open_timeout=60,
                                  origin=websockets.Origin(self.url.rstrip("/")),
                                  additional_headers={"Cookie": f"sessionid={self.cookies[user]}"})


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    server = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-socket-caps-"))
    env = console_env(server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0", EMQ_DISCOVERY_SCANS_PER_S="0",
                      EMQ_SOCKETS_PER_USER=str(PER_USER))
    manage(env, "migrate", "-v0")
    cookies = session_cookies(env, {"vera": "viewers", "otto": "operators"})
    mq = EchoMQ.from_url(server.url, actor="fill")
    for name in ("mail", "billing", "reports"):
        mq.enqueue(name, "x")
    mq.close()
    # daphne refuses (403) a handshake the application has not answered within --websocket_connect_timeout (5 s
    # by default): at load 10 the console may take longer over 500 sessions, and the caps are tested, not that
    # timer. Its access log is where each handshake's answer is read (below).
    access_log = workdir / "access.log"
    url, daphne = start_daphne(env, workdir, "daphne",
                               options=("--websocket_connect_timeout", "120", "--access-log", str(access_log)))
    yield Console(url, cookies, access_log)
    stop_daphne(daphne)
    server.cleanup()


async def _one_socket(console: Console, hold: asyncio.Event) -> int | None:
    """Opens one of the viewer's sockets: None if it stays open (held until ``hold``), else its close code."""
    async with console.ws("vera") as ws:
        try:
            while True:
                await asyncio.wait_for(ws.recv(), timeout=2)
        except TimeoutError:
            await hold.wait()
            return None
        except websockets.ConnectionClosed:
            return ws.close_code


def _page_seconds(console: Console, user: str) -> float:
    started = time.monotonic()
    request = urllib.request.Request(console.url, headers={"Cookie": f"sessionid={console.cookies[user]}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        assert response.status == 200 and b"<main" in response.read()
    return time.monotonic() - started


def test_500_sockets_from_one_viewer_leave_another_users_page_and_socket_served(console: Console) -> None:
    async def run() -> tuple[list[int | None | BaseException], float, str]:
        hold = asyncio.Event()
        viewer = [asyncio.create_task(_one_socket(console, hold)) for _ in range(SOCKETS)]
        await asyncio.sleep(0.5)  # the handshakes under way
        page_s = await asyncio.to_thread(_page_seconds, console, "otto")
        async with console.ws("otto") as other:
            first = str(await asyncio.wait_for(other.recv(), timeout=30))
        # Bounded: a socket the caps let through by mistake stays open and is counted below, never waited for.
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            done = [t for t in viewer if t.done()]
            if len(done) == SOCKETS or (len([t for t in done if t.exception() or t.result() is not None])
                                        >= SOCKETS - PER_USER):
                break
            await asyncio.sleep(0.2)
        hold.set()
        results = list(await asyncio.gather(*viewer, return_exceptions=True))
        return results, page_s, first

    results, page_s, first = asyncio.run(run())

    failed = [r for r in results if isinstance(r, BaseException)]
    # A socket over the cap is accepted and closed with 4429 at once. daphne (autobahn) waits 1 s for the client's
    # half of the closing handshake, then aborts the connection: the reset makes the client's kernel drop what the
    # client had not read yet, the 101 answer included. At load 10 this client (500 sockets on one event loop) is
    # that slow for some of them, which then see the connection end before a status line. The server's access log
    # says whether it answered each handshake; a cut answer is counted as the close it was, any other failure fails.
    cut = [r for r in failed if isinstance(r, websockets.InvalidMessage) and isinstance(r.__cause__, EOFError)]
    answered = console.access_log.read_text().count('"WSCONNECT /ws/overview/"')
    print(f"\n500 sockets: {results.count(None)} open, {results.count(TOO_MANY_SOCKETS)} closed 4429, "
          f"{len(cut)} closed before the client read the answer, {len(failed) - len(cut)} failed otherwise; "
          f"{answered} handshakes accepted; another user's page in {page_s:.2f} s")
    assert [r for r in failed if r not in cut] == []
    assert answered == SOCKETS + 1  # the viewer's and the other user's: every handshake was answered
    assert results.count(None) == PER_USER and results.count(TOO_MANY_SOCKETS) + len(cut) == SOCKETS - PER_USER
    assert page_s < PAGE_WITHIN_S
    assert "<" in first
