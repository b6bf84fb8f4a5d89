"""The check at the end of ``./dev test`` lists a redis-server or daphne the run started and left running,
stops it and fails; a process of anyone else (another checkout's suite, a demo) is neither listed nor touched."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.demo import ROOT
from tests.support.leftovers import MARK_VARIABLE
from tests.support.redis_servers import REDIS_SERVER, RedisServer, free_port
from tests.support.waiting import wait_until


def check(run_dir: Path, mark: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.support.leftovers", str(run_dir), mark], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def someone_elses_redis() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.cleanup()


def test_a_redis_server_and_a_daphne_the_run_left_running_are_listed_stopped_and_fail_the_run(
        tmp_path: Path, someone_elses_redis: RedisServer) -> None:
    run_dir, mark = tmp_path / "run", "left-running"
    server = RedisServer()
    server.workdir = run_dir / "redis"
    server.workdir.mkdir(parents=True)
    server.start()
    assert server.process is not None
    daphne = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(free_port()),
                               "dashboard.asgi:application"], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env={**os.environ, MARK_VARIABLE: mark,
                                                              "DJANGO_SETTINGS_MODULE": "tests.settings"})
    try:
        done = check(run_dir, mark)

        assert done.returncode == 1
        assert "the test run left 2 process(es) running" in done.stderr
        assert f"pid {server.process.pid}: {REDIS_SERVER} 127.0.0.1:{server.port}" in done.stderr
        assert f"pid {daphne.pid}: {sys.executable} -m daphne" in done.stderr
        wait_until(lambda: server.process is not None and server.process.poll() is not None and daphne.poll() is not None,
                   10, "both to be stopped")
        assert someone_elses_redis.client().ping()
        assert str(someone_elses_redis.port) not in done.stderr
    finally:
        daphne.kill()
        daphne.wait()
        server.cleanup()


def test_a_run_that_left_nothing_running_passes_the_check(tmp_path: Path, someone_elses_redis: RedisServer) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    done = check(run_dir, "nothing-left")

    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert someone_elses_redis.client().ping()
