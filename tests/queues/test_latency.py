"""Wait and run histograms kept by the moves: buckets, percentiles by rank, merging, not measured."""

from __future__ import annotations

import random

import pytest

from queues import EchoMQ, QueueKeys, moves, reads
from queues.latency import Histogram, bucket_bounds, bucket_of, histogram, summarize, summary_read
from tests.support.jobs import done_jobs
from tests.support.latency import early_in_a_minute, rank_error, record_enqueues, record_latencies

MINUTE, HOUR = 60_000, 3_600_000


def _long_tailed(n: int, seed: int) -> list[int]:
    """Mostly fast jobs, a log-normal middle and a Pareto tail out past a day."""
    rng = random.Random(seed)
    values = []
    for _ in range(n):
        pick = rng.random()
        if pick < 0.5:
            values.append(round(rng.expovariate(1 / 40)))
        elif pick < 0.97:
            values.append(round(rng.lognormvariate(9.0, 1.3)))
        else:
            values.append(round(60_000 * rng.paretovariate(1.1)))
    return values


def test_every_duration_lies_in_the_bounds_of_its_bucket_and_buckets_are_at_most_6_percent_wide() -> None:
    samples = [*range(0, 5000), *(2**e + d for e in range(12, 40) for d in (-1, 0, 1)), 86_400_000]
    for ms in samples:
        low, high = bucket_bounds(bucket_of(ms))
        assert low <= ms < high
        assert high - low == 1 or (high - low) / low <= 1 / 16
    assert bucket_of(86_400_000) == 372


def test_the_lua_puts_each_duration_in_the_bucket_the_protocol_states(mq: EchoMQ) -> None:
    rng = random.Random(7)
    samples = sorted({*range(0, 300), *(rng.randrange(1, 2**38) for _ in range(2000)),
                      *(2**e + d for e in range(5, 38) for d in (-1, 0, 1))})
    now = mq.server_time_ms("lat")
    record_latencies(mq, "lat", now, "W", samples)

    point = mq.run(histogram("lat", resolution="m", first=now // MINUTE)).points[0]
    assert point.wait.counts == Histogram.of(samples).counts


def test_a_claim_counts_its_wait_and_a_completion_its_run_in_the_buckets_of_the_jobs_own_times(mq: EchoMQ) -> None:
    mq.enqueue("lat", "x", job_id="a")
    due = mq.server_time_ms("lat") - 90_000
    mq.redis.zadd(QueueKeys("lat").pending, {"a": due})  # due a minute and a half ago
    [job] = mq.claim("lat", lease_ms=60_000)
    mq.run(moves.complete("lat", job.id, job.token))

    history = mq.run(reads.history("lat", "a"))
    claimed = next(e.ts_ms for e in history if e.move == "claim")
    finished = next(e.ts_ms for e in history if e.move == "complete")
    start = claimed // MINUTE
    whole = mq.run(histogram("lat", resolution="m", first=start, points=2)).whole()
    assert whole.wait.counts == {bucket_of(claimed - due): 1}
    assert whole.run.counts == {bucket_of(finished - claimed): 1}


def test_percentiles_of_100000_long_tailed_jobs_are_within_1_percent_of_rank_of_the_exact_ones(mq: EchoMQ) -> None:
    waits, runs = _long_tailed(100_000, seed=1), _long_tailed(100_000, seed=2)
    now = mq.server_time_ms("lat")
    record_latencies(mq, "lat", now, "W", waits)
    record_latencies(mq, "lat", now, "R", runs)

    point = mq.run(histogram("lat", resolution="m", first=now // MINUTE)).points[0]
    assert point.wait.total == point.run.total == 100_000
    for values, found in ((sorted(waits), point.wait), (sorted(runs), point.run)):
        for fraction in (0.5, 0.95, 0.99):
            estimate = found.percentile(fraction)
            assert estimate is not None
            assert rank_error(values, estimate, fraction) <= 0.01, (fraction, estimate)


def test_an_hour_and_a_day_read_equal_the_merge_of_their_minutes_and_each_hour_equals_its_minutes(mq: EchoMQ) -> None:
    rng = random.Random(3)
    now = mq.server_time_ms("lat")
    hour = now // HOUR - 3
    # Minutes spread over four hours (the last one this one), 40 waits and 20 runs each.
    minutes = sorted({hour * 60 + rng.randrange(0, 4 * 60) for _ in range(27)})
    for minute in minutes:
        record_latencies(mq, "lat", minute * MINUTE + rng.randrange(MINUTE), "W", _long_tailed(40, seed=minute))
        record_latencies(mq, "lat", minute * MINUTE + 5, "R", _long_tailed(20, seed=-minute))

    by_minute = mq.run(histogram("lat", resolution="m", first=hour * 60, points=240)).points
    merged = by_minute[0].merge(*by_minute[1:])
    day = mq.run(histogram("lat", resolution="m", first=hour * 60, per=240)).points[0]
    hours = mq.run(histogram("lat", resolution="h", first=hour, points=4)).points
    whole_hours = mq.run(histogram("lat", resolution="h", first=hour, per=4)).points[0]

    assert day.wait == merged.wait and day.run == merged.run and merged.wait.total == len(minutes) * 40
    assert whole_hours.wait == merged.wait and whole_hours.run == merged.run
    for n, one_hour in enumerate(hours):
        its_minutes = by_minute[n * 60:(n + 1) * 60]
        assert one_hour.wait == its_minutes[0].merge(*its_minutes[1:]).wait
        assert one_hour.run == its_minutes[0].merge(*its_minutes[1:]).run


def test_a_job_whose_claim_no_script_recorded_is_not_measured_rather_than_counted_as_zero(mq: EchoMQ) -> None:
    done_jobs(mq, "lat", 2)
    # Another runtime's job: claimed by writing the three core fields only (no history, no claimed_at).
    keys = QueueKeys("lat")
    mq.redis.hset(keys.job("z"), mapping={"state": "active", "attempts": "1", "payload": "x"})
    mq.redis.zadd(keys.active, {"z": mq.server_time_ms("lat") + 60_000})
    mq.run(moves.complete("lat", "z", "1"))

    now = mq.server_time_ms("lat")
    whole = mq.run(histogram("lat", resolution="m", first=now // MINUTE - 1, points=2)).whole()
    assert whole.completed == 3
    assert whole.run.total == 2 and whole.wait.total == 2


def test_nothing_measured_has_no_percentile() -> None:
    assert Histogram().percentile(0.5) is None
    assert Histogram().percentiles() == {"p50": None, "p95": None, "p99": None}


@pytest.mark.parametrize(("per", "points"), [(0, 1), (1, 0), (241, 1), (100, 100)])
def test_a_read_of_too_many_slots_is_refused_before_it_reaches_redis(per: int, points: int) -> None:
    from queues.errors import InvalidInput

    with pytest.raises(InvalidInput):
        histogram("lat", resolution="m", first=1, per=per, points=points)


def _steady_load(rng: random.Random, backlog: int, arrival_per_s: float, service_per_s: float,
                 start_s: float, stop_s: float | None) -> tuple[list[tuple[float, str, int]], list[float], float | None]:
    """A queue simulated from ``start_s`` (s, negative: before now): Poisson arrivals, claims at a
    Poisson rate while anything is due. Returns its moves until ``stop_s`` (time, 'e' or 'W', wait ms),
    the due times of the backlog left at ``stop_s``, and when the backlog emptied (None: ``stop_s`` came
    first)."""
    due = [start_s] * backlog
    head, t, moves_seen = 0, start_s, []
    next_arrival = t + rng.expovariate(arrival_per_s)
    next_claim = t + rng.expovariate(service_per_s)
    while True:
        t = min(next_arrival, next_claim)
        if stop_s is not None and t >= stop_s:
            return moves_seen, due[head:], None
        if next_arrival <= next_claim:
            due.append(t)
            moves_seen.append((t, "e", 0))
            next_arrival = t + rng.expovariate(arrival_per_s)
        else:
            if head < len(due):
                moves_seen.append((t, "W", round((t - due[head]) * 1000)))
                head += 1
                if head == len(due):
                    return moves_seen, [], t
            next_claim = t + rng.expovariate(service_per_s)


def test_the_time_to_drain_is_within_20_percent_of_the_drain_a_steady_load_then_takes(mq: EchoMQ) -> None:
    rng = random.Random(11)
    now = early_in_a_minute(mq, "lat")
    # Twelve minutes of 10 arrivals/s and 20 claims/s on a backlog of 12,000, recorded at their times
    # through the moves' own counting, so the ten whole minutes the rates are read from are covered.
    seen, left, _ = _steady_load(rng, 12_000, 10.0, 20.0, -720.0, 0.0)
    by_ms: dict[tuple[int, str], list[int]] = {}
    for t, kind, wait in seen:
        by_ms.setdefault((now + round(t * 1000), kind), []).append(wait)
    for (ts, kind), waits in sorted(by_ms.items()):
        if kind == "e":
            record_enqueues(mq, "lat", ts, len(waits))
        else:
            record_latencies(mq, "lat", ts, "W", waits)
    mq.enqueue_many("lat", ["x"] * len(left))  # the backlog at now: due jobs
    stats = mq.stats("lat")

    estimate = summarize(mq.run(summary_read("lat"))).time_to_drain_s(stats.due)
    # The same load goes on from now, from the backlog it left, until nothing is due.
    rest = random.Random(12)
    _, _, drained = _steady_load(rest, len(left), 10.0, 20.0, 0.0, None)

    assert stats.due == len(left) > 4000
    assert estimate is not None and drained is not None
    assert abs(estimate - drained) <= 0.2 * drained, (estimate, drained)


def test_a_backlog_that_is_not_shrinking_has_no_time_to_drain(mq: EchoMQ) -> None:
    now = early_in_a_minute(mq, "lat")
    for minute in range(1, 11):
        record_enqueues(mq, "lat", now - minute * MINUTE, 600)
        record_latencies(mq, "lat", now - minute * MINUTE, "W", [5] * 300)
    found = summarize(mq.run(summary_read("lat")))

    assert found.arrival_per_s > found.service_per_s > 0
    assert found.time_to_drain_s(100) is None
    assert found.time_to_drain_s(0) == 0.0
