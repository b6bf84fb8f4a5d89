"""A real daphne serving the console (its own SQLite file, its own redis-server) and real Chromium.

Run in their own pytest session (``-p no:asyncio``): sync Playwright needs
the event loop that pytest-asyncio would otherwise own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from queues import EchoMQ
from tests.support.daphne import start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
USERNAME, PASSWORD = "vera", "vera-password"
OPERATOR, OPERATOR_PASSWORD = "otto", "otto-password"


@dataclass
class Console:
    url: str
    redis: RedisServer
    env: dict[str, str]

    def cli(self, *args: str) -> str:
        """Runs the ``emq`` CLI against the console's Redis; returns its output."""
        done = subprocess.run([sys.executable, "-m", "queues", *args], env=self.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=30, check=True)
        return done.stdout.strip()


@pytest.fixture(scope="session")
def console() -> Iterator[Console]:
    redis = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-console-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "SECRET_KEY": "browser-tests-only-" + "x" * 40,
           "EMQ_REDIS_URL": redis.url, "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "DEBUG": "0",
           "PYTHONPATH": str(ROOT), "EMQ_CONSOLE_WORKDIR": str(workdir),
           # Tests prove "nothing changed" by the keyspace: no sweeper may recover a lapsed lease meanwhile.
           "EMQ_SWEEPER_INTERVAL_S": "0",
           # Idle keep-alive connections are closed after 2 s: every live page must outlive that.
           "EMQ_IDLE_TIMEOUT_S": "2"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=120)
    subprocess.run([*manage, "shell", "-c", "from dashboard.roles import user_create; "
                    f"user_create(username={USERNAME!r}, password={PASSWORD!r}, role='viewers')"],
                   env=env, cwd=ROOT, check=True, timeout=60)
    url, daphne = start_daphne(env, workdir, "daphne")
    try:
        yield Console(url, redis, env)
    finally:
        stop_daphne(daphne)
        redis.cleanup()


@pytest.fixture
def second_console(console: Console) -> Iterator[str]:
    """Another daphne process serving the same database and Redis, as behind one load balancer."""
    url, daphne = start_daphne(console.env, Path(console.env["EMQ_CONSOLE_WORKDIR"]), "daphne-2")
    try:
        yield url
    finally:
        stop_daphne(daphne)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser, console: Console) -> Iterator[Page]:
    page = logged_in(browser, console, USERNAME, PASSWORD)
    yield page
    page.context.close()


@pytest.fixture(scope="session")
def mq(console: Console) -> Iterator[EchoMQ]:
    client = EchoMQ.from_url(console.redis.url, actor="browser-test")
    yield client
    client.close()


def wait_until_live(page: Page, timeout_ms: float = 20_000) -> None:
    """The page's WebSocket has delivered its first fragments (the clock then carries the server time).

    An arrow function, not an expression: under the console's CSP (no
    'unsafe-eval') Playwright cannot poll a string expression.
    """
    page.wait_for_function("() => Number(document.getElementById('server-clock')?.dataset.now) > 0"
                           " && !!document.querySelector('[ws-connect]')", timeout=timeout_ms)


def create_operator(console: Console, username: str, password: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "createoperator", username],
                   env={**console.env, "EMQ_PASSWORD": password}, cwd=ROOT, check=True, timeout=60, capture_output=True)


@pytest.fixture(scope="session")
def operator_login(console: Console) -> tuple[str, str]:
    create_operator(console, OPERATOR, OPERATOR_PASSWORD)
    return OPERATOR, OPERATOR_PASSWORD


def logged_in(browser: Browser, console: Console, username: str, password: str, **options: object) -> Page:
    """A page of a fresh browser context (its own cookies), logged in; close its context when done."""
    context = browser.new_context(**{"viewport": {"width": 1400, "height": 900}, **options})  # type: ignore[arg-type]
    page = context.new_page()
    page.goto(console.url + "login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(console.url)
    return page


@pytest.fixture
def operator_page(browser: Browser, console: Console, operator_login: tuple[str, str]) -> Iterator[Page]:
    page = logged_in(browser, console, *operator_login)
    yield page
    page.context.close()
