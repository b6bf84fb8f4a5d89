"""What the Redis behind the queues says about itself, and the CLI's warning about eviction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from queues import EchoMQ, Unavailable
from queues.health import NOEVICTION, script_names, scripts_load, server_health
from queues.scripts import script
from tests.support.eviction import evicting
from tests.support.redis_servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]


def emq(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "queues", "--url", url, *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_a_default_redis_does_not_evict(mq: EchoMQ) -> None:
    health = server_health(mq)

    assert health.policies == (NOEVICTION,)
    assert not health.may_evict and health.eviction_warning == ""
    assert health.used_memory_bytes > 0


def test_an_lru_policy_is_named_in_the_warning(mq: EchoMQ) -> None:
    with evicting(mq.redis):
        health = server_health(mq)

    assert health.policies == ("allkeys-lru",) and health.may_evict
    assert "allkeys-lru" in health.eviction_warning and "noeviction" in health.eviction_warning


def test_every_policy_of_a_cluster_is_read_from_its_primaries(any_mq: EchoMQ) -> None:
    assert server_health(any_mq).policies == (NOEVICTION,)


def test_every_script_loads_and_its_sha_is_ours(any_mq: EchoMQ) -> None:
    any_mq.redis.script_flush()

    assert scripts_load(any_mq) == []
    assert all(any_mq.redis.script_exists(script(name).sha) == [True] for name in ("claim", "stats"))


def test_the_scripts_sent_are_the_moves_and_reads_not_their_parts() -> None:
    names = script_names()

    assert {"claim", "complete", "stats", "page"} <= set(names)
    assert "common" not in names


def test_a_stopped_redis_is_unavailable_not_an_error() -> None:
    server = RedisServer().start()
    mq = EchoMQ.from_url(server.url)
    server.cleanup()
    try:
        with pytest.raises(Unavailable):
            server_health(mq)
        with pytest.raises(Unavailable):
            scripts_load(mq)
    finally:
        mq.close()


def test_the_cli_warns_once_when_redis_may_evict(mq: EchoMQ, redis_url: str) -> None:
    with evicting(mq.redis):
        done = emq(redis_url, "stats", "mail")

    assert done.returncode == 0
    assert done.stderr.count("warning: Redis maxmemory-policy is allkeys-lru") == 1
    assert done.stdout.startswith("mail: pending 0")


def test_the_cli_says_nothing_about_a_redis_that_does_not_evict(redis_url: str) -> None:
    done = emq(redis_url, "stats", "mail")

    assert done.returncode == 0 and done.stderr == ""
