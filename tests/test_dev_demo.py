"""``./dev demo`` never touches a Redis it did not start unless told: by default each run starts a private
redis-server on a free port and says where; a Redis named by --redis-url or EMQ_REDIS_URL that already holds
keys is refused, in words that say why and how to override, and is left byte-identical."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.demo import ROOT, RunningDemo, answers, demo_env, run_dev
from tests.support.keyspace import keyspace_dump
from tests.support.leftovers import MARK_VARIABLE, leftovers
from tests.support.redis_servers import RedisServer, free_port


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

    done = run_dev("demo", "--redis-url", someones_redis.url, "--port", str(free_port()), env=demo_env())

    assert done.returncode != 0
    assert f"refused: the Redis at {someones_redis.url} already holds 1 keys" in done.stderr
    assert "--force" in done.stderr and "private redis-server" in done.stderr
    assert keyspace_dump(client) == before


def test_a_redis_named_by_emq_redis_url_is_used_and_refused_the_same_way(someones_redis: RedisServer) -> None:
    client: redis.Redis = someones_redis.client()
    before = keyspace_dump(client)

    done = run_dev("demo", "--port", str(free_port()), env=demo_env(EMQ_REDIS_URL=someones_redis.url))

    assert done.returncode != 0
    assert f"Using the Redis you named: {someones_redis.url}" in done.stdout
    assert "already holds 1 keys" in done.stderr
    assert "Started a private redis-server" not in done.stdout
    assert keyspace_dump(client) == before


def test_the_demo_started_twice_runs_twice_each_on_a_private_redis_it_stops_when_it_ends() -> None:
    # One directory of private servers for both, as two demos from one checkout: neither takes the
    # other's server for a leftover.
    redis_dir = Path(tempfile.mkdtemp(prefix="emq-demo-redis-"))
    first, second = RunningDemo(env=demo_env(redis_dir)), RunningDemo(env=demo_env(redis_dir))
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
    assert "leftover" not in first.output + second.output


def test_the_demo_test_passes_when_the_suite_is_run_with_sigint_ignored(tmp_path: Path) -> None:
    """As under ``nohup ./dev test &``, ``setsid`` or a CI runner: SIGINT ignored, inherited by every child."""
    test = f"{Path(__file__).relative_to(ROOT)}::" \
           f"{test_the_demo_started_twice_runs_twice_each_on_a_private_redis_it_stops_when_it_ends.__name__}"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    mark = f"sigint-ignored-{time.monotonic_ns()}"
    env = {**demo_env(), "TMPDIR": str(run_dir), MARK_VARIABLE: mark}

    # env sets SIGINT (and SIGHUP) to SIG_IGN and execs pytest, as a background job of nohup gets them.
    done = subprocess.run(["env", "--ignore-signal=INT,HUP", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", test], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert leftovers(run_dir, mark) == []
