"""What browser tests share besides fixtures: the console under test, logging in, waiting for a live page."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Browser, Page

from tests.support.daphne import console_env, manage, start_daphne, stop_daphne
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
    # Mounted in a host project (tests/hostproject), the host's login page; standalone, the console's own.
    login_url: str = ""

    def cli(self, *args: str) -> str:
        """Runs the ``emq`` CLI against the console's Redis; returns its output."""
        done = subprocess.run([sys.executable, "-m", "queues", *args], env=self.env, cwd=ROOT,
                              capture_output=True, text=True, timeout=30, check=True)
        return done.stdout.strip()


def wait_until_live(page: Page, timeout_ms: float = 20_000) -> None:
    """The page's WebSocket has delivered its first fragments: the clock was swapped by a push.

    Not the rendered clock's time: a page's first push may still be on its way (and a test that stops
    Redis then would stop it before the page has ever been live).

    An arrow function, not an expression: under the console's CSP (no
    'unsafe-eval') Playwright cannot poll a string expression.
    """
    page.wait_for_function("() => document.getElementById('server-clock')?.dataset.live === '1'"
                           " && !!document.querySelector('[ws-connect]')", timeout=timeout_ms)


def create_operator(console: Console, username: str, password: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "createoperator", username],
                   env={**console.env, "EMQ_PASSWORD": password}, cwd=ROOT, check=True, timeout=60, capture_output=True)


def logged_in(browser: Browser, console: Console, username: str, password: str, **options: object) -> Page:
    """A page of a fresh browser context (its own cookies), logged in; close its context when done."""
    context = browser.new_context(**{"viewport": {"width": 1400, "height": 900}, **options})  # type: ignore[arg-type]
    page = context.new_page()
    page.goto(f"{console.login_url}?next={urlsplit(console.url).path}" if console.login_url else console.url + "login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(console.url)
    return page


@contextmanager
def served_console(env: dict[str, str], workdir: Path, redis: RedisServer, users: str) -> Iterator[Console]:
    """A daphne console over ``env`` (its database in ``workdir``, migrated), with the users the Django shell
    code ``users`` makes; daphne stops when the block ends, the Redis servers are the caller's."""
    manage(env, "migrate", "-v0")
    manage(env, "shell", "-c", users)
    url, daphne = start_daphne(env, workdir, "daphne")
    try:
        yield Console(url, redis, env)
    finally:
        stop_daphne(daphne)


@contextmanager
def console_over_deployments(setting: Mapping[str, object], first: RedisServer, *, operator: tuple[str, str],
                             groups: tuple[str, ...] = ()) -> Iterator[Console]:
    """A daphne console over the deployments ``setting`` names (EMQ_DEPLOYMENTS; ``first`` is the first one's
    server), with one operator (name, password) in ``groups``; the servers are the caller's to start and stop."""
    workdir = Path(tempfile.mkdtemp(prefix="emq-deployments-"))
    env = console_env(first.url, workdir, EMQ_DEPLOYMENTS=json.dumps(setting), EMQ_SWEEPER_INTERVAL_S="0",
                      EMQ_SCHEDULER_INTERVAL_S="0")
    name, password = operator
    with served_console(env, workdir, first, "from django.contrib.auth.models import Group\n"
                        "from dashboard.roles import user_create\n"
                        f"u = user_create(username={name!r}, password={password!r}, role='operators')\n"
                        f"for g in {list(groups)!r}: u.groups.add(Group.objects.get_or_create(name=g)[0])") as console:
        yield console
