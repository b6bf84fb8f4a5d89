"""Search over a large failed set: time, jobs scanned per second, Redis time per step, and another client's PING.

Fills a private redis-server with N failed jobs (JSON payloads with a user
id and an order number, a timeout error), then, for each search, runs the
engine's bounded Lua steps (``queues.search``) and, interleaved with it, the
baseline a client without the script would write: ``ZSCAN`` the set in
batches of 1000 and ``HGET`` each payload (pipelined per batch), matching in
Python. A separate process PINGs the same server the whole time; SLOWLOG and
commandstats give the server's own time per step.

    python -m bench.search                      # 10^5 and 10^6 jobs
    python -m bench.search --sizes 100000 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import redis

from bench.retry_all import Probe, ServerTime, _prober, _summary
from queues import EchoMQ, QueueKeys
from queues.search import FieldFilter, Limits, Query, Search
from tests.support.redis_servers import RedisServer

QUEUE = "bench-search"
FILL_CHUNK = 5000

# Failed jobs as fail.lua leaves them, written in bulk (benchmark only).
_FILL = """
local prefix = KEYS[1]
local first, count, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
for n = first, first + count - 1 do
  local id = string.format('job%08d', n)
  local payload = string.format('{"user":{"id":%d,"plan":"pro"},"order":"ORD-%08d","items":[{"sku":"SKU-%d","qty":%d}]}',
    n % 1000, n, n % 97, n % 5 + 1)
  redis.call('HSET', prefix .. 'job:' .. id, 'state', 'failed', 'attempts', 1, 'payload', payload,
    'max_attempts', 1, 'created_at', now, 'claim_id', '5f1e2d3c4b5a6978', 'worker', 'bench-host:' .. (n % 8),
    'claimed_at', now, 'last_error', string.format('timeout after %d ms on host h%x', 2900 + n % 200, n % 4096),
    'finished_at', now + n)
  redis.call('ZADD', prefix .. 'failed', now + n, id)
end
return count
"""


def fill(client: redis.Redis, jobs: int, already: int) -> None:
    prefix = QueueKeys(QUEUE).prefix
    now = int(time.time() * 1000)
    fill_script = client.register_script(_FILL)
    for start in range(already, jobs, FILL_CHUNK):
        fill_script(keys=[prefix], args=[start, min(FILL_CHUNK, jobs - start), now])


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


def run_one(label: str, action: Callable[[], tuple[float, int, int]], server: RedisServer) -> dict[str, Any]:
    with ServerTime(server.client()) as server_time, Probe(_prober, server.port) as probe:
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
    options = parser.parse_args(argv)
    sizes = sorted(int(s) for s in options.sizes.split(","))
    load = os.getloadavg()
    print(f"# {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", flush=True)
    server = RedisServer().start()
    try:
        client = server.client(socket_timeout=None)
        print(f"redis-server {client.info()['redis_version']} on port {server.port}", flush=True)
        mq = EchoMQ.from_url(server.url, actor="bench", socket_timeout=None)
        filled = 0
        for size in sizes:
            started = time.monotonic()
            fill(client, size, filled)
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
        print(f"\n# load at the end {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
