"""In real Chromium: a page from another origin cannot use a signed-in operator's live sockets; pages run under the CSP."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page

from tests.support.browser import ROOT, Console

pytestmark = pytest.mark.browser

# What a page on another origin would run: open the console's socket with the visitor's cookies.
PROBE = """
window.probe = function (url, message) {
  return new Promise(function (resolve) {
    var seen = {opened: false, messages: 0, closed: null};
    var socket = new WebSocket(url);
    socket.onopen = function () { seen.opened = true; if (message) socket.send(message); };
    socket.onmessage = function () { seen.messages += 1; };
    socket.onclose = function (event) { seen.closed = event.code; resolve(seen); };
    setTimeout(function () { resolve(seen); }, 4000);
  });
};
"""


@pytest.fixture(scope="module")
def foreign_origin() -> Iterator[str]:
    """A plain web server on another port of the same host: another origin, the same site."""
    folder = Path(tempfile.mkdtemp(prefix="emq-foreign-"))
    (folder / "probe.js").write_text(PROBE)
    (folder / "index.html").write_text('<!doctype html><title>elsewhere</title><script src="probe.js"></script>')
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def _ws(console: Console, path: str) -> str:
    return "ws://" + urlsplit(console.url).netloc + path


def _probe(page: Page, url: str, message: str | None = None) -> dict[str, object]:
    return page.evaluate("([url, message]) => window.probe(url, message)", [url, message])  # type: ignore[no-any-return]


def test_a_page_on_another_port_cannot_read_the_live_overview_with_the_visitors_session(
        page: Page, console: Console, foreign_origin: str) -> None:
    # The same code on the console's own page is let in and fed: the session works.
    page.evaluate(PROBE)
    at_home = _probe(page, _ws(console, "/ws/overview/"))
    assert at_home["opened"] is True and int(at_home["messages"]) > 0  # type: ignore[call-overload]

    page.goto(foreign_origin)
    abroad = _probe(page, _ws(console, "/ws/overview/"))

    assert abroad == {"opened": False, "messages": 0, "closed": 1006}


def test_the_same_port_under_another_host_name_is_another_origin_too(page: Page, console: Console) -> None:
    port = urlsplit(console.url).port
    page.goto(f"http://localhost:{port}/login/")  # served by the console, but not the origin the socket names
    page.evaluate(PROBE)

    abroad = _probe(page, f"ws://127.0.0.1:{port}/ws/overview/")

    assert abroad["opened"] is False and abroad["messages"] == 0


def _running_run(console: Console) -> int:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "shell", "-v0", "-c",
                           "from dashboard.actions.models import AuditEntry; print(AuditEntry.objects.create("
                           "username='someone', queue='mail', action='retry_all', scope='queue', outcome='running').pk)"],
                          env=console.env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return int(done.stdout.strip().splitlines()[-1])


def _cancel_requested_by(console: Console, run: int) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "shell", "-v0", "-c",
                           "from dashboard.actions.models import AuditEntry; "
                           f"print(repr(AuditEntry.objects.get(pk={run}).cancel_requested_by))"],
                          env=console.env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip().splitlines()[-1]


def test_a_page_on_another_port_cannot_cancel_an_operators_bulk_run(operator_page: Page, console: Console,
                                                                    foreign_origin: str) -> None:
    run = _running_run(console)

    operator_page.goto(foreign_origin)
    abroad = _probe(operator_page, _ws(console, f"/ws/actions/run/?id={run}"), '{"action": "cancel"}')

    assert abroad["opened"] is False
    assert _cancel_requested_by(console, run) == "''"


@pytest.mark.parametrize("path", ["", "queue/?q=cli-csp", "audit/", "cluster/", "find/"])
def test_the_pages_run_under_the_content_security_policy_without_a_violation(page: Page, console: Console,
                                                                             path: str) -> None:
    console.cli("enqueue", "cli-csp", '{"n": 1}')
    violations: list[str] = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)

    response = page.goto(console.url + path)
    page.wait_for_timeout(1500)

    assert response is not None and "script-src 'self'" in (response.headers.get("content-security-policy") or "")
    assert violations == []
    # The scripts ran (a strict policy that blocked them would leave the page without its clock).
    assert page.evaluate("typeof htmx") == "object"
