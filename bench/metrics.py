"""/metrics at 1,000 and 10,000 queues: a scrape's time, and the Redis work of the background walk behind it.

For each size, against a private redis-server, in this process (Django's test
client, the whole request): the median and p95 of a scrape of ``/metrics``,
which serves the text rendered after the last walk; beside it, in the same
run, the baseline a scrape would cost if it read every queue itself (one
walk: the ``stats`` reads plus rendering). The walk's Redis work is read from
``INFO commandstats`` (calls and server microseconds of EVALSHA) around one walk.

    python -m bench.metrics                        # 1,000 and 10,000 queues
    python -m bench.metrics --sizes 1000 --repeat 50
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import median, percentile
from queues import EchoMQ, QueueKeys
from queues.health import scripts_load
from tests.support.redis_servers import RedisServer


def _seed(mq: EchoMQ, first: int, count: int) -> None:
    """Queues with a job in each of pending (due and delayed), active, done and failed, written directly."""
    now = mq.server_time_ms("q")
    pipe = mq.redis.pipeline(transaction=False)
    for n in range(first, first + count):
        keys = QueueKeys(f"bench-{n:05d}")
        for state, score in (("pending", now - 1000), ("active", now + 60_000), ("done", now), ("failed", now)):
            job_id = f"{state}-1"
            pipe.hset(keys.job(job_id), mapping={"state": state, "attempts": "1", "payload": "{}"})
            pipe.zadd(keys.state_set(state), {job_id: score})
        pipe.hset(keys.job("later"), mapping={"state": "pending", "attempts": "0", "payload": "{}"})
        pipe.zadd(keys.pending, {"later": now + 3_600_000})
        pipe.sadd("emq:queues", keys.queue)
        if n % 500 == 499:
            pipe.execute()
    pipe.execute()


def _evalsha(mq: EchoMQ) -> tuple[int, int]:
    stats = mq.redis.info("commandstats").get("cmdstat_evalsha", {})
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    server = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-bench-metrics-"))
    os.environ.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "EMQ_REDIS_URL": server.url,
                       "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}"})
    import django

    django.setup()
    from django.conf import settings
    from django.test import Client

    from dashboard.monitoring.exposition import render
    from dashboard.monitoring.snapshot import Walker, walker, walker_reset

    settings.EMQ_REDIS_URL = server.url
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.EMQ_METRICS_ALLOW = ["127.0.0.1"]
    settings.EMQ_METRICS_INTERVAL_S = 3600.0  # one walk per size: the scrapes below must not start another
    settings.EMQ_METRICS_QUEUES_PER_S = 1e9  # the rate cap off, to measure the walk's own cost
    client = Client()
    mq = EchoMQ.from_url(server.url)
    scripts_load(mq)  # so no walk below pays a NOSCRIPT round
    seeded = 0
    print(f"{'queues':>7} {'scrape ms (median / p95)':>26} {'read every queue per scrape ms (median / p95)':>48}"
          f" {'walk: EVALSHA calls, Redis ms':>32} {'text bytes':>11}")
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            _seed(mq, seeded, size - seeded)
            seeded = size
            walker_reset()
            calls, usec = _evalsha(mq)
            first = client.get("/metrics")  # waits for the first walk (at most 5 s)
            while walker().snapshot is None:
                time.sleep(0.1)
            walk_calls, walk_usec = (a - b for a, b in zip(_evalsha(mq), (calls, usec)))
            first = client.get("/metrics")
            assert first.status_code == 200, (first.status_code, first.content[:200])
            assert len(walker().snapshot.stats) == size, len(walker().snapshot.stats)  # type: ignore[union-attr]
            scrape: list[float] = []
            direct: list[float] = []
            naive = Walker(render, interval_s=3600.0, queues_per_s=1e9)
            for _ in range(args.repeat):  # interleaved: a drift favours neither side
                started = time.perf_counter()
                response: Any = client.get("/metrics")
                scrape.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200
                started = time.perf_counter()
                naive.walk()
                direct.append((time.perf_counter() - started) * 1000)
            print(f"{size:>7} {median(scrape):12.2f} / {percentile(scrape, 0.95):7.2f} "
                  f"{median(direct):28.1f} / {percentile(direct, 0.95):9.1f} "
                  f"{walk_calls:>18} {walk_usec / 1000:9.1f}   {len(first.content):>11,}")
    finally:
        walker_reset()
        mq.close()
        server.cleanup()


if __name__ == "__main__":
    main()
