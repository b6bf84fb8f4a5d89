"""Discovery: queues written by runtimes that do not register them appear by themselves.

A runtime should ``SADD emq:queues Q`` when it first enqueues into Q, and
``ZADD emq:leases LT deadline Q`` after a claim; one that does neither still
shows: :class:`QueueDiscovery` walks the keyspace of every primary with
``SCAN`` (``MATCH emq:{*}:*``, sorted sets only, ``COUNT`` keys a step, never
``KEYS``), one bounded step per call, and

* registers every queue it meets (``SADD``; a name already there costs nothing);
* adds every queue with an active set to the lease index at score 0 (``ZADD NX``),
  unless it is there already, so the sweeper looks at it once. This is also the
  safety net for a claimer that stopped between its claim and its hint.

The caller decides the rate (the sweeper: so many steps a second). A walk of
K keys takes K / COUNT steps; it starts over when every primary was walked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from .client import EchoMQ, _primaries
from .errors import Unavailable
from .keys import ANY_QUEUE_KEY_PATTERN, QUEUE_REGISTRY, QueueKeys, queue_of_key
from .lease_index import shard_of
from .moves import _int, _text
from .redis_errors import UNREACHABLE

DEFAULT_SCAN_COUNT: Final = 1000


@dataclass(frozen=True, slots=True)
class DiscoveryStep:
    queues: int  # queues whose keys this step met
    registered: int  # of them, how many the registry did not hold
    indexed: int  # queues with an active set that the lease index did not hold
    walked: bool  # this step finished a walk of every primary


class QueueDiscovery:
    """One SCAN step per :meth:`step`, resuming where the last one stopped (node by node on a cluster)."""

    def __init__(self, mq: EchoMQ, *, count: int = DEFAULT_SCAN_COUNT) -> None:
        self.mq = mq
        self.count = _int(count, "count", 1, 100_000)
        self.walks = 0
        self._node = 0
        self._cursor = 0

    def _index(self, active: set[str]) -> int:
        """Puts these queues in the lease index (at score 0, a score already there stands), each in its shard."""
        by_shard: dict[str, list[str]] = {}
        for name in sorted(active):
            by_shard.setdefault(shard_of(self.mq.redis, name).index_key, []).append(name)
        return sum(int(self.mq.redis.zadd(key, dict.fromkeys(names, 0), nx=True) or 0) for key, names in by_shard.items())

    def step(self) -> DiscoveryStep:
        try:
            nodes = _primaries(self.mq.redis)
            if self._node >= len(nodes):
                self._node, self._cursor = 0, 0
            cursor, keys = nodes[self._node].scan(self._cursor, match=ANY_QUEUE_KEY_PATTERN, count=self.count,
                                                  _type="zset")
            names: set[str] = set()
            active: set[str] = set()
            for key in keys:
                text = _text(key)
                name = queue_of_key(text)
                if name:
                    names.add(name)
                    if text == QueueKeys(name).active:
                        active.add(name)
            registered = int(self.mq.redis.sadd(QUEUE_REGISTRY, *sorted(names))) if names else 0
            indexed = self._index(active)
        except UNREACHABLE as error:
            raise Unavailable(f"queue discovery could not scan: {error}") from error
        self._cursor = int(cursor)
        walked = False
        if self._cursor == 0:
            self._node += 1
            if self._node >= len(nodes):
                self._node, walked = 0, True
                self.walks += 1
        return DiscoveryStep(len(names), registered, indexed, walked)
