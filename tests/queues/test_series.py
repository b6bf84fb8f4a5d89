"""History that survives restarts: per-minute and per-hour counts in the queue's slot, at the server's times."""

from __future__ import annotations

from queues import EchoMQ, QueueKeys, reads
from tests.support.jobs import done_jobs, failed_jobs


def test_moves_land_in_the_minute_and_hour_of_the_servers_clock(mq: EchoMQ) -> None:
    done_jobs(mq, "mail", 3)
    failed_jobs(mq, "mail", 2)
    now = mq.server_time_ms("mail")
    minute, hour = now // 60_000, now // 3_600_000

    # Read the last two minutes: the moves above may straddle a minute boundary.
    by_minute = mq.run(reads.series("mail", resolution="m", first=minute - 1, count=2))
    by_hour = mq.run(reads.series("mail", resolution="h", first=hour - 1, count=2))

    for found in (by_minute, by_hour):
        assert sum(p.enqueued for p in found.points) == 5
        assert sum(p.completed for p in found.points) == 3
        assert sum(p.failed for p in found.points) == 2
        assert sum(sum(p.waits) for p in found.points) == 5  # every claim counted by its wait
    assert by_minute.points[1].start_ms == minute * 60_000


def test_a_wait_is_counted_in_its_bucket(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="a")
    now = mq.server_time_ms("mail")
    mq.redis.zadd(QueueKeys("mail").pending, {"a": now - 120_000})  # due two minutes ago

    mq.claim("mail")

    point = mq.run(reads.series("mail", resolution="m", first=mq.server_time_ms("mail") // 60_000, count=1)).points[0]
    assert point.waits[7] == 1 and sum(point.waits) == 1  # 60 s < waited <= 300 s
    assert point.wait_percentile_ms(0.5) == 300_000


def test_the_buckets_expire_by_themselves(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x")
    minute = mq.server_time_ms("mail") // 60_000
    ttl_minute = mq.redis.pttl(f"emq:{{mail}}:m:{minute}")
    ttl_hour = mq.redis.pttl(f"emq:{{mail}}:h:{minute // 60}")

    assert 47 * 3_600_000 < ttl_minute <= 48 * 3_600_000
    assert 89 * 86_400_000 < ttl_hour <= 90 * 86_400_000


def test_a_recovered_lease_is_counted(mq: EchoMQ) -> None:
    mq.enqueue("mail", "x", job_id="a")
    mq.claim("mail", lease_ms=60_000)
    mq.redis.zadd(QueueKeys("mail").active, {"a": 1})
    mq.recover_expired("mail")
    minute = mq.server_time_ms("mail") // 60_000

    points = mq.run(reads.series("mail", resolution="m", first=minute - 1, count=2)).points
    assert sum(p.recovered for p in points) == 1
