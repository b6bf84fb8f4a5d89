"""Move counters in the queue's slot, written by the moves themselves: they equal the moves made."""

from __future__ import annotations

import pytest

from queues import EchoMQ, QueueKeys, latency, moves, reads
from tests.support.jobs import done_jobs, failed_jobs


def moves_counted(mq: EchoMQ, queue: str) -> dict[str, int]:
    """The move counters, without the duration buckets (see the histogram tests)."""
    return {k: v for k, v in mq.run(reads.counts(queue)).items() if not k.startswith(("wait:", "run:"))}


def test_every_move_counts_itself(any_mq: EchoMQ) -> None:
    done_jobs(any_mq, "mail", 3)
    failed_jobs(any_mq, "mail", 2)
    retried = any_mq.page("mail", "failed").rows[0].id
    any_mq.retry("mail", retried, extra_attempts=2)
    job = any_mq.claim("mail", lease_ms=60_000)[0]
    any_mq.run(moves.fail("mail", job.id, job.token, error="again", backoff_ms=0))  # attempts remain: back to pending
    any_mq.enqueue("mail", "x", job_id="c")
    any_mq.cancel("mail", "c", expect_state="pending")

    counts = moves_counted(any_mq, "mail")

    assert counts == {"enqueue": 6, "claim": 6, "complete": 3, "fail:failed": 2, "fail:pending": 1, "retry": 1,
                      "cancel": 1}


def test_a_heartbeat_is_not_counted_and_a_recovered_lease_is(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="a")
    job = mq.claim("mail", lease_ms=60_000)[0]
    mq.extend("mail", job.id, job.token)
    mq.redis.zadd(QueueKeys("mail").active, {"a": 1})

    mq.recover_expired("mail")

    assert moves_counted(mq, "mail") == {"enqueue": 1, "claim": 1, "recover:pending": 1}


def test_a_counts_key_another_writer_made_a_string_does_not_stop_the_moves(mq: EchoMQ) -> None:
    mq.redis.set(QueueKeys("mail").counts, "not a hash")

    mq.enqueue("mail", "x", job_id="a")

    assert mq.job("mail", "a").state == "pending"
    with pytest.raises(Exception, match="wrongtype|another type|counts"):
        mq.run(reads.counts("mail"))


def test_counters_that_hold_no_integer_or_another_type_are_left_alone_and_every_move_still_happens(
        mq: EchoMQ) -> None:
    keys = QueueKeys("mail")
    time_ms = int(mq.redis.time()[0]) * 1000
    minute, hour = f"{keys.prefix}m:{time_ms // 60_000}", f"{keys.prefix}h:{time_ms // 3_600_000}"
    mq.redis.hset(keys.counts, mapping={"enqueue": "many", "claim": "x", "complete": "9" * 30, "run:sum": "-"})
    mq.redis.set(minute, "not a hash")
    mq.redis.rpush(hour, "not a hash either")
    foreign = {key: mq.redis.dump(key) for key in (minute, hour)}

    mq.enqueue("mail", "x", job_id="a")
    job = mq.claim("mail", lease_ms=60_000)[0]
    mq.complete("mail", job.id, job.token)

    assert mq.job("mail", "a").state == "done"
    assert mq.redis.hmget(keys.counts, "enqueue", "claim", "complete", "run:sum") == [
        b"many", b"x", b"9" * 30, b"-"]
    # The key may have turned a minute meanwhile: those that were written by another writer are as they were.
    assert {key: mq.redis.dump(key) for key in foreign} == foreign


def test_fields_a_foreign_writer_added_are_not_read(mq: EchoMQ) -> None:
    mq.redis.hset(QueueKeys("mail").counts, mapping={f"junk{n}": n for n in range(2000)} | {"complete": "x"})
    mq.enqueue("mail", "x")

    assert mq.run(reads.counts("mail")) == {"enqueue": 1}


def test_each_claim_counts_its_wait_and_each_finish_its_run(mq: EchoMQ) -> None:
    done_jobs(mq, "mail", 3)

    counted = mq.run(reads.counts("mail"))

    assert sum(v for k, v in counted.items() if k.startswith("wait:") and k != "wait:sum") == 3
    assert sum(v for k, v in counted.items() if k.startswith("run:") and k != "run:sum") == 3
    assert counted["run:sum"] >= 0 and counted["wait:sum"] >= 0


def _counters(mq: EchoMQ, queue: str) -> dict[str, dict[str, int]]:
    """Every counter of the queue: its counts hash and each minute and hour key, by kind (the minute and hour
    numbers left out, so two queues counted in different minutes compare), with each key's lifetime set."""
    prefix = QueueKeys(queue).prefix
    found: dict[str, dict[str, int]] = {}
    for key in mq.redis.scan_iter(match=prefix + "*", count=1000):
        name = key.decode()[len(prefix):]
        kind = "counts" if name == "counts" else name.split(":")[0] if name.startswith(("m:", "h:")) else None
        if kind is None:
            continue
        if kind != "counts":
            assert mq.redis.pttl(key) > 0, f"{name} has no lifetime"
        fields = {f.decode(): int(v) for f, v in mq.redis.hgetall(key).items()}
        for field, value in fields.items():
            found.setdefault(kind, {})
            found[kind][field] = found[kind].get(field, 0) + value
    return found


def _totals(counters: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Each duration histogram as its number of durations (which bucket each fell in, and the ms summed, differ
    between two runs); every other field as it is."""
    def name(field: str) -> str:
        if field.startswith(("wait:", "run:")):
            return field.split(":")[0] + (":sum" if field.endswith(":sum") else ":counted")
        return field[0] + "*" if field[0] in "WR" and field[1:].isdigit() else field
    totals: dict[str, dict[str, int]] = {}
    for kind, fields in counters.items():
        for field, value in fields.items():
            if not field.endswith(":sum"):
                totals.setdefault(kind, {})
                totals[kind][name(field)] = totals[kind].get(name(field), 0) + value
    return totals


def test_a_batch_counts_what_its_moves_one_by_one_count_and_writes_each_counter_field_once(mq: EchoMQ) -> None:
    n = 30
    # One by one: 30 enqueues, 30 claims, 30 completions.
    for i in range(n):
        mq.enqueue("single", f"job {i}")
    for _ in range(n):
        job = mq.claim("single", lease_ms=60_000)[0]
        mq.complete("single", job.id, job.token)

    # In batches: one enqueue_many, one claim of 30, one complete_many, then a finish_claim of 30 reports
    # that claims 30 more (enqueued by a second enqueue_many) and one that reports those.
    mq.enqueue_many("batched", [f"job {i}" for i in range(n)])
    held = mq.claim("batched", lease_ms=60_000, count=n)
    mq.redis.config_resetstat()
    mq.run(moves.complete_many("batched", [(job.id, job.token) for job in held]))
    completing_writes = mq.redis.info("commandstats")["cmdstat_hincrby"]["calls"]
    mq.enqueue_many("batched", [f"job {i}" for i in range(n, 2 * n)])
    done_first = mq.run(moves.finish_claim("batched", [], lease_ms=60_000, count=n))
    claimed = done_first.claimed
    mq.run(moves.finish_claim("batched", [moves.Report(job.id, job.token) for job in claimed], count=1))

    single, batched = _counters(mq, "single"), _counters(mq, "batched")
    for kind in ("counts", "m", "h"):
        assert _totals(batched)[kind] == {f: 2 * v for f, v in _totals(single)[kind].items()}
    assert _totals(single)["counts"] == {"enqueue": n, "claim": n, "complete": n, "wait:counted": n,
                                         "run:counted": n}
    assert _totals(single)["m"] == _totals(single)["h"] == {"e": n, "c": n, "W*": n, "R*": n}
    assert {"wait:sum", "run:sum"} <= set(batched["counts"])
    # 30 completions counted with one HINCRBY per field (complete, run:<bucket>, run:sum, and the minute's and
    # the hour's c and R<bucket>), not one per job and field.
    assert completing_writes <= 8


def test_a_batch_counts_each_wait_with_its_bucket_and_sum_however_many_jobs_share_it(mq: EchoMQ) -> None:
    # A claim of several jobs adds equal waits up before bucketing them: the same fields and totals as one by one.
    keys = QueueKeys("q")
    t = mq.server_time_ms("q")
    for job_id, ago in (("a", 100_000), ("b", 100_000), ("c", 1_000_000)):
        mq.enqueue("q", "x", job_id=job_id)
        mq.redis.zadd(keys.pending, {job_id: t - ago})

    assert len(mq.claim("q", count=3)) == 3

    claimed_at = int(mq.job("q", "a").text("claimed_at"))  # one call, one time for all three
    near, far = claimed_at - (t - 100_000), claimed_at - (t - 1_000_000)
    counted = mq.run(reads.counts("q"))
    # The histogram's buckets end at 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900 and 3600 s: 100 s is bucket 7, 1000 s 9.
    assert {k: v for k, v in counted.items() if k.startswith("wait:")} == {
        "wait:7": 2, "wait:9": 1, "wait:sum": 2 * near + far}
    minute = {k.decode(): int(v) for k, v in mq.redis.hgetall(f"{keys.prefix}m:{claimed_at // 60_000}").items()}
    assert {k: v for k, v in minute.items() if k.startswith("W")} == {
        f"W{latency.bucket_of(near)}": 2, f"W{latency.bucket_of(far)}": 1}
