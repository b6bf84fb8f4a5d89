"""Searches against a real daphne and a real Redis cannot stall Redis for another client.

A PING client in its own process measures the worst round trip another
client sees and the share of time Redis's main thread was busy, while
hostile searches (the longest needle the search takes, over 1 MiB payloads
it almost matches at every byte, from five sockets) and many
ordinary JSON-field searches run through the console's sockets. The bounds
are the issue's, with a wide margin over a quiet Redis (a PING of well under
1 ms): under 50 ms, and busy under half the time. On a shared machine the
PING client's own scheduling can cost it tens of milliseconds, so the PING
bound holds how much later Redis answers than an idle control Redis pinged in
the same instant (its 99th percentile: the worst single PING is printed, and a
descheduling of Redis on the loaded machine can move it, as it can Redis's
own slow log of the slowest command, which is printed too).
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pytest
import websockets

from queues import EchoMQ
from tests.support import redis_stall
from tests.support.daphne import console_env, manage, session_cookies, start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer

MIB = 1024 * 1024
BIG_JOBS = 40
SMALL_JOBS = 20_000
WORST_PING_MS = 50.0
BUSY_AT_MOST = 0.5
WINDOW_S = 8.0
# The longest needle the search takes, almost matching at every byte: the costliest find there is.
HOSTILE_NEEDLE = "a" * 255 + "b"


@dataclass
class Console:
    url: str
    redis: RedisServer
    control: RedisServer
    cookies: dict[str, str]

    @property
    def ws_base(self) -> str:
        return self.url.replace("http://", "ws://").rstrip("/")


@pytest.fixture(scope="module")
def console() -> Iterator[Console]:
    server, control = RedisServer().start(), RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-search-load-"))
    env = console_env(server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0", EMQ_DISCOVERY_SCANS_PER_S="0")
    manage(env, "migrate", "-v0")
    cookies = session_cookies(env, {"vera": "viewers", "otto": "operators", "olga": "operators"})
    mq = EchoMQ.from_url(server.url, actor="fill")
    # The worst case of a plain find: a needle that almost matches at every byte of a 1 MiB payload.
    for _ in range(BIG_JOBS):
        mq.enqueue("big", "a" * (MIB - 16))
    mq.enqueue_many("orders", [f'{{"user":{{"id":{n % 500}}},"sku":"s-{n}","note":"{"x" * 150}"}}'
                               for n in range(SMALL_JOBS)])
    mq.close()
    url, daphne = start_daphne(env, workdir, "daphne")
    yield Console(url, server, control, cookies)
    stop_daphne(daphne)
    server.cleanup()
    control.cleanup()


async def search_until(console: Console, user: str, params: dict[str, str], deadline: float) -> list[str]:
    """Searches again and again through the console's socket until ``deadline``; returns every message."""
    seen: list[str] = []
    query = urlencode({**params, "run": secrets.token_hex(6)})
    while time.monotonic() < deadline:
        async with websockets.connect(f"{console.ws_base}/ws/search/?{query}", open_timeout=30,
                                      origin=websockets.Origin(console.url.rstrip("/")),
                                      additional_headers={"Cookie": f"sessionid={console.cookies[user]}"}) as ws:
            try:
                while time.monotonic() < deadline:
                    message = await asyncio.wait_for(ws.recv(), timeout=max(deadline - time.monotonic(), 0.01))
                    seen.append(str(message))
            except (websockets.ConnectionClosed, TimeoutError):
                pass
    return seen


def under_load(console: Console, clients: list[tuple[str, dict[str, str]]]) -> tuple[redis_stall.Stall, list[str]]:
    """Runs the clients for the window; the PING client measures the middle of it, once every search is going."""

    async def run() -> tuple[redis_stall.Stall, list[str]]:
        deadline = time.monotonic() + WINDOW_S + 2
        tasks = [asyncio.create_task(search_until(console, user, params, deadline)) for user, params in clients]
        await asyncio.sleep(1.0)
        pinger = redis_stall.start(console.redis.port, console.control.port, WINDOW_S)
        messages = [m for found in await asyncio.gather(*tasks) for m in found]
        return await asyncio.to_thread(redis_stall.result, pinger), messages

    return asyncio.run(run())


def test_five_hostile_searches_keep_another_clients_ping_under_50_ms_and_redis_mostly_idle(console: Console) -> None:
    hostile = {"q": "big", "state": "pending", "payload": HOSTILE_NEEDLE}

    stall, messages = under_load(console, [("vera", hostile)] * 5)

    print(f"\nhostile searches: worst PING {stall.worst_ms:.1f} ms over {stall.pings} PINGs, "
          f"(an idle Redis {stall.control_worst_ms:.1f} ms; added {stall.added_ms:.1f} ms, p99 "
          f"{stall.added_p99_ms:.1f} ms), Redis busy {stall.busy:.0%}, "
          f"slowest command {stall.slowest_command_ms:.1f} ms")
    assert any("looked at" in m or "Finished" in m for m in messages), messages[-3:]
    assert any("searches of yours are running (at most 2 at once)" in m for m in messages)
    assert stall.pings > 100
    assert stall.added_p99_ms < WORST_PING_MS
    assert stall.busy < BUSY_AT_MOST


def test_forty_ordinary_field_searches_keep_another_clients_ping_under_50_ms_and_redis_mostly_idle(
        console: Console) -> None:
    field = {"q": "orders", "state": "pending", "field": "user.id=7"}
    clients = [(user, field) for user in ("vera", "otto", "olga") for _ in range(14)][:40]

    stall, messages = under_load(console, clients)

    print(f"\n40 field searches: worst PING {stall.worst_ms:.1f} ms over {stall.pings} PINGs, "
          f"(an idle Redis {stall.control_worst_ms:.1f} ms; added {stall.added_ms:.1f} ms, p99 "
          f"{stall.added_p99_ms:.1f} ms), Redis busy {stall.busy:.0%}, "
          f"slowest command {stall.slowest_command_ms:.1f} ms")
    assert any("looked at" in m for m in messages)
    assert any("searches are running on this console process (at most 4 at once)" in m for m in messages)
    assert stall.pings > 100
    assert stall.added_p99_ms < WORST_PING_MS
    assert stall.busy < BUSY_AT_MOST


def test_a_needle_longer_than_256_bytes_is_refused_before_it_reaches_redis(console: Console) -> None:
    async def close_code() -> int | None:
        query = urlencode({"q": "big", "state": "pending", "payload": "a" * 257, "run": secrets.token_hex(6)})
        async with websockets.connect(f"{console.ws_base}/ws/search/?{query}", open_timeout=30,
                                      origin=websockets.Origin(console.url.rstrip("/")),
                                      additional_headers={"Cookie": f"sessionid={console.cookies['vera']}"}) as ws:
            with pytest.raises(websockets.ConnectionClosed):
                await asyncio.wait_for(ws.recv(), timeout=30)
            return ws.close_code

    assert asyncio.run(close_code()) == 4400
