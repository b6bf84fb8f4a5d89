"""Server time of the console's pages: the overview at 1,000 queues, a queue page at 10^6 jobs.

Each page is requested through Django's test client in this process (the
whole request: middleware, session, view, reads, template), against a
private redis-server. The baseline beside each figure is the same page's
Redis reads alone (the ``queues`` calls the view makes, no Django), measured
in the same run, so the difference is what the console itself costs.

    python -m bench.console_pages                    # 1,000 queues; 10^6 jobs
    python -m bench.console_pages --queues 200 --jobs 100000
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from queues import EchoMQ, QueueKeys, reads
from tests.support.redis_servers import RedisServer

BIG = "bench-million"


def _seed_queues(mq: EchoMQ, count: int) -> None:
    names = [f"bench-{n:04d}" for n in range(count)]
    for start in range(0, count, 100):
        for name in names[start:start + 100]:
            mq.enqueue_many(name, ["{}"] * 3)
            mq.enqueue(name, "{}", delay_ms=3_600_000)
        for name in names[start:start + 100]:
            mq.claim(name, lease_ms=600_000)


def _seed_million(mq: EchoMQ, jobs: int) -> None:
    """Writes the jobs as enqueue would (hash + pending score), pipelined without a script per job."""
    keys = QueueKeys(BIG)
    now = mq.server_time_ms(BIG)
    pipe = mq.redis.pipeline(transaction=False)
    for n in range(jobs):
        job_id = f"job-{n:07d}"
        pipe.hset(keys.job(job_id), mapping={"state": "pending", "attempts": "0", "max_attempts": "3",
                                              "payload": f'{{"n": {n}, "to": "user{n}@example.com"}}',
                                              "created_at": str(now)})
        pipe.zadd(keys.pending, {job_id: now - jobs + n})
        if n % 5000 == 4999:
            pipe.execute()
    pipe.execute()
    mq.redis.sadd("emq:queues", BIG)


def _time(call: Callable[[], Any], repeat: int) -> tuple[float, float]:
    call()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    server = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-bench-console-"))
    os.environ.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "EMQ_REDIS_URL": server.url,
                       "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}"})
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from dashboard.roles import VIEWERS, user_create

    settings.EMQ_REDIS_URL = server.url
    settings.ALLOWED_HOSTS = ["testserver"]
    call_command("migrate", verbosity=0)
    client = Client()
    client.force_login(user_create(username="bench", password="bench-password", role=VIEWERS))
    mq = EchoMQ.from_url(server.url)
    try:
        started = time.perf_counter()
        _seed_queues(mq, args.queues)
        _seed_million(mq, args.jobs)
        print(f"seeded {args.queues} queues and {args.jobs} jobs in {time.perf_counter() - started:.1f} s")

        def get(url: str) -> Callable[[], Any]:
            def call() -> Any:
                response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)
                return response
            return call

        def overview_reads() -> Any:
            names = mq.queues()
            return mq.stats_many(names)

        deep = mq.page(BIG, "pending", offset=int(args.jobs * 0.9), limit=1).rows[0].cursor
        rows: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
            (f"overview, {args.queues + 1} queues", get("/"), overview_reads),
            (f"queue page, first 50 of {args.jobs:,}", get(f"/queue/?q={BIG}"),
             lambda: mq.run_many([reads.stats(BIG), reads.page(BIG, "pending")])),
            (f"queue page, cursor at 90% ({deep.split(':')[1]})", get(f"/queue/?q={BIG}&after={deep}"),
             lambda: mq.run_many([reads.stats(BIG), reads.page(BIG, "pending", after=deep)])),
            ("queue page, last page (offset)", get(f"/queue/?q={BIG}&offset={args.jobs - 50}"),
             lambda: mq.run_many([reads.stats(BIG), reads.page(BIG, "pending", offset=args.jobs - 50)])),
            ("job page (one job of the big queue)", get(f"/job/?q={BIG}&id=job-{args.jobs // 2:07d}"),
             lambda: mq.job(BIG, f"job-{args.jobs // 2:07d}")),
        ]
        print(f"{'page':52} {'server ms (median / p95)':>26} {'reads alone (median / p95)':>28}")
        for label, page, baseline in rows:
            page_ms = _time(page, args.repeat)
            base_ms = _time(baseline, args.repeat)
            print(f"{label:52} {page_ms[0]:12.1f} / {page_ms[1]:7.1f} {base_ms[0]:14.1f} / {base_ms[1]:7.1f}")
    finally:
        mq.close()
        server.cleanup()


if __name__ == "__main__":
    main()
