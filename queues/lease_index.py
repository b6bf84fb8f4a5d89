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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from .keys import LEASE_INDEX
from .moves import Call, _int, _text, refused_whole

# A queue taken by a sweeper that stops before it settles is looked at again this much later.
LOOK_AGAIN_MS: Final = 60_000


@dataclass(frozen=True, slots=True)
class DueQueues:
    """Queues whose lapsed leases are due, marked ``mark`` until settled; ``now_ms`` by the index's clock."""

    now_ms: int
    mark: int
    names: list[str]


def hint_command(queue: str, lease_deadline_ms: int) -> tuple[Any, ...]:
    """What a claimer sends after a claim that claimed jobs: the queue's score goes down to the deadline."""
    return ("ZADD", LEASE_INDEX, "LT", int(lease_deadline_ms), queue)


def take_due(*, limit: int = 100, look_again_ms: int = LOOK_AGAIN_MS) -> Call[DueQueues]:
    args = [_int(limit, "limit", 1, 1000), _int(look_again_ms, "look_again_ms", 1, 10 ** 12)]

    def parse(reply: list[Any]) -> DueQueues:
        refused_whole("lease_index_take", reply)
        return DueQueues(int(reply[0]), int(reply[1]), [_text(name) for name in reply[2:]])

    return Call("lease_index_take", [LEASE_INDEX], args, parse)


def settle(mark: int, next_deadlines: dict[str, int]) -> Call[tuple[int, int, int]]:
    """``next_deadlines``: queue -> its earliest lease deadline still ahead (ms), 0 when it holds none."""
    args: list[Any] = [_int(mark, "mark", 1)]
    for name, next_ms in next_deadlines.items():
        args += [name, _int(next_ms, "next_ms", 0)]

    def parse(reply: list[Any]) -> tuple[int, int, int]:
        refused_whole("lease_index_settle", reply)
        return int(reply[1]), int(reply[2]), int(reply[3])

    return Call("lease_index_settle", [LEASE_INDEX], args, parse)
