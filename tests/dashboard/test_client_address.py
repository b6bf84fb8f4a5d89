"""The client's address behind trusted proxies: the N-th X-Forwarded-For entry from the right, never one the
client wrote, for /metrics, the login throttle and the audit alike."""

from __future__ import annotations

import json
import sqlite3
import tempfile
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.client_address import forwarded_client
from tests.support.daphne import console_env, manage, start_daphne, stop_daphne
from tests.support.http_login import answer, form_log_in, plain_opener
from tests.support.redis_servers import RedisServer

REAL = "203.0.113.5"  # the client, as the one trusted proxy saw it
SPOOFED = "10.9.9.9"  # what the client wrote into X-Forwarded-For itself
PASSWORD = "a-long-viewer-password-9"


def test_the_client_is_the_entry_as_many_hops_from_the_right_as_there_are_trusted_proxies() -> None:
    spoofed = [f"{SPOOFED}, 198.51.100.1, {REAL}".encode()]

    assert forwarded_client("127.0.0.1", spoofed, 1) == REAL
    assert forwarded_client("127.0.0.1", spoofed, 2) == "198.51.100.1"
    assert forwarded_client("127.0.0.1", [SPOOFED.encode(), REAL.encode()], 1) == REAL  # two headers are one list
    assert forwarded_client("127.0.0.1", spoofed, 0) == "127.0.0.1"  # no proxy: the header means nothing
    assert forwarded_client("127.0.0.1", [], 1) == "127.0.0.1"  # not through the proxy: its peer
    assert forwarded_client("127.0.0.1", [b"not-an-address"], 1) == "127.0.0.1"
    assert forwarded_client("127.0.0.1", [b"[2001:db8::1]"], 1) == "2001:db8::1"


@pytest.fixture
def behind_one_proxy(redis_server: RedisServer) -> Iterator[tuple[str, Path]]:
    """A real daphne that trusts one proxy hop, run with --proxy-headers as older instructions said; the test
    plays the proxy (it connects from loopback and appends the client's address)."""
    workdir = Path(tempfile.mkdtemp(prefix="emq-xff-"))
    env = console_env(redis_server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0", EMQ_METRICS_ALLOW=SPOOFED,
                      EMQ_TRUSTED_PROXY_HOPS="1")
    manage(env, "migrate", "-v0")
    manage({**env, "EMQ_PASSWORD": PASSWORD}, "createviewer", "vera")
    url, daphne = start_daphne(env, workdir, "daphne", options=("--proxy-headers",))
    try:
        yield url, workdir
    finally:
        stop_daphne(daphne)


def _log_in(url: str, password: str, forwarded: str) -> int:
    return form_log_in(url, "vera", password, {"X-Forwarded-For": forwarded}).status


def test_a_spoofed_x_forwarded_for_behind_one_trusted_hop_reaches_neither_metrics_nor_the_throttle_nor_the_audit(
        behind_one_proxy: tuple[str, Path]) -> None:
    url, workdir = behind_one_proxy
    opener = plain_opener()

    spoofed, _ = answer(opener, urllib.request.Request(url + "metrics", headers={
        "X-Forwarded-For": f"{SPOOFED}, {REAL}"}))
    really_there, _ = answer(opener, urllib.request.Request(url + "metrics", headers={
        "X-Forwarded-For": f"{REAL}, {SPOOFED}"}))
    # The client writes a new address before each try; the proxy appends the one it saw, always the same.
    failures = [_log_in(url, f"wrong-{n}", f"198.51.100.{n}, {REAL}") for n in range(11)]
    from_elsewhere = _log_in(url, PASSWORD, "198.51.100.200, 203.0.113.77")

    assert (spoofed, really_there) == (403, 200)
    assert failures == [200] * 9 + [429, 429]
    assert from_elsewhere == 302
    with sqlite3.connect(workdir / "db.sqlite3") as db:
        addresses = {json.loads(row[0])["address"] for row in db.execute(
            "SELECT parameters FROM actions_auditentry WHERE action = 'login'")}
    assert addresses == {REAL}
