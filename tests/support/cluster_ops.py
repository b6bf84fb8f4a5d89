"""Operations on a test cluster: who owns a slot, failover waits, and a MIGRATE-based slot move."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import redis

from queues.cluster import parse_cluster_nodes, queue_slot
from queues.errors import Unavailable
from tests.support.redis_servers import RedisClusterNodes, RedisServer
from tests.support.waiting import wait_until

T = TypeVar("T")


def eventually(call: Callable[[], T], timeout: float = 10.0) -> T:
    """``call()``, again while it raises Unavailable, as a worker or the console does after a failover."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except Unavailable:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)


def node_id(server: RedisServer) -> str:
    return str(server.client().execute_command("CLUSTER", "MYID").decode())


def role(server: RedisServer) -> str:
    return str(server.client(socket_timeout=1).execute_command("ROLE")[0].decode())


def _nodes(cluster: RedisClusterNodes) -> list[dict[str, object]]:
    for server in cluster.servers:
        if server.process:
            try:
                return parse_cluster_nodes(server.client(socket_timeout=1).execute_command("CLUSTER", "NODES").decode())
            except redis.exceptions.RedisError:
                continue
    raise AssertionError("no cluster node answers")


def _server_at(cluster: RedisClusterNodes, address: object) -> RedisServer:
    return next(s for s in cluster.servers if f"127.0.0.1:{s.port}" == address)


def owner_of(cluster: RedisClusterNodes, slot: int) -> RedisServer:
    for node in _nodes(cluster):
        if node["role"] == "master" and "fail" not in node["flags"]:  # type: ignore[operator]
            if any(a <= slot <= b for a, b in node["slots"]):  # type: ignore[attr-defined]
                return _server_at(cluster, node["address"])
    raise AssertionError(f"no live master owns slot {slot}")


def replica_of(cluster: RedisClusterNodes, master: RedisServer, timeout: float = 10.0) -> RedisServer:
    # The node asked may not have heard of the replica yet (gossip): wait for it.
    master_id = node_id(master)
    found: list[dict[str, object]] = []

    def known() -> bool:
        found[:] = [n for n in _nodes(cluster) if n["master_id"] == master_id]
        return bool(found)

    wait_until(known, timeout, f"a replica of {master.port} in the cluster's view")
    return _server_at(cluster, str(found[0]["address"]))


def masters(cluster: RedisClusterNodes) -> list[RedisServer]:
    return [_server_at(cluster, n["address"]) for n in _nodes(cluster)
            if n["role"] == "master" and n["slots"] and "fail" not in n["flags"]]  # type: ignore[operator]


def queue_per_master(cluster: RedisClusterNodes, prefix: str) -> dict[int, str]:
    """One queue name per master (by port), found by trying ``prefix-0``, ``prefix-1``, ..."""
    ports = {m.port for m in masters(cluster)}
    found: dict[int, str] = {}
    for i in range(1000):
        name = f"{prefix}-{i}"
        port = owner_of(cluster, queue_slot(name)).port
        found.setdefault(port, name)
        if set(found) == ports:
            return found
    raise AssertionError("could not spread queues over the masters")


def wait_replicas_in_sync(cluster: RedisClusterNodes, timeout: float = 20.0) -> None:
    def synced() -> bool:
        return all(s.client(socket_timeout=1).info("replication").get("master_link_status") == "up"
                   for s in cluster.servers if s.process and role(s) == "slave")
    wait_until(synced, timeout, "every replica's link to be up")


def wait_cluster_ok(cluster: RedisClusterNodes, timeout: float = 20.0) -> None:
    def ok() -> bool:
        return all(b"cluster_state:ok" in s.client(socket_timeout=1).execute_command("CLUSTER", "INFO")
                   for s in cluster.servers if s.process)
    wait_until(ok, timeout, "cluster_state:ok on every live node")


def move_slot(cluster: RedisClusterNodes, slot: int, target: RedisServer, *, batch: int = 10,
              pause_s: float = 0.0) -> int:
    """Moves ``slot`` to ``target`` as ``redis-cli --cluster reshard`` does; returns the keys moved.

    IMPORTING on the target, MIGRATING on the source, MIGRATE in batches
    (``pause_s`` between them keeps the slot half-moved while clients run),
    then SETSLOT NODE everywhere.
    """
    source = owner_of(cluster, slot)
    source_id, target_id = node_id(source), node_id(target)
    target.client().execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
    source.client().execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
    moved = 0
    while True:
        keys = source.client().execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch)
        if not keys:
            break
        source.client().execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys)
        moved += len(keys)
        time.sleep(pause_s)
    for server in [target, source, *(m for m in masters(cluster) if m not in (source, target))]:
        server.client().execute_command("CLUSTER", "SETSLOT", slot, "NODE", target_id)
    return moved
