"""Search over a large failed set: time, jobs scanned per second, Redis time per step, and another client's PING.

Fills a private redis-server with N failed jobs through the real moves
(JSON payloads with a user id and an order number; five causes of failure
with varying particulars), then, for each search, runs the
engine's bounded Lua steps (``queues.search``) and, interleaved with it, the
baseline a client without the script would write: ``ZSCAN`` the set in
batches of 1000 and ``HGET`` each payload (pipelined per batch), matching in
Python. A separate process PINGs the same server the whole time; SLOWLOG and
commandstats give the server's own time per step. Last, the failure groups:
the read the console makes, the failures page through Django, and the
baseline of grouping per view (every failed job's error read by the client).

    python -m bench.search                      # 10^5 and 10^6 jobs
    python -m bench.search --sizes 100000 --rounds 1
    python -m bench.search --realtime           # redis-server and the PING client at SCHED_FIFO (root only)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import redis

from bench.retry_all import Probe, ServerTime, _prober, _summary
from queues import EchoMQ, QueueKeys, moves
from queues.failures import groups
from queues.search import FieldFilter, Limits, Query, Search
from tests.support.redis_servers import RedisServer

QUEUE = "bench-search"
FILL_CHUNK = 10_000

CAUSES = ("timeout after {n} ms on host h{h}x", "card declined for customer {n}", "KeyError: 'field_{m}'",
          "connection refused (10.0.{m}.{h}:6379)", "HTTP 503 from /v1/orders/{n}")


def _cause(n: int) -> str:
    return CAUSES[n % 5].format(n=n, h=n % 97, m=n % 13)


def payload(n: int) -> bytes:
    return (f'{{"user":{{"id":{n % 1000},"plan":"pro"}},"order":"ORD-{n:08d}",'
            f'"items":[{{"sku":"SKU-{n % 97}","qty":{n % 5 + 1}}}]}}').encode()


def fill(mq: EchoMQ, jobs: int, already: int) -> None:
    """Failed jobs made by the real moves (enqueue, claim, fail), so the failure groups are the moves' own."""
    for start in range(already, jobs, FILL_CHUNK):
        count = min(FILL_CHUNK, jobs - start)
        ids = [f"job{n:08d}" for n in range(start, start + count)]
        for chunk in range(0, count, 1000):
            part = ids[chunk:chunk + 1000]
            mq.run(moves.enqueue_many(QUEUE, [payload(int(i[3:])) for i in part], job_ids=part, max_attempts=1))
            claimed = mq.claim(QUEUE, lease_ms=600_000, count=len(part))
            results = mq.run_many([moves.fail(QUEUE, j.id, j.token, error=_cause(int(j.id[3:])), backoff_ms=0,
                                              actor="bench") for j in claimed])
            errors = [r for r in results if isinstance(r, Exception)]
            if errors:
                raise errors[0]


def engine_search(mq: EchoMQ, query: Query) -> tuple[float, int, int]:
    engine = Search(query, [QUEUE], Limits(max_matches=None, seconds=None))
    started = time.perf_counter()
    matched = sum(len(step.matches) for step in engine.steps(mq))
    return time.perf_counter() - started, matched, engine.scanned


def baseline_search(client: redis.Redis, matches: Callable[[bytes], bool] | None,
                    id_match: str | None = None) -> tuple[float, int, int]:
    """What a client does without a script: ZSCAN the set, HGET every payload, match in Python.

    For an id prefix it needs no payload: ``ZSCAN MATCH prefix*`` filters on the server.
    """
    keys = QueueKeys(QUEUE)
    started = time.perf_counter()
    matched = scanned = 0
    cursor = 0
    while True:
        cursor, entries = client.zscan(keys.failed, cursor, count=1000, match=id_match)
        scanned += 1000 if id_match else 0
        if id_match:
            matched += len(entries)
        else:
            pipe = client.pipeline(transaction=False)
            for member, _ in entries:
                pipe.hget(keys.prefix + "job:" + member.decode(), "payload")
            for payload in pipe.execute():
                scanned += 1
                if payload is not None and matches is not None and matches(payload):
                    matched += 1
        if cursor == 0:
            break
    return time.perf_counter() - started, matched, scanned


def _json_user(user_id: int) -> Callable[[bytes], bool]:
    def matches(payload: bytes) -> bool:
        try:
            return json.loads(payload).get("user", {}).get("id") == user_id
        except (ValueError, AttributeError):
            return False
    return matches


def searches(size: int) -> list[tuple[str, Query, Callable[[bytes], bool] | None, str | None]]:
    order = f"ORD-{size // 2 + 7:08d}"
    return [
        (f"payload substring {order!r} (1 match)", Query("failed", payload=order), lambda p: order.encode() in p,
         None),
        ("id prefix 'job0000' (10,000 matches)", Query("failed", id_prefix="job0000"), None, "job0000*"),
        ("JSON field user.id=777 (0.1 % match)", Query("failed", field=FieldFilter.parse("user.id=777")),
         _json_user(777), None),
    ]


def measure_groups(mq: EchoMQ, client: redis.Redis, size: int, rounds: int) -> None:
    """The failure groups as the console reads them (one script), beside computing them per view
    (every failed job's last_error read and grouped by the client), interleaved."""
    print("failure groups:", flush=True)
    for _ in range(max(rounds, 1)):
        samples = []
        for _ in range(20):
            started = time.perf_counter()
            read = mq.run(groups(QUEUE))
            samples.append((time.perf_counter() - started) * 1000)
        print(f"  groups read: {len(read.groups)} groups holding {read.grouped:,} of {read.failed:,} failed; "
              f"median {statistics.median(samples):.2f} ms, worst {max(samples):.2f} ms", flush=True)
        page = _page_ms(client.connection_pool.connection_kwargs["port"])
        print(f"  failures page through Django: median {statistics.median(page):.1f} ms, worst {max(page):.1f} ms",
              flush=True)
        started = time.perf_counter()
        keys = QueueKeys(QUEUE)
        counted: dict[bytes, int] = {}
        cursor = 0
        while True:
            cursor, entries = client.zscan(keys.failed, cursor, count=1000)
            pipe = client.pipeline(transaction=False)
            for member, _ in entries:
                pipe.hget(keys.prefix + "job:" + member.decode(), "last_error")
            for error in pipe.execute():
                key = (error or b"").split(b" ", 2)[0]
                counted[key] = counted.get(key, 0) + 1
            if cursor == 0:
                break
        print(f"  baseline, grouped per view (ZSCAN + HGET last_error of every failed job, crude key): "
              f"{(time.perf_counter() - started) * 1000:,.0f} ms", flush=True)


_DJANGO: dict[str, Any] = {}


def _page_ms(port: int, times: int = 10) -> list[float]:
    if not _DJANGO:
        workdir = tempfile.mkdtemp(prefix="emq-bench-search-")
        os.environ.update({"DJANGO_SETTINGS_MODULE": "tests.settings", "EMQ_REDIS_URL": f"redis://127.0.0.1:{port}/0",
                           "DATABASE_URL": f"sqlite:///{workdir}/db.sqlite3"})
        import django

        django.setup()
        from django.conf import settings
        from django.core.management import call_command
        from django.test import Client

        from dashboard.roles import VIEWERS, user_create

        settings.ALLOWED_HOSTS = ["testserver"]
        settings.EMQ_REDIS_URL = f"redis://127.0.0.1:{port}/0"
        call_command("migrate", verbosity=0)
        browser = Client()
        browser.force_login(user_create(username="bench", password="bench-password", role=VIEWERS))
        _DJANGO["client"] = browser
    samples = []
    for _ in range(times):
        started = time.perf_counter()
        status = _DJANGO["client"].get(f"/failures/?q={QUEUE}").status_code
        samples.append((time.perf_counter() - started) * 1000 if status == 200 else float("inf"))
    return samples


def _realtime_prober(port: int, stop: Any, ready: Any, out: Any) -> None:
    # On a shared machine a PING client that waits for a CPU measures the OS, not Redis.
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    _prober(port, stop, ready, out)


_PROBER: list[Callable[..., None]] = [_prober]


def run_one(label: str, action: Callable[[], tuple[float, int, int]], server: RedisServer) -> dict[str, Any]:
    with ServerTime(server.client()) as server_time, Probe(_PROBER[0], server.port) as probe:
        time.sleep(0.2)
        seconds, matched, scanned = action()
        pings = probe.samples()
    worst = max(pings) if pings else float("nan")
    print(f"  {label:<9} {seconds:7.2f} s  {scanned / seconds:>11,.0f} jobs/s  {matched:>6} matched  "
          f"worst PING {worst:6.2f} ms", flush=True)
    print(f"            PING: {_summary(pings)}", flush=True)
    print(f"            server: {server_time.summary()}", flush=True)
    return {"seconds": seconds, "matched": matched, "scanned": scanned, "worst_ping_ms": worst}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.search", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--rounds", type=int, default=2, help="engine/baseline pairs per search, interleaved")
    parser.add_argument("--realtime", action="store_true",
                        help="run redis-server and the PING client at SCHED_FIFO priority (chrt, root only), so that "
                             "on a shared machine the worst PING shows Redis's share, not the scheduler's")
    options = parser.parse_args(argv)
    sizes = sorted(int(s) for s in options.sizes.split(","))
    load = os.getloadavg()
    print(f"# {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
          + (" (redis-server and the PING client at SCHED_FIFO 50)" if options.realtime else ""), flush=True)
    server = RedisServer().start()
    if options.realtime:
        assert server.process is not None
        subprocess.run(["chrt", "-f", "-p", "50", str(server.process.pid)], check=True)
        _PROBER[0] = _realtime_prober
    try:
        client = server.client(socket_timeout=None)
        print(f"redis-server {client.info()['redis_version']} on port {server.port}", flush=True)
        mq = EchoMQ.from_url(server.url, actor="bench", socket_timeout=None)
        filled = 0
        for size in sizes:
            started = time.monotonic()
            fill(mq, size, filled)
            filled = size
            print(f"\n## {size:,} failed jobs (filled in {time.monotonic() - started:.1f} s; "
                  f"used memory {client.info('memory')['used_memory_human']})", flush=True)
            for label, query, predicate, id_match in searches(size):
                print(f"{label}:", flush=True)
                for round_ in range(options.rounds):
                    # Interleaved, and the first side alternates, so a drift in load favours neither.
                    sides: list[tuple[str, Callable[[], tuple[float, int, int]]]] = [
                        ("engine", lambda q=query: engine_search(mq, q)),
                        ("baseline", lambda p=predicate, m=id_match: baseline_search(client, p, m)),
                    ]
                    for name, action in (sides if round_ % 2 == 0 else sides[::-1]):
                        run_one(name, action, server)
            measure_groups(mq, client, size, options.rounds)
        print(f"\n# load at the end {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
