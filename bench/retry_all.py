""""Retry all" over a large failed set: total time, jobs/s, and what another client feels meanwhile.

Runs the console's own bulk steps (dashboard.actions.bulk) against a private
redis-server: one ``retry_failed`` call of ``--limit`` jobs at a time. A
separate process PINGs the same server in a loop the whole time; its worst
and 99th-percentile round trips are the figures that say whether Redis stayed
responsive. Another process requests console pages (the queue's failed and
pending tabs, the overview) through Django the whole time: whether the
console stayed usable. The baselines, measured in the same run: the same prober against
the idle server, and against the cheapest script (a clock read) called back
to back, whose slow calls can only be the machine's.

    python -m bench.retry_all                 # 10^6 failed jobs
    python -m bench.retry_all --jobs 100000 --limit 200,1000
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

import redis

from dashboard.actions.bulk import drive, queue_steps
from queues import EchoMQ, NothingToClaim, moves
from tests.support.redis_servers import RedisServer

QUEUE = "bench-retry"
CHUNK = 1000


def _prober(port: int, stop: Any, ready: Any, out: Connection) -> None:
    client = redis.Redis(port=port, socket_timeout=None)
    samples: list[float] = []
    ready.set()
    while not stop.is_set():
        started = time.perf_counter()
        client.ping()
        samples.append((time.perf_counter() - started) * 1000)
        time.sleep(0.0005)
    out.send(samples)


def _console_prober(url: str, workdir: str, stop: Any, ready: Any, out: Connection) -> None:
    """An operator's browser, roughly: the queue page and the overview, again and again, through Django."""
    os.environ.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "EMQ_REDIS_URL": url,
                       "DATABASE_URL": f"sqlite:///{workdir}/db.sqlite3"})
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from dashboard.roles import VIEWERS, user_create

    settings.ALLOWED_HOSTS = ["testserver"]
    call_command("migrate", verbosity=0)
    client = Client()
    client.force_login(user_create(username="bench", password="bench-password", role=VIEWERS))
    pages = [f"/queue/?q={QUEUE}&state=failed", f"/queue/?q={QUEUE}&state=pending", "/"]
    samples: list[float] = []
    ready.set()
    while not stop.is_set():
        for page in pages:
            started = time.perf_counter()
            status = client.get(page).status_code
            samples.append((time.perf_counter() - started) * 1000 if status == 200 else float("inf"))
        time.sleep(0.05)
    out.send(samples)


class Probe:
    """Runs a prober in another process until stopped; returns its round trips in ms."""

    def __init__(self, target: Callable[..., None], *args: Any) -> None:
        context = multiprocessing.get_context("spawn")
        self._stop, self._ready = context.Event(), context.Event()
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=target, args=(*args, self._stop, self._ready, send), daemon=True)

    def __enter__(self) -> Probe:
        self._process.start()
        if not self._ready.wait(120):
            raise RuntimeError("the prober did not start")
        return self

    def samples(self) -> list[float]:
        self._stop.set()
        samples: list[float] = self._receive.recv()
        self._process.join(10)
        return samples

    def __exit__(self, *exc: object) -> None:
        if self._process.is_alive():
            self._process.kill()


def _summary(samples: list[float], what: str = "pings") -> str:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (f"{len(samples):>7} {what}  median {statistics.median(ordered):6.3f} ms  p99 {p99:6.3f} ms  "
            f"worst {ordered[-1]:7.3f} ms")


class ServerTime:
    """What the server itself measured: every script call over 1 ms (SLOWLOG) and the mean per call.

    Client-side PING figures on a busy 2-core machine include waiting for a
    CPU; these do not, so the two together tell Redis's share from the OS's.
    """

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def __enter__(self) -> ServerTime:
        self.client.config_set("slowlog-log-slower-than", 1000)
        self.client.config_set("slowlog-max-len", 100_000)
        self.client.slowlog_reset()
        self.client.config_resetstat()
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def summary(self) -> str:
        # Redis 7 also logs slow commands made inside a script; count whole calls only.
        slow = [entry["duration"] / 1000 for entry in self.client.slowlog_get(100_000)
                if bytes(entry["command"]).upper().startswith(b"EVAL")]
        stats = self.client.info("commandstats")
        calls = sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("eval", "evalsha"))
        usec = sum(float(stats.get(f"cmdstat_{name}", {}).get("usec", 0)) for name in ("eval", "evalsha"))
        worst = f"{max(slow):.3f} ms" if slow else "none over 1 ms"
        return (f"{calls} script calls, {usec / max(calls, 1) / 1000:.3f} ms each on average; "
                f"calls over 1 ms: {len(slow)}; longest: {worst}")


def seed_failed(mq: EchoMQ, jobs: int) -> None:
    """Makes ``jobs`` failed jobs through the real moves: enqueue, claim, fail (one attempt each)."""
    payload = b'{"order": "ORD-0000", "amount": "12.50"}'
    for start in range(0, jobs, CHUNK):
        count = min(CHUNK, jobs - start)
        mq.enqueue_many(QUEUE, [payload] * count, max_attempts=1, chunk=CHUNK)
        claimed = mq.claim(QUEUE, lease_ms=600_000, count=count)
        results = mq.run_many([moves.fail(QUEUE, job.id, job.token, error="bench: card declined", backoff_ms=0,
                                          actor="bench") for job in claimed])
        errors = [r for r in results if isinstance(r, Exception)]
        if errors:
            raise errors[0]


def refail(mq: EchoMQ) -> None:
    """Sends every pending job back to failed, for the next limit to retry."""
    while True:
        try:
            claimed = mq.claim(QUEUE, lease_ms=600_000, count=CHUNK)
        except NothingToClaim:
            return
        mq.run_many([moves.fail(QUEUE, job.id, job.token, error="bench: again", backoff_ms=0, actor="bench")
                     for job in claimed])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retry_all", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--limit", default="200", help="jobs per retry_failed call; a comma list compares several")
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    options = parser.parse_args(argv)
    limits = [int(x) for x in options.limit.split(",")]

    server = RedisServer().start()
    try:
        mq = EchoMQ.from_url(server.url, actor="bench", socket_timeout=None)
        print(f"redis-server {server.client().info()['redis_version']} on port {server.port}; "
              f"seeding {options.jobs:,} failed jobs ...", flush=True)
        started = time.monotonic()
        seed_failed(mq, options.jobs)
        print(f"seeded in {time.monotonic() - started:.1f} s: {mq.stats(QUEUE).counts}", flush=True)

        with Probe(_prober, server.port) as probe:
            time.sleep(options.baseline_seconds)
            idle = probe.samples()
        print(f"baseline, idle server:          {_summary(idle)}", flush=True)
        workdir = tempfile.mkdtemp(prefix="emq-bench-retry-")
        with Probe(_console_prober, server.url, workdir) as console:
            time.sleep(options.baseline_seconds)
            console_idle = console.samples()
        print(f"baseline, console pages while idle: {_summary(console_idle, 'pages')}", flush=True)
        # The control: the cheapest script (a clock read) called back to back for as long. Its slow
        # calls are the machine's (a descheduled redis-server), not the work's.
        with ServerTime(server.client()) as control_time, Probe(_prober, server.port) as probe:
            time.sleep(0.2)
            ends = time.monotonic() + options.baseline_seconds
            while time.monotonic() < ends:
                mq.server_time_ms(QUEUE)
            control = probe.samples()
        print(f"baseline, clock script looping: {_summary(control)}", flush=True)
        print(f"  server time (clock script): {control_time.summary()}", flush=True)

        for index, limit in enumerate(limits):
            if index:
                refail(mq)
            failed = mq.stats(QUEUE).counts["failed"]
            with (ServerTime(server.client()) as server_time, Probe(_prober, server.port) as probe,
                  Probe(_console_prober, server.url, workdir) as console):
                time.sleep(0.2)
                end = drive(queue_steps(mq, "retry_all", QUEUE, limit=limit))
                during = probe.samples()
                console_during = console.samples()
            counts = mq.stats(QUEUE).counts
            print(f"retry all, limit {limit:>4}: {end.tally.moved:,} of {failed:,} jobs in {end.seconds:.2f} s = "
                  f"{end.tally.moved / end.seconds:,.0f} jobs/s; after: {counts}", flush=True)
            print(f"  PING while it ran (limit {limit:>4}): {_summary(during)}", flush=True)
            print(f"  console pages while it ran (limit {limit:>4}): {_summary(console_during, 'pages')}", flush=True)
            print(f"  server time (limit {limit:>4}): {server_time.summary()}", flush=True)
            if end.tally.moved != failed or counts["failed"] != 0:
                print("error: not every failed job was retried", file=sys.stderr)
                return 1
        mq.close()
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
