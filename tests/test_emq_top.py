"""``emq top`` driven as a person would over SSH: in tmux at 80x24 (send-keys, capture-pane), against a real console."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from queues import EchoMQ
from tests.support.daphne import ROOT, console_env, manage, start_daphne, stop_daphne
from tests.support.redis_servers import RedisServer
from tests.support.waiting import wait_until

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


class Terminal:
    """One tmux session of its own (its own server socket), 80 columns by 24 lines."""

    def __init__(self, socket: Path, command: list[str], env: dict[str, str]) -> None:
        self.base = ["tmux", "-S", str(socket)]
        shell = " ".join(_quoted(part) for part in command)
        subprocess.run([*self.base, "new-session", "-d", "-x", "80", "-y", "24", "-s", "top", shell],
                       env=env, check=True, timeout=30)

    def screen(self) -> str:
        done = subprocess.run([*self.base, "capture-pane", "-p", "-t", "top"], capture_output=True, text=True,
                              timeout=30)
        return done.stdout

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.base, "send-keys", "-t", "top", *keys], check=True, timeout=30)

    def shows(self, text: str, timeout: float = 30.0) -> str:
        wait_until(lambda: text in self.screen(), timeout, f"{text!r} on the terminal:\n{self.screen()}")
        return self.screen()

    def close(self) -> None:
        subprocess.run([*self.base, "kill-server"], capture_output=True, timeout=30)


def _quoted(part: str) -> str:
    return "'" + part.replace("'", "'\\''") + "'"


@pytest.fixture
def console(redis_server: RedisServer, tmp_path: Path) -> Iterator[tuple[str, str, dict[str, str]]]:
    redis_server.client().flushall()
    env = console_env(redis_server.url, tmp_path, EMQ_SWEEPER_INTERVAL_S="0")
    manage(env, "migrate", "-v0")
    code = ("from dashboard.roles import user_create\nfrom dashboard.orders.tokens import api_token_create\n"
            "user = user_create(username='ops', password='ops-password-0', role='operators')\n"
            "print(api_token_create(user=user, name='top', scope='act'))")
    token = manage(env, "shell", "-c", code).strip().splitlines()[-1]
    url, daphne = start_daphne(env, tmp_path, "console")
    try:
        yield url, token, env
    finally:
        stop_daphne(daphne)


def _audit(env: dict[str, str]) -> list[dict[str, str]]:
    code = ("import json\nfrom dashboard.actions.models import AuditEntry\n"
            "print(json.dumps([{'action': e.action, 'user': e.username, 'outcome': e.outcome}"
            " for e in AuditEntry.objects.order_by('pk')]))")
    return list(json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1]))


def test_top_lists_queues_opens_a_job_and_asks_before_a_destructive_key(
        console: tuple[str, str, dict[str, str]], redis_server: RedisServer, tmp_path: Path) -> None:
    url, token, env = console
    mq = EchoMQ.from_url(redis_server.url, actor="test")
    mq.enqueue("mail", '{"to": "a@example.com"}', job_id="welcome-1")
    mq.enqueue("billing", "x", job_id="invoice-9")
    mq.enqueue("mail", "later", job_id="[red]odd\u202eid")  # markup and a bidi override: shown as they are
    terminal = Terminal(tmp_path / "tmux.sock", [sys.executable, "-m", "queues", "top", "--console", url,
                                                 "--token", token, "--interval", "1"],
                        {**env, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color"})
    try:
        screen = terminal.shows("billing")
        assert "mail" in screen and "pending" in screen
        assert all(len(line) <= 80 for line in screen.splitlines())

        # Rows are sorted by name: billing, then mail. Down, Enter opens mail; Enter opens its one job.
        terminal.keys("Down", "Enter")
        terminal.shows("queue mail")
        screen = terminal.shows("welcome-1")
        assert "[red]odd\\u202eid" in screen and "\u202e" not in screen
        # Both mail jobs may carry the same enqueue millisecond, and then their order is the ids':
        # go down to welcome-1's row from wherever it sits among the job rows.
        rows = [line for line in screen.splitlines() if "[red]odd" in line or "welcome-1" in line]
        below = next(index for index, line in enumerate(rows) if "welcome-1" in line)
        terminal.keys(*(["Down"] * below), "Enter")
        screen = terminal.shows("job welcome-1 of mail")
        screen = terminal.shows("a@example.com")
        assert "\\x0a" not in screen  # the payload's line breaks are line breaks

        # D (a capital: it destroys) shows the console's own question; n leaves the job as it was.
        terminal.keys("D")
        screen = terminal.shows("y: yes, do it")
        assert "welcome-1" in screen and "mail" in screen
        terminal.keys("n")
        terminal.shows("delete: not done")
        assert mq.job("mail", "welcome-1").state == "pending"

        # d in lower case does nothing; D then y deletes it, through the console, in its audit log.
        terminal.keys("d")
        terminal.keys("D")
        terminal.shows("y: yes, do it")
        terminal.keys("y")
        wait_until(lambda: not mq.job("mail", "welcome-1").exists, 30, "the job to be deleted")
        audit = _audit(env)
        assert [(e["action"], e["user"], e["outcome"]) for e in audit if e["action"].startswith("delete")] == [
            (audit[-1]["action"], "ops", "moved")]
        assert mq.job("billing", "invoice-9").state == "pending"

        terminal.keys("q")
    finally:
        terminal.close()
