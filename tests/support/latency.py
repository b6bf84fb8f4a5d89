"""Recording synthetic durations through the moves' own Lua, and judging percentiles by rank."""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from queues import EchoMQ, QueueKeys
from queues.moves import Call

RECORD_BATCH = 5000


def record_latencies(mq: EchoMQ, queue: str, ts_ms: int, kind: str, durations_ms: Sequence[int]) -> None:
    """Counts ``durations_ms`` as waits (``kind='W'``) or runs ('R') at server time ``ts_ms`` through
    ``record_latency``, the function claim, complete and fail call."""
    keys = QueueKeys(queue).script_keys(None)
    for start in range(0, len(durations_ms), RECORD_BATCH):
        batch = list(durations_ms[start:start + RECORD_BATCH])
        counted = mq.run(Call("tests.support:record_latencies", keys, [ts_ms, kind, *batch], int))
        assert counted == len(batch)


def rank_error(sorted_values: Sequence[int], estimate: int, fraction: float) -> float:
    """How far (as a share of all values) the estimate's rank lies from the rank ``fraction`` asks for;
    with ties, any rank the estimate's value holds counts."""
    n = len(sorted_values)
    low, high = bisect.bisect_left(sorted_values, estimate), bisect.bisect_right(sorted_values, estimate)
    target = fraction * n
    if low <= target <= high:
        return 0.0
    return min(abs(low - target), abs(high - target)) / n
