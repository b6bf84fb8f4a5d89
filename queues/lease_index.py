"""The lease index (``emq:leases``): which queues may hold a lapsed lease, and from when.

A sorted set of queue names, each scored by a time (ms, server clock) before
which that queue holds no lapsed lease. It lets the sweeper read the queues
whose leases lapse instead of every queue:

* after a claim that claimed jobs, the claimer lowers its queue's score to the
  lease deadline (``ZADD emq:leases LT deadline Q``, :func:`hint_command`);
  extend, complete, fail and release write nothing: they only move a queue's
  first deadline later, so its score stays early, which costs at most one
  look too many;
* the sweeper takes the queues whose score has passed (:func:`take_due`, which
  marks them), runs ``recover_expired`` on each, and settles each score to the
  queue's next deadline or removes it (:func:`settle`); a score a claimer
  lowered meanwhile is never raised.

The index lives outside every queue's slot, so no script writes both it and a
queue: a claimer that stops between its claim and its ZADD, or a runtime that
never writes the index, leaves a queue out. The queue's own scripts stay the
truth; discovery's SCAN (:mod:`queues.discovery`) puts every queue that has an
active set back in the index, as a slow safety net.

On a Redis Cluster the index is cut in shards, one per slot range a master
owns (:func:`shards_of`), each kept in its range's first slot
(:func:`queues.keys.lease_index_shard`), so it lives on the master of the
queues it lists: while one master is away, the queues of the others are still
swept. A standalone Redis has one shard, ``emq:leases``.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Final

from redis.crc import key_slot

from .connection import is_cluster_client
from .keys import HASH_SLOTS, LEASE_INDEX, SWEEPER_LOCK, QueueKeys, lease_index_shard, sweeper_lock_shard
from .moves import Call, _int, _text, refused_whole

# A queue taken by a sweeper that stops before it settles is looked at again this much later.
LOOK_AGAIN_MS: Final = 60_000


@dataclass(frozen=True, slots=True)
class DueQueues:
    """Queues whose lapsed leases are due, marked ``mark`` until settled; ``now_ms`` by the index's clock."""

    now_ms: int
    mark: int
    names: list[str]


@dataclass(frozen=True, slots=True)
class Shard:
    """One part of the lease index: the queues whose slots lie in ``first_slot..last_slot``, and its sweeper lock."""

    first_slot: int
    last_slot: int
    index_key: str
    lock_key: str


STANDALONE: Final = Shard(0, HASH_SLOTS - 1, LEASE_INDEX, SWEEPER_LOCK)


class _ClusterShards:
    """The shards of one slot map: the maximal runs of slots that one master owns."""

    def __init__(self, slots_cache: dict[int, list[Any]]) -> None:
        self.slots_cache = slots_cache  # held so its id is not reused while this stands for it
        shards: list[Shard] = []
        owner: object = object()
        for slot in range(HASH_SLOTS):
            nodes = slots_cache.get(slot)
            name = nodes[0].name if nodes else None
            if not shards or name != owner or name is None:
                if shards:
                    shards[-1] = Shard(shards[-1].first_slot, slot - 1, shards[-1].index_key, shards[-1].lock_key)
                shards.append(Shard(slot, slot, lease_index_shard(slot), sweeper_lock_shard(slot)))
                owner = name
        shards[-1] = Shard(shards[-1].first_slot, HASH_SLOTS - 1, shards[-1].index_key, shards[-1].lock_key)
        self.shards = shards
        self.starts = [shard.first_slot for shard in shards]

    def of_slot(self, slot: int) -> Shard:
        return self.shards[bisect.bisect_right(self.starts, slot) - 1]


_maps: dict[int, _ClusterShards] = {}


def _cluster_shards(client: Any) -> _ClusterShards:
    cache = client.nodes_manager.slots_cache
    found = _maps.get(id(cache))
    if found is None or found.slots_cache is not cache:
        if len(_maps) > 16:
            _maps.clear()
        found = _maps[id(cache)] = _ClusterShards(cache)
    return found


def shards_of(client: Any) -> list[Shard]:
    """The lease index's shards as ``client`` sees the cluster (one per master's slot range); one on a standalone Redis."""
    if not is_cluster_client(client):
        return [STANDALONE]
    return list(_cluster_shards(client).shards)


def shard_of(client: Any, queue: str) -> Shard:
    """The shard that lists ``queue``: on a cluster, the one of the slot range its master owns, by ``client``'s map."""
    if not is_cluster_client(client):
        return STANDALONE
    return _cluster_shards(client).of_slot(key_slot(QueueKeys(queue).prefix.encode()))


def hint_command(queue: str, lease_deadline_ms: int, index_key: str = LEASE_INDEX) -> tuple[Any, ...]:
    """What a claimer sends after a claim that claimed jobs: the queue's score goes down to the deadline."""
    return ("ZADD", index_key, "LT", int(lease_deadline_ms), queue)


def take_due(*, limit: int = 100, look_again_ms: int = LOOK_AGAIN_MS, index_key: str = LEASE_INDEX) -> Call[DueQueues]:
    args = [_int(limit, "limit", 1, 1000), _int(look_again_ms, "look_again_ms", 1, 10 ** 12)]

    def parse(reply: list[Any]) -> DueQueues:
        refused_whole("lease_index_take", reply)
        return DueQueues(int(reply[0]), int(reply[1]), [_text(name) for name in reply[2:]])

    return Call("lease_index_take", [index_key], args, parse)


def settle(mark: int, next_deadlines: dict[str, int], index_key: str = LEASE_INDEX) -> Call[tuple[int, int, int]]:
    """``next_deadlines``: queue -> its earliest lease deadline still ahead (ms), 0 when it holds none."""
    args: list[Any] = [_int(mark, "mark", 1)]
    for name, next_ms in next_deadlines.items():
        args += [name, _int(next_ms, "next_ms", 0)]

    def parse(reply: list[Any]) -> tuple[int, int, int]:
        refused_whole("lease_index_settle", reply)
        return int(reply[1]), int(reply[2]), int(reply[3])

    return Call("lease_index_settle", [index_key], args, parse)
