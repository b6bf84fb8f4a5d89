"""The console mounted in a host project (tests/hostproject) under /ops/queues/, served by a real daphne, and real
Chromium: the fixtures the console's browser tests take, for the mounted console."""

from __future__ import annotations

import os
import subprocess
import sys
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
)
from tests.support.daphne import start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer

PREFIX = "ops/queues/"


@pytest.fixture(scope="session")
def console() -> Iterator[Console]:
    redis = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-host-"))
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.hostproject.settings",
           "SECRET_KEY": "host-tests-only-" + "x" * 40, "EMQ_REDIS_URL": redis.url,
           "DATABASE_URL": f"sqlite:///{workdir / 'host.sqlite3'}", "PYTHONPATH": str(ROOT),
           "EMQ_CONSOLE_WORKDIR": str(workdir)}
    django = [sys.executable, "-m", "django"]
    subprocess.run([*django, "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=120)
    subprocess.run([*django, "shell", "-c", "from dashboard.roles import user_create; "
                    f"user_create(username={USERNAME!r}, password={PASSWORD!r}, role='viewers'); "
                    "from tests.hostproject.dashboard.models import Panel; Panel.objects.create(title='Sales today')"],
                   env=env, cwd=ROOT, check=True, timeout=60)
    url, daphne = start_daphne(env, workdir, "host-daphne", application="tests.hostproject.asgi:application",
                               probe="accounts/login/")
    try:
        yield Console(url + PREFIX, redis, env, login_url=url + "accounts/login/")
    finally:
        stop_daphne(daphne)
        redis.cleanup()


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
