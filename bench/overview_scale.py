"""The overview at 10,000 queues: server time and bytes of its pages, its live messages, its Redis calls.

One private redis-server, the console in this process (Django's test client for the pages, Channels'
WebsocketCommunicator for the live sockets). The baseline beside each page time is what the overview
read before it was paged (every registered queue's ``stats`` on every render: ``queues()`` plus one
pipelined ``stats_many``), measured interleaved with the pages in the same run.

    python -m bench.overview_scale                  # 10,000 queues of 3 pending jobs, 30 requests a page
    python -m bench.overview_scale --queues 1000 --sockets 10 --watch-s 20
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from queues import EchoMQ
from tests.support.jobs import failed_jobs, many_queues
from tests.support.redis_servers import RedisServer


def _percentiles(samples: list[float]) -> tuple[float, float]:
    samples = sorted(samples)
    return statistics.median(samples), samples[max(0, int(len(samples) * 0.95) - 1)]


def _script_calls(mq: EchoMQ) -> int:
    stats = mq.redis.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k in ("cmdstat_evalsha", "cmdstat_eval"))


def _commands(mq: EchoMQ) -> int:
    return sum(int(v["calls"]) for v in mq.redis.info("commandstats").values())


async def _watch(cookie: bytes, sockets: int, watch_s: float, mq: EchoMQ) -> tuple[int, int, float, float]:
    """Opens ``sockets`` overview pages (each at its own offset, 100 rows asked), lets them run ``watch_s``;
    returns (messages, largest message bytes, script calls/s, commands/s) over the watch."""
    from channels.testing import WebsocketCommunicator

    from dashboard.asgi import application
    from queues.follower import Follower

    headers = [(b"origin", b"http://localhost"), (b"host", b"localhost"), (b"cookie", cookie)]
    pages = []
    for n in range(sockets):
        page = WebsocketCommunicator(application, f"/ws/overview/?offset={n * 500}&limit=100", headers=headers)
        connected, _ = await page.connect(timeout=10)
        assert connected
        pages.append(page)
    sizes: list[int] = []

    async def drain(page: Any, until: float) -> None:
        while time.monotonic() < until:
            try:
                sizes.append(len((await page.receive_from(timeout=max(0.01, until - time.monotonic()))).encode()))
            except TimeoutError:
                return

    # Let the pages settle (first tables, the follower's first reads), then count.
    await asyncio.gather(*(drain(p, time.monotonic() + 5) for p in pages))
    calls, commands, started = _script_calls(mq), _commands(mq), time.monotonic()
    await asyncio.gather(*(drain(p, started + watch_s) for p in pages))
    elapsed = time.monotonic() - started
    calls, commands = _script_calls(mq) - calls, _commands(mq) - commands
    for page in pages:
        try:
            await page.disconnect()
        except (asyncio.CancelledError, TimeoutError):  # a page the test harness already let go of
            pass
    await Follower.stop_all()
    return len(sizes), max(sizes, default=0), calls / elapsed, commands / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--sockets", type=int, default=10)
    parser.add_argument("--watch-s", type=float, default=20.0)
    args = parser.parse_args()

    server = RedisServer().start()
    workdir = Path(tempfile.mkdtemp(prefix="emq-bench-overview-"))
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
    mq = EchoMQ.from_url(server.url)
    try:
        started = time.perf_counter()
        names = many_queues(mq, args.queues)
        failed_jobs(mq, "broken", 3)
        print(f"seeded {args.queues + 1} queues in {time.perf_counter() - started:.1f} s")

        first = client.get("/")
        print(f"first render of a fresh process (the census has read only the page's rows): "
              f"{len(first.content):,} bytes")
        deadline = time.monotonic() + 600
        while not census_pass().census.totals().complete and time.monotonic() < deadline:
            time.sleep(0.5)
        totals = census_pass().census.totals()
        print(f"the census's first whole pass took {totals.last_pass_s or 0:.1f} s "
              f"at {settings.EMQ_CENSUS_CALLS_PER_S:g} script calls/s")

        def get(url: str) -> Callable[[], Any]:
            def call() -> Any:
                response = client.get(url)
                assert response.status_code == 200, (url, response.status_code)
                return response
            return call

        def old_overview_reads() -> Any:
            return mq.stats_many(mq.queues())

        pages = [("by name, first page", "/"),
                 ("sorted by failed", "/?sort=failed"),
                 ("sorted by oldest due wait", "/?sort=oldest"),
                 ("filtered (substring, 10 matches)", "/?filter=777"),
                 ("filtered by prefix, sorted by due", "/?filter=%5Etenant-09&sort=due"),
                 ("last page by name", f"/?offset={len(names) - 49}")]
        timed: dict[str, list[float]] = {label: [] for label, _ in pages}
        timed["baseline"] = []
        sizes = {label: len(get(url)().content) for label, url in pages}
        for _ in range(args.repeat):
            for label, url in pages:
                at = time.perf_counter()
                get(url)()
                timed[label].append((time.perf_counter() - at) * 1000)
            at = time.perf_counter()
            old_overview_reads()
            timed["baseline"].append((time.perf_counter() - at) * 1000)
        base = _percentiles(timed["baseline"])
        print(f"\n{'overview page, ' + str(args.queues + 1) + ' queues':44} {'server ms (median / p95)':>25} "
              f"{'HTML bytes':>11}")
        for label, _ in pages:
            median, p95 = _percentiles(timed[label])
            print(f"{label:44} {median:12.1f} / {p95:7.1f} {sizes[label]:>12,}")
        print(f"{'baseline: every queue read (the old render)':44} {base[0]:12.1f} / {base[1]:7.1f}")

        messages, largest, calls_s, commands_s = asyncio.run(_watch(cookie, args.sockets, args.watch_s, mq))
        print(f"\n{args.sockets} live overview sockets for {args.watch_s:g} s, nothing moving: {messages} messages, "
              f"largest {largest:,} bytes; Redis: {calls_s:.0f} script calls/s, {commands_s:.0f} commands/s "
              f"(census included)")
    finally:
        mq.close()
        server.cleanup()


if __name__ == "__main__":
    main()
