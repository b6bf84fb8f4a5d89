"""What ``./dev demo`` prints: help that starts nothing, a taken port refused before anything starts, a
progress line while the first setup installs, and, once serving, the URL and logins last and again every
few minutes, with daphne's access log off unless asked for."""

from __future__ import annotations

import re
import socket
import stat
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo import RunningDemo, demo_env, run_dev


def test_demo_help_prints_the_options_and_starts_nothing(tmp_path: Path) -> None:
    redis_dir = tmp_path / "redis"
    for flag in ("--help", "-h"):
        done = run_dev("demo", flag, env=demo_env(redis_dir), timeout=60)

        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("usage: ./dev demo [--port PORT]")
        assert all(option in done.stdout for option in ("--redis-url", "--force", "--access-log", "--no-serve"))
        assert "Started a private redis-server" not in done.stdout and not redis_dir.exists()


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        yield listening.getsockname()[1]


def test_a_port_in_use_is_refused_before_anything_starts_naming_a_free_one(taken_port: int, tmp_path: Path) -> None:
    redis_dir = tmp_path / "redis"

    done = run_dev("demo", "--port", str(taken_port), env=demo_env(redis_dir), timeout=60)

    assert done.returncode == 1
    match = re.fullmatch(rf"error: port {taken_port} is in use: \./dev demo --port (\d+)\n", done.stderr)
    assert match, done.stderr
    suggested = int(match.group(1))
    assert suggested > taken_port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", suggested))
    assert done.stdout == "" and not redis_dir.exists()


FAKE_PYTHON = """#!/bin/sh
# python3 for ./dev setup: checks run in the real one; "-m venv DIR" makes a venv whose pip notes its calls.
if [ "$1" = -m ] && [ "$2" = venv ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "$*" >>"%s/pip.calls"\\n' "$3" >"$3/bin/pip"
  chmod +x "$3/bin/pip"
  exit 0
fi
exec {python} "$@"
"""


def test_the_first_setup_says_what_it_installs_step_by_step_and_a_later_one_says_nothing(tmp_path: Path) -> None:
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON.format(python=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    venv = tmp_path / "venv"
    env = {k: v for k, v in demo_env().items() if k != "DEV_SET_UP"}
    env.update(VENV=str(venv), PYTHON=str(python))

    first = run_dev("setup", env=env, timeout=60)

    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0].startswith(f"Setting up (first run, or pyproject.toml changed): installing into {venv}")
    assert lines[1:4] == ["  creating the venv ...", "  upgrading pip ...",
                          "  installing EchoMQ and its dependencies (pyproject.toml [test]) ..."]
    assert re.fullmatch(r"Set up in \d+ s\.", lines[4])
    assert (venv / "pip.calls").read_text().splitlines()[-1] == "install -q -e .[test]"

    later = run_dev("setup", env=env, timeout=60)

    assert later.returncode == 0 and later.stdout == ""


def get(url: str) -> None:
    urllib.request.urlopen(url, timeout=10).read()


def test_the_url_and_logins_come_last_once_serving_and_again_later_with_no_access_log() -> None:
    demo = RunningDemo("--banner-every", "1")
    try:
        demo.wait_until_serving()
        get(f"http://127.0.0.1:{demo.port}/login/?first")
        demo.wait_for("EchoMQ console:", count=3, timeout=60)
        get(f"http://127.0.0.1:{demo.port}/login/?second")
        demo.wait_for("EchoMQ console:", count=5, timeout=60)
    finally:
        demo.stop()

    output = demo.output
    # Whatever came before (the private Redis, requests made meanwhile), the terminal ends with the banner.
    assert output.splitlines()[-4:] == [
        f"EchoMQ console: http://127.0.0.1:{demo.port}/",
        "  log in as operator / operator-demo  (operators)",
        "  log in as viewer / viewer-demo  (viewers)",
        f"  Redis: {demo.redis_url}   (Ctrl-C stops the console, the demo workers and a private Redis)"]
    assert "GET /login/" not in output


def test_the_access_log_is_printed_when_asked_for() -> None:
    demo = RunningDemo("--access-log")
    try:
        demo.wait_until_serving()
        get(f"http://127.0.0.1:{demo.port}/login/?asked")
        demo.wait_for('"GET /login/?asked" 200', timeout=60)
    finally:
        demo.stop()


