"""``./dev demo`` run as a person runs it, in its own process group (a terminal's job), output collected.

The demo is started with every signal at its default disposition whatever the test run inherited: under
``nohup ./dev test &`` SIGINT and SIGHUP are ignored (``setsid`` and CI runners ignore SIGINT), and an
ignored signal stays ignored across exec, so a Ctrl-C or a closed terminal would never reach the demo.
A terminal's shell resets them for its jobs; ``env --default-signal`` does the same here.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import redis

from tests.support.redis_servers import dies_with_this_process, free_port

ROOT = Path(__file__).resolve().parents[2]
DEV = str(ROOT / "dev")
STARTED = re.compile(r"Started a private redis-server for the demo at (redis://127\.0\.0\.1:(\d+)/0)")
DEFAULT_SIGNALS = ["env", "--default-signal"]


def demo_env(redis_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """A demo's environment: its own SQLite file and directory of private servers; no Redis named.

    DEV_SET_UP: the suite runs in the venv already, and a test must never reinstall a venv others share.
    """
    env = {k: v for k, v in os.environ.items() if k not in ("EMQ_REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    workdir = Path(tempfile.mkdtemp(prefix="emq-demo-"))
    return {**env, "DATABASE_URL": f"sqlite:///{workdir}/db.sqlite3", "EMQ_SWEEPER_INTERVAL_S": "0",
            "EMQ_ALERTS_INTERVAL_S": "0",
            "EMQ_DEMO_REDIS_DIR": str(redis_dir or workdir / "redis"), "DEV_SET_UP": "1", **extra}


def run_dev(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*DEFAULT_SIGNALS, DEV, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False


def alive(pid: int) -> bool:
    """Running (a zombie, dead but not yet reaped by its parent, is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


class RunningDemo:
    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        self.env = env or demo_env()
        self.process = subprocess.Popen([*dies_with_this_process(), *DEFAULT_SIGNALS, DEV, "demo", "--port", str(self.port),
                                         *args], cwd=ROOT,
                                        env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)

    @property
    def output(self) -> str:
        return "".join(self.lines)

    @property
    def redis_url(self) -> str:
        match = STARTED.search(self.output)
        return match.group(1) if match else ""

    @property
    def redis_pid(self) -> int:
        """The private redis-server's pid, from its directory in EMQ_DEMO_REDIS_DIR."""
        port = self.redis_url.rsplit(":", 1)[1].split("/")[0]
        return int((Path(self.env["EMQ_DEMO_REDIS_DIR"]) / port / "redis.pid").read_text())

    def wait_for(self, text: str, timeout: float = 240, count: int = 1) -> None:
        deadline = time.monotonic() + timeout
        while self.output.count(text) < count:
            if time.monotonic() > deadline or (self.process.poll() is not None and not self._reader.is_alive()):
                raise AssertionError(f"the demo did not print {text!r} {count} time(s):\n{self.output}")
            time.sleep(0.1)

    def wait_until_serving(self, timeout: float = 240) -> None:
        self.wait_for("EchoMQ console:", timeout)
        assert self.redis_url, self.output
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("the demo's console did not answer: " + self.output)

    def serving(self) -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/", timeout=2)
            return True
        except OSError:
            return False

    def signal(self, sig: int, group: bool = False) -> None:
        """A signal to the demo's process, or to its whole group as a terminal sends Ctrl-C or a hang-up."""
        if group:
            os.killpg(self.process.pid, sig)
        else:
            self.process.send_signal(sig)

    def stop(self) -> None:
        """Ctrl-C, as in a terminal: the whole process group gets SIGINT."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        self._reader.join(10)
