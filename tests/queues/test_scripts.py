"""How scripts reach Redis: EVALSHA first, NOSCRIPT fallback, one slot, no half-writes."""

from __future__ import annotations

import re

import pytest
import redis

from queues import EchoMQ, InvalidInput, QueueKeys
from queues.moves import Call
from queues.scripts import MOVES, script
from tests.support.waiting import wait_until


def test_every_key_of_a_queue_is_in_one_cluster_slot(any_mq: EchoMQ) -> None:
    keys = QueueKeys("orders")
    names = [keys.pending, keys.active, keys.done, keys.failed, keys.events, keys.job("x"), keys.prefix]

    slots = {any_mq.redis.execute_command("CLUSTER KEYSLOT", name) for name in names} if hasattr(
        any_mq.redis, "get_primaries") else {any_mq.keyslot("orders")}

    assert slots == {any_mq.keyslot("orders")}


def test_every_move_still_works_after_script_flush(mq: EchoMQ) -> None:
    mq.enqueue("q", "x", job_id="a")
    mq.redis.script_flush()

    [job] = mq.claim("q")
    mq.redis.script_flush()
    mq.complete("q", "a", job.token)

    assert mq.job("q", "a").state == "done"
    assert mq.redis.script_exists(script("complete").sha) == [True]


def test_a_pipeline_recovers_from_noscript_too(mq: EchoMQ) -> None:
    mq.redis.script_flush()

    ids = mq.enqueue_many("q", ["a", "b", "c"])

    assert mq.stats("q").counts["pending"] == 3 and len(ids) == 3


def test_the_cluster_client_reloads_scripts_flushed_on_every_node(redis_cluster, any_mq: EchoMQ) -> None:  # type: ignore[no-untyped-def]
    for server in redis_cluster.servers:
        server.client().script_flush()
    any_mq.enqueue("q", "x", job_id="a")
    [job] = any_mq.claim("q")
    any_mq.complete("q", "a", job.token)
    assert any_mq.job("q", "a").state == "done"


@pytest.mark.parametrize("name", [m for m in MOVES if m not in ("claim",)])
def test_a_script_given_bad_arguments_errors_before_writing_anything(mq: EchoMQ, name: str) -> None:
    mq.enqueue("q", "x", job_id="a")
    before = _snapshot(mq)
    keys = QueueKeys("q").script_keys("a" if name not in ("recover_expired", "retry_failed", "purge") else None)

    try:
        reply = mq.run(Call(name, keys, ["a", "bogus", "bogus", "bogus", "bogus", "bogus", "bogus"], lambda r: r))
    except InvalidInput:
        reply = None
    # Either an error naming the bad argument, or a refusal (no state is
    # called "bogus"): never a write.
    assert reply is None or reply[:2] == [b"REFUSED", b"state"]
    assert _snapshot(mq) == before


def test_a_script_given_keys_of_another_queue_errors_before_writing_anything(mq: EchoMQ) -> None:
    before = _snapshot(mq)
    keys = QueueKeys("q").script_keys("a")
    keys[5] = QueueKeys("other").job("a")

    with pytest.raises(InvalidInput, match="KEYS"):
        mq.run(Call("enqueue", keys, ["a", "x", 0, 3, "t"], lambda r: r))

    assert _snapshot(mq) == before


def _snapshot(mq: EchoMQ) -> dict[bytes, object]:
    client: redis.Redis = mq.redis  # type: ignore[assignment]
    out: dict[bytes, object] = {}
    for key in client.scan_iter():
        kind = client.type(key)
        if kind == b"hash":
            out[key] = client.hgetall(key)
        elif kind == b"zset":
            out[key] = client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            out[key] = client.xlen(key)
        else:
            out[key] = kind
    return out


def test_each_script_declares_its_flags_on_its_first_line() -> None:
    from queues.scripts import READS

    first = {name: script(name).source.split("\n", 1)[0] for name in (*MOVES, *READS)}

    assert {name for name, line in first.items() if line == "#!lua flags=no-writes"} == set(READS)
    assert first["extend"] == first["note_refusal"] == "#!lua flags=allow-oom"
    assert {name for name, line in first.items() if line == "#!lua"} == set(MOVES) - {"extend", "note_refusal"}


def test_includes_are_expanded_in_place_and_leave_no_directive() -> None:
    source = script("complete").source

    assert not re.search(r"^--@include", source, re.MULTILINE) and source.count("#!lua") == 1
    assert "local function check_lease" in source and "local id, claim_id = ARGV[1]" in source


def test_reads_run_on_a_read_only_replica_and_moves_are_refused_there(redis_server) -> None:  # type: ignore[no-untyped-def]
    from tests.support.redis_servers import RedisServer

    primary = RedisServer(extra_args=["--repl-diskless-sync-delay", "0"]).start()
    replica = RedisServer(extra_args=["--replicaof", "127.0.0.1", str(primary.port)]).start()
    try:
        writer = EchoMQ.from_url(primary.url, actor="test")
        writer.enqueue("q", "x", job_id="a")
        reader = EchoMQ.from_url(replica.url, actor="test")
        wait_until(lambda: reader.redis.exists(QueueKeys("q").job("a")), 60, "the replica to catch up")

        assert reader.stats("q").counts["pending"] == 1 and reader.job("q", "a").state == "pending"
        assert [r.id for r in reader.page("q", "pending").rows] == ["a"]
        with pytest.raises(Exception, match="READONLY|safe to send again"):
            reader.claim("q")
        assert writer.job("q", "a").state == "pending"
        writer.close()
        reader.close()
    finally:
        replica.cleanup()
        primary.cleanup()
