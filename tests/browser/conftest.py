"""A real daphne serving the console (its own SQLite file, its own redis-server) and real Chromium.

Run in their own pytest session (``-p no:asyncio``): sync Playwright needs
the event loop that pytest-asyncio would otherwise own.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

from queues import EchoMQ
from tests.support.browser import (
    CHROMIUM_ARGS,
    OPERATOR,
    OPERATOR_PASSWORD,
    PASSWORD,
    ROOT,
    USERNAME,
    Console,
    create_operator,
    logged_in,
    served_console,
)
from tests.support.daphne import start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer


@pytest.fixture(scope="session")
def console() -> Iterator[Console]:
    redis = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-console-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "SECRET_KEY": "browser-tests-only-" + "x" * 40,
           "EMQ_REDIS_URL": redis.url, "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "DEBUG": "0",
           "PYTHONPATH": str(ROOT), "EMQ_CONSOLE_WORKDIR": str(workdir),
           # Tests prove "nothing changed" by the keyspace: no sweeper may recover a lapsed lease meanwhile.
           "EMQ_SWEEPER_INTERVAL_S": "0", "EMQ_ALERTS_INTERVAL_S": "0", "EMQ_SCHEDULER_INTERVAL_S": "0",
           # Idle keep-alive connections are closed after 2 s: every live page must outlive that.
           "EMQ_IDLE_TIMEOUT_S": "2"}
    try:
        with served_console(env, workdir, redis, "from dashboard.roles import user_create; "
                            f"user_create(username={USERNAME!r}, password={PASSWORD!r}, role='viewers')") as served:
            yield served
    finally:
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


@pytest.fixture(scope="session")
def operator_login(console: Console) -> tuple[str, str]:
    create_operator(console, OPERATOR, OPERATOR_PASSWORD)
    return OPERATOR, OPERATOR_PASSWORD


@pytest.fixture
def operator_page(browser: Browser, console: Console, operator_login: tuple[str, str]) -> Iterator[Page]:
    page = logged_in(browser, console, *operator_login)
    yield page
    page.context.close()
