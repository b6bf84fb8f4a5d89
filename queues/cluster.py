"""What the console shows of a cluster: its nodes, and where each queue lives.

Read from ``CLUSTER NODES`` of the first node that answers, then every node
is pinged from here with a short timeout, so a page still renders, and says
what is down, while a master is dead and before its replica took over. On a
standalone Redis the one server owns every slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import redis
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

from .connection import AsyncClient, SyncClient, is_cluster_client
from .errors import Unavailable
from .keys import QueueKeys

if TYPE_CHECKING:
    from .client import EchoMQ

SLOTS: Final = 16384
PROBE_TIMEOUT_S: Final = 0.5


@dataclass(frozen=True, slots=True)
class Node:
    id: str
    address: str
    role: str  # master | replica
    master_id: str
    flags: tuple[str, ...]
    link: str  # connected | disconnected, as the node we asked sees it
    slots: tuple[tuple[int, int], ...]
    reachable: bool  # answered our PING

    @property
    def state(self) -> str:
        """ok, fail (the cluster agreed it is down), pfail (one node suspects it) or unreachable (from here)."""
        if "fail" in self.flags:
            return "fail"
        if "fail?" in self.flags:
            return "pfail"
        return "ok" if self.reachable else "unreachable"

    @property
    def slot_count(self) -> int:
        return sum(end - start + 1 for start, end in self.slots)

    def owns(self, slot: int) -> bool:
        return any(start <= slot <= end for start, end in self.slots)


@dataclass(frozen=True, slots=True)
class ClusterView:
    enabled: bool
    state: str  # ok | fail | unknown (no node answered)
    nodes: tuple[Node, ...]
    asked: str  # the node whose view this is
    error: str = ""

    def owner(self, slot: int) -> Node | None:
        return next((n for n in self.nodes if n.role == "master" and n.owns(slot)), None)


@dataclass(frozen=True, slots=True)
class QueuePlacement:
    queue: str
    slot: int
    node_id: str
    address: str
    available: bool
    reason: str  # why not available, in words; empty when available


def queue_slot(queue: str) -> int:
    """The slot of every key of ``queue``: the CRC16 of its hash tag, the queue name."""
    return key_slot(QueueKeys(queue).prefix.encode())


@dataclass(frozen=True, slots=True)
class QueueLocation:
    """Where a queue lives: its hash slot, and on a cluster the primary that owns it."""

    slot: int
    node: str


def queue_location(client: SyncClient | AsyncClient, queue: str) -> QueueLocation:
    """From the client's own slot map (no round trip), for the overview; :func:`queue_placements` asks the nodes."""
    node = ""
    if is_cluster_client(client):
        owner = client.get_node_from_key(QueueKeys(queue).prefix)  # type: ignore[union-attr]
        node = f"{owner.host}:{owner.port}" if owner is not None else "?"
    return QueueLocation(queue_slot(queue), node)


def _probe(host: str, port: int, timeout_s: float) -> redis.Redis:
    return redis.Redis(host=host, port=port, socket_timeout=timeout_s, socket_connect_timeout=timeout_s,
                       retry=Retry(NoBackoff(), 0))


def _ask(address: str, timeout_s: float, *command: str) -> Any:
    host, _, port = address.rpartition(":")
    with _probe(host, int(port), timeout_s) as client:
        return client.execute_command(*command)


def _pings(addresses: Sequence[str], timeout_s: float) -> list[bool]:
    def ping(address: str) -> bool:
        try:
            return bool(_ask(address, timeout_s, "PING"))
        except (redis.exceptions.RedisError, OSError):
            return False
    with ThreadPoolExecutor(max(len(addresses), 1)) as pool:
        return list(pool.map(ping, addresses))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def parse_cluster_nodes(text: str) -> list[dict[str, Any]]:
    """Lines of ``CLUSTER NODES``: id, ip:port@bus[,host], flags, master, ping, pong, epoch, link, slots..."""
    nodes = []
    for line in text.strip().splitlines():
        parts = line.split()
        if len(parts) < 8:
            continue
        slots = []
        for item in parts[8:]:
            if item.startswith("["):  # a slot being imported or migrated, still owned by its source
                continue
            start, _, end = item.partition("-")
            slots.append((int(start), int(end or start)))
        flags = tuple(parts[2].split(","))
        nodes.append({"id": parts[0], "address": parts[1].split("@")[0], "flags": flags,
                      "role": "master" if "master" in flags else "replica",
                      "master_id": "" if parts[3] == "-" else parts[3], "link": parts[7], "slots": tuple(slots)})
    return nodes


def _seeds(client: SyncClient) -> list[str]:
    if is_cluster_client(client):
        return [node.name for node in client.get_nodes()]  # type: ignore[union-attr]
    kwargs = client.connection_pool.connection_kwargs  # type: ignore[union-attr]
    return [f"{kwargs.get('host', '127.0.0.1')}:{kwargs.get('port', 6379)}"]


def cluster_view(client: SyncClient, *, timeout_s: float = PROBE_TIMEOUT_S) -> ClusterView:
    """The nodes with role and state; never raises for a node that is down."""
    seeds = _seeds(client)
    if not is_cluster_client(client):
        reachable = _pings(seeds, timeout_s)[0]
        node = Node("", seeds[0], "master", "", ("master",), "connected", ((0, SLOTS - 1),), reachable)
        return ClusterView(False, "ok" if reachable else "unknown", (node,), seeds[0],
                           "" if reachable else f"{seeds[0]} does not answer")
    errors = []
    for address in seeds:
        try:
            nodes_text = _text(_ask(address, timeout_s, "CLUSTER", "NODES"))
            info = _text(_ask(address, timeout_s, "CLUSTER", "INFO"))
        except (redis.exceptions.RedisError, OSError) as error:
            errors.append(f"{address}: {error}")
            continue
        parsed = parse_cluster_nodes(nodes_text)
        answered = _pings([n["address"] for n in parsed], timeout_s)
        nodes = tuple(sorted((Node(reachable=up, **n) for n, up in zip(parsed, answered)),
                             key=lambda n: (n.role != "master", n.address)))
        state = "ok" if "cluster_state:ok" in info else "fail"
        return ClusterView(True, state, nodes, address)
    return ClusterView(True, "unknown", (), "", "no node answered: " + "; ".join(errors))


def queue_placements(queues: Sequence[str], view: ClusterView) -> list[QueuePlacement]:
    """For each queue its slot and the master that owns it, and whether its moves can run now."""
    placements = []
    for queue in queues:
        slot = queue_slot(queue)
        owner = view.owner(slot)
        if owner is None:
            placements.append(QueuePlacement(queue, slot, "", "", False, f"no master owns slot {slot}"))
            continue
        reason = "" if owner.state == "ok" else f"its master {owner.address} is {owner.state}"
        if not reason and view.state != "ok":
            reason = "the cluster refuses commands (cluster_state:fail)"
        placements.append(QueuePlacement(queue, slot, owner.id, owner.address, not reason, reason))
    return placements


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """The cluster page: the nodes, where each registered queue lives, and what could not be read."""

    view: ClusterView
    placements: tuple[QueuePlacement, ...]
    queues_error: str  # the queue registry's node does not answer: no queue can be listed

    @property
    def unavailable(self) -> list[QueuePlacement]:
        return [p for p in self.placements if not p.available]


def cluster_report(mq: EchoMQ, *, timeout_s: float = PROBE_TIMEOUT_S) -> ClusterReport:
    """Never raises for a node that is down: what cannot be read is said in ``error`` / ``queues_error``."""
    view = cluster_view(mq.redis, timeout_s=timeout_s)
    try:
        known = mq.known_queues()
        names, queues_error = known.names, known.stale
    except Unavailable as error:
        names, queues_error = [], f"The queue list cannot be read: {error}"
    return ClusterReport(view, tuple(queue_placements(names, view)), queues_error)
