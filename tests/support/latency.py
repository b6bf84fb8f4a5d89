"""Recording synthetic durations through the moves' own Lua, and judging percentiles by rank."""

from __future__ import annotations

import bisect
import time
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


def record_enqueues(mq: EchoMQ, queue: str, ts_ms: int, count: int) -> None:
    """Counts ``count`` enqueues at server time ``ts_ms`` into the minute and hour, as enqueue does."""
    counted = mq.run(Call("tests.support:record_latencies", QueueKeys(queue).script_keys(None), [ts_ms, "e", count],
                          int))
    assert counted == count


def early_in_a_minute(mq: EchoMQ, queue: str) -> int:
    """The server's time, at least 10 s before its minute ends (waiting for the next one if need be), so
    that what a test records for the minutes before now is still before now when it reads them."""
    now = mq.server_time_ms(queue)
    if now % 60_000 > 50_000:
        time.sleep((60_000 - now % 60_000) / 1000 + 0.1)
        now = mq.server_time_ms(queue)
    return now


def rank_error(sorted_values: Sequence[int], estimate: int, fraction: float) -> float:
    """How far (as a share of all values) the estimate's rank lies from the rank ``fraction`` asks for;
    with ties, any rank the estimate's value holds counts."""
    n = len(sorted_values)
    low, high = bisect.bisect_left(sorted_values, estimate), bisect.bisect_right(sorted_values, estimate)
    target = fraction * n
    if low <= target <= high:
        return 0.0
    return min(abs(low - target), abs(high - target)) / n
