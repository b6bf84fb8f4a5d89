"""A viewer posting refused actions as fast as it can, against a real daphne, grows the database by little.

The bound is the issue's "under 1 MB in 60 s", scaled to this test's
FLOOD_S seconds (the rows a user can add grow with time, at most
REFUSALS_PER_WINDOW a minute, each a few KiB): under 1 MB × FLOOD_S / 60.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.actions.audit import REFUSALS_PER_WINDOW
from dashboard.actions.bulk import MAX_SELECTION
from tests.support.daphne import console_env, manage, start_daphne, stop_daphne
from tests.support.http_login import Session, answer, form_log_in, plain_opener
from tests.support.redis_servers import RedisServer

FLOOD_S = 15.0
BOUND_BYTES = int(1_000_000 * FLOOD_S / 60)
POSTERS = 4
PASSWORD = "a-long-viewer-password-9"


@pytest.fixture
def console(redis_server: RedisServer) -> Iterator[tuple[str, Path]]:
    workdir = Path(tempfile.mkdtemp(prefix="emq-flood-"))
    env = console_env(redis_server.url, workdir, EMQ_SWEEPER_INTERVAL_S="0")
    manage(env, "migrate", "-v0")
    manage({**env, "EMQ_PASSWORD": PASSWORD}, "createviewer", "vera")
    url, daphne = start_daphne(env, workdir, "daphne")
    try:
        yield url, workdir
    finally:
        stop_daphne(daphne)


def database_bytes(workdir: Path) -> int:
    return sum(path.stat().st_size for path in workdir.glob("db.sqlite3*"))


def _bodies() -> list[tuple[str, bytes]]:
    """What the viewer posts, in turn: the largest selection allowed (long ids), one over the limit, and queue
    actions on ever new queue names (each a refusal of its own)."""
    largest = [("q", "mail"), ("move", "retry")] + [("job", f"failed:1:{n}-" + "y" * 200)
                                                   for n in range(MAX_SELECTION)]
    over = [("q", "mail"), ("move", "delete")] + [("job", f"failed:1:{n}") for n in range(MAX_SELECTION + 1)]
    return [("/actions/selection/", urllib.parse.urlencode(largest).encode()),
            ("/actions/selection/", urllib.parse.urlencode(over).encode())]


def _post_until(url: str, session: Session, deadline: float, statuses: list[int], poster: int) -> None:
    opener = plain_opener()
    bodies = _bodies()
    headers = {"Cookie": session.cookie, "X-CSRFToken": session.csrf, "HX-Request": "true",
               "Content-Type": "application/x-www-form-urlencoded"}
    n = 0
    while time.monotonic() < deadline:
        n += 1
        if n % 3 == 0:
            form = {"q": f"q-{poster}-{n}", "action": "retry_all"}
            path, body = "/actions/queue/", urllib.parse.urlencode(form).encode()
        else:
            path, body = bodies[n % 2]
        status, _ = answer(opener, urllib.request.Request(url.rstrip("/") + path, body, headers=headers))
        statuses.append(status)


def test_a_viewer_posting_refused_actions_as_fast_as_it_can_grows_the_database_by_under_the_bound(
        console: tuple[str, Path]) -> None:
    url, workdir = console
    session = form_log_in(url, "vera", PASSWORD)
    assert session.status == 302
    before = database_bytes(workdir)
    statuses: list[int] = []
    deadline = time.monotonic() + FLOOD_S
    posters = [threading.Thread(target=_post_until, args=(url, session, deadline, statuses, n))
               for n in range(POSTERS)]

    for poster in posters:
        poster.start()
    for poster in posters:
        poster.join()

    grown = database_bytes(workdir) - before
    print(f"{len(statuses)} refused posts in {FLOOD_S:g} s grew the database by {grown} bytes "
          f"(bound {BOUND_BYTES})")
    with sqlite3.connect(workdir / "db.sqlite3") as db:
        rows = [json.loads(parameters) for (parameters,) in db.execute("SELECT parameters FROM actions_auditentry")]
    assert set(statuses) == {400, 403} and len(statuses) > 3 * POSTERS
    assert grown < BOUND_BYTES
    # Every refused post is counted, on at most REFUSALS_PER_WINDOW rows (the test lasts less than the window).
    assert 0 < len(rows) <= REFUSALS_PER_WINDOW
    assert len(rows) + sum(r.get("repeats", 0) for r in rows) == statuses.count(403)
