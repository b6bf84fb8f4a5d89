"""``./dev demo`` never touches a Redis it did not start unless told: by default each run starts a private
redis-server on a free port and says where; a Redis named by --redis-url or EMQ_REDIS_URL that already holds
keys is refused, in words that say why and how to override, and is left byte-identical."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.keyspace import keyspace_dump
from tests.support.redis_servers import RedisServer, free_port

ROOT = Path(__file__).resolve().parents[1]
STARTED = re.compile(r"Started a private redis-server for the demo at (redis://127\.0\.0\.1:(\d+)/0)")


def demo_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("EMQ_REDIS_URL", "DJANGO_SETTINGS_MODULE")}
    workdir = tempfile.mkdtemp(prefix="emq-demo-")
    return {**env, "DATABASE_URL": f"sqlite:///{workdir}/db.sqlite3", "EMQ_SWEEPER_INTERVAL_S": "0", **extra}


def run_demo(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "dev"), "demo", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)


@pytest.fixture
def someones_redis() -> Iterator[RedisServer]:
    """A Redis that holds somebody else's key."""
    server = RedisServer().start()
    server.client().set("billing:invoice:42", "do not touch")
    yield server
    server.cleanup()


def test_a_redis_named_with_redis_url_that_holds_keys_is_refused_and_left_as_it_was(someones_redis: RedisServer) -> None:
    client: redis.Redis = someones_redis.client()
    before = keyspace_dump(client)

    done = run_demo("--redis-url", someones_redis.url, "--port", str(free_port()), env=demo_env())

    assert done.returncode != 0
    assert f"refused: the Redis at {someones_redis.url} already holds 1 keys" in done.stderr
    assert "--force" in done.stderr and "private redis-server" in done.stderr
    assert keyspace_dump(client) == before


def test_a_redis_named_by_emq_redis_url_is_used_and_refused_the_same_way(someones_redis: RedisServer) -> None:
    client: redis.Redis = someones_redis.client()
    before = keyspace_dump(client)

    done = run_demo("--port", str(free_port()), env=demo_env(EMQ_REDIS_URL=someones_redis.url))

    assert done.returncode != 0
    assert f"Using the Redis you named: {someones_redis.url}" in done.stdout
    assert "already holds 1 keys" in done.stderr
    assert "Started a private redis-server" not in done.stdout
    assert keyspace_dump(client) == before


class RunningDemo:
    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen([str(ROOT / "dev"), "demo", "--port", str(self.port)], cwd=ROOT,
                                        env=demo_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        start_new_session=True)
        self.output: list[str] = []
        self.redis_url = ""

    def wait_until_serving(self, timeout: float = 240) -> None:
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if match := STARTED.search(line):
                self.redis_url = match.group(1)
            if "EchoMQ console:" in line:
                break
        assert self.redis_url, "".join(self.output)
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/login/", timeout=2)
                return
            except OSError:
                time.sleep(0.2)
        raise AssertionError("the demo's console did not answer: " + "".join(self.output))

    def stop(self) -> None:
        """Ctrl-C, as in a terminal: the whole process group gets SIGINT."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False


def test_the_demo_started_twice_runs_twice_each_on_a_private_redis_it_stops_when_it_ends() -> None:
    first, second = RunningDemo(), RunningDemo()
    try:
        first.wait_until_serving()
        second.wait_until_serving()

        ports = {first.redis_url.rsplit(":", 1)[1], second.redis_url.rsplit(":", 1)[1]}
        assert len(ports) == 2 and "6379/0" not in ports
        assert answers(first.redis_url) and answers(second.redis_url)
        assert redis.Redis.from_url(first.redis_url).exists("emq:queues")
    finally:
        first.stop()
        second.stop()

    deadline = time.monotonic() + 30
    while (answers(first.redis_url) or answers(second.redis_url)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not answers(first.redis_url) and not answers(second.redis_url)
