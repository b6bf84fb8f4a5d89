"""The why read's cost, and the overview's Why column's, on one private redis-server.

Part 1: ``queue_why`` and ``job_why`` at 10, 10^4 and 10^6 jobs in the queue (filled by ``bench/fill.lua``,
100 of them active, 20 workers registered): wall time per call (median / p95), Redis time per why script
(INFO commandstats: usec / calls of EVALSHA, its inner commands included) and Redis commands per call.

Part 2: the overview at 10^4 queues with the Why column and without it (``EMQ_OVERVIEW_REASONS``), requests
interleaved in the same run: server time per page and Redis commands per page; then live overview sockets
for a while with the column and without: Redis commands/s (the census included).

    python -m bench.why
    python -m bench.why --max-jobs 10000 --queues 1000 --watch-s 10
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from queues import EchoMQ, QueueKeys, moves
from tests.support.jobs import many_queues
from tests.support.redis_servers import RedisServer

FILL = (Path(__file__).parent / "fill.lua").read_text()


def _p(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def _fill(mq: EchoMQ, queue: str, count: int) -> None:
    keys = QueueKeys(queue).script_keys(None)
    sha = mq.redis.script_load(FILL)
    for start in range(0, count, 10_000):
        mq.redis.evalsha(sha, 6, *keys, start, min(10_000, count - start), "x" * 40, "bench")
    for job in mq.claim(queue, count=100, lease_ms=600_000):
        assert job
    for n in range(20):
        mq.run(moves.register_worker(queue, f"box:{n}", ttl_ms=600_000, host="box", pid=n, runtime="bench",
                                     concurrency=8, started_ms=1, held=[]))


def _commands(mq: EchoMQ) -> dict[str, tuple[int, float]]:
    return {k: (int(v["calls"]), float(v["usec"])) for k, v in mq.redis.info("commandstats").items()}


def bench_reads(mq: EchoMQ, sizes: list[int], repeat: int) -> list[str]:
    lines = []
    for size in sizes:
        queue = f"why-{size}"
        started = time.perf_counter()
        _fill(mq, queue, size)
        filled_s = time.perf_counter() - started
        middle = f"fill{size // 2:010d}"
        for label, read in (("queue_why", lambda q=queue: mq.queue_why(q)),
                            ("job_why", lambda q=queue, j=middle: mq.job_why(q, j))):
            read()
            mq.redis.config_resetstat()
            walls = []
            for _ in range(repeat):
                at = time.perf_counter()
                answer = read()
                walls.append((time.perf_counter() - at) * 1000)
            stats = _commands(mq)
            scripts, usec = stats.get("cmdstat_evalsha", (0, 0.0))
            inner = sum(calls for name, (calls, _) in stats.items()
                        if name not in ("cmdstat_evalsha", "cmdstat_config", "cmdstat_info"))
            median, p95 = _p(walls)
            lines.append(f"{label:9} at {size:>9,} jobs: wall {median:6.2f} / {p95:6.2f} ms (median / p95), "
                         f"Redis {usec / max(scripts, 1) / 1000:6.3f} ms per why script, "
                         f"{(inner + scripts) / repeat:5.1f} commands per call; first reason: {answer.top.code}")
            print(lines[-1], flush=True)
        print(f"  (filled {size:,} jobs in {filled_s:.1f} s)", flush=True)
        mq.redis.flushall(asynchronous=True)
    return lines


async def _watch(cookie: bytes, sockets: int, watch_s: float, mq: EchoMQ) -> float:
    from channels.testing import WebsocketCommunicator

    from dashboard.asgi import application
    from queues.follower import Follower

    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)]
    pages = []
    for n in range(sockets):
        page = WebsocketCommunicator(application, f"/ws/overview/?offset={n * 500}&limit=100", headers=headers)
        connected, _ = await page.connect(timeout=20)
        assert connected
        pages.append(page)

    async def drain(page: Any, until: float) -> None:
        while time.monotonic() < until:
            try:
                await page.receive_from(timeout=max(until - time.monotonic(), 0.01))
            except (TimeoutError, asyncio.CancelledError):
                return

    await asyncio.gather(*(drain(page, time.monotonic() + 3) for page in pages))  # the first renders
    before = sum(calls for calls, _ in _commands(mq).values())
    started = time.monotonic()
    await asyncio.gather(*(drain(page, started + watch_s) for page in pages))
    after = sum(calls for calls, _ in _commands(mq).values())
    for page in pages:
        try:
            await page.disconnect()
        except (asyncio.CancelledError, TimeoutError):  # a page the test harness already let go of
            pass
    await Follower.stop_all()
    return (after - before) / (time.monotonic() - started)


def bench_overview(server: RedisServer, mq: EchoMQ, queues: int, repeat: int, sockets: int,
                   watch_s: float) -> list[str]:
    workdir = Path(tempfile.mkdtemp(prefix="emq-bench-why-"))
    os.environ.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "EMQ_REDIS_URL": server.url,
                       "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}"})
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    from dashboard.census import census_pass
    from dashboard.roles import VIEWERS, user_create

    settings.EMQ_REDIS_URL = server.url
    settings.ALLOWED_HOSTS = ["testserver", "localhost"]
    call_command("migrate", verbosity=0)
    client = Client()
    client.force_login(user_create(username="bench", password="bench-password", role=VIEWERS))
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    started = time.perf_counter()
    many_queues(mq, queues)
    print(f"seeded {queues:,} queues in {time.perf_counter() - started:.1f} s", flush=True)
    client.get("/")
    deadline = time.monotonic() + 900
    while not census_pass().census.totals().complete and time.monotonic() < deadline:
        time.sleep(0.5)
    lines = []
    pages = [("by name, first page", "/"), ("sorted by why", "/?sort=reason")]
    timed: dict[tuple[str, bool], list[float]] = {}
    commands: dict[tuple[str, bool], list[int]] = {}
    for _ in range(repeat):
        for label, url in pages:
            for on in (True, False):
                settings.EMQ_OVERVIEW_REASONS = on
                before = sum(calls for calls, _ in _commands(mq).values())
                at = time.perf_counter()
                response = client.get(url)
                timed.setdefault((label, on), []).append((time.perf_counter() - at) * 1000)
                assert response.status_code == 200
                # The INFO that measures is one command: take it off.
                commands.setdefault((label, on), []).append(sum(c for c, _ in _commands(mq).values()) - before - 1)
    for label, _ in pages:
        for on in (True, False):
            median, p95 = _p(timed[(label, on)])
            lines.append(f"overview at {queues:,} queues, {label:20}, Why column {'on ' if on else 'off'}: "
                         f"server {median:6.1f} / {p95:6.1f} ms (median / p95), "
                         f"{statistics.median(commands[(label, on)]):5.0f} Redis commands per page (census included)")
            print(lines[-1], flush=True)
    for on in (True, False):
        settings.EMQ_OVERVIEW_REASONS = on
        rate = asyncio.run(_watch(cookie, sockets, watch_s, mq))
        lines.append(f"{sockets} live overview sockets of 100 rows for {watch_s:g} s, nothing moving, Why column "
                     f"{'on ' if on else 'off'}: {rate:7.0f} Redis commands/s (census included)")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-jobs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--page-repeat", type=int, default=20)
    parser.add_argument("--sockets", type=int, default=5)
    parser.add_argument("--watch-s", type=float, default=15.0)
    args = parser.parse_args()
    server = RedisServer().start()
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        sizes = [n for n in (10, 10_000, 1_000_000) if n <= args.max_jobs]
        bench_reads(mq, sizes, args.repeat)
        mq.redis.flushall(asynchronous=True)
        bench_overview(server, mq, args.queues, args.page_repeat, args.sockets, args.watch_s)
    finally:
        mq.close()
        server.cleanup()


if __name__ == "__main__":
    main()
