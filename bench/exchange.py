"""Order admissions per second: through the gateway, through the bare script, beside the raw EVALSHA ceiling.

One private redis-server serves every figure of a run. The ceiling is
redis-benchmark sending EVALSHA of ``return 1`` to it; the admit_order script's
own server-side cost is redis-benchmark sending one fixed admission again and
again (after the first, each is the duplicate path: every check, no write).
The Python figures admit distinct orders, from one connection, one call at a
time and in pipelines.

    python -m bench.exchange                  # 20000 orders per figure
    python -m bench.exchange --orders 50000 --pipeline 100
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import time
from collections.abc import Callable
from typing import Any

from exchange import parse_place
from exchange.orders import ADMIT_ORDER_SCRIPT, Admission, admit_order
from exchange.placement import admission_call
from queues import EchoMQ
from queues.scripts import script
from tests.support.redis_servers import REDIS_SERVER, RedisServer

REDIS_BENCHMARK = REDIS_SERVER.replace("redis-server", "redis-benchmark")


def _body(i: int) -> bytes:
    return json.dumps({"client_order_id": f"bench-{i}", "side": "buy" if i % 2 else "sell", "symbol": "ACME",
                       "type": "limit", "quantity": 1 + i % 50, "price": f"{100 + i % 700}.25",
                       "time_in_force": "GTC"}).encode()


def _line(what: str, count: int, seconds: float, note: str = "") -> None:
    print(f"{what:<72} {count / seconds:>10,.0f} /s  {note}", flush=True)


def _redis_benchmark(port: int, args: list[str], clients: int, pipeline: int, requests: int) -> tuple[float, str]:
    out = subprocess.run([REDIS_BENCHMARK, "-p", str(port), "-n", str(requests), "-c", str(clients),
                          "-P", str(pipeline), "--csv", *args], check=True, capture_output=True, text=True,
                         timeout=600).stdout
    # The test name column echoes the command, whose JSON breaks CSV quoting: read from the right.
    row = [cell.strip('"') for cell in out.strip().splitlines()[-1].rsplit(",", 7)[1:]]
    return float(row[0]), f"p50 {row[3]} ms"


def _admitted_all(results: list[Any], count: int) -> None:
    bad = [r for r in results if not (isinstance(r, Admission) and r.admitted)]
    if len(results) != count or bad:
        raise SystemExit(f"benchmark invalid: {len(bad)} of {len(results)} admissions did not admit: {bad[:3]}")


def _timed(mq: EchoMQ, action: Callable[[], list[Any]], count: int) -> float:
    mq.redis.flushall()
    start = time.perf_counter()
    results = action()
    seconds = time.perf_counter() - start
    _admitted_all(results, count)
    return seconds


def _in_chunks(mq: EchoMQ, calls: list[Any], size: int) -> list[Any]:
    results: list[Any] = []
    for start in range(0, len(calls), size):
        results += mq.run_many(calls[start:start + size])
    return results


def run(server: RedisServer, *, orders: int, pipeline: int, requests: int) -> None:
    mq = EchoMQ.from_url(server.url, actor="bench")
    bodies = [_body(i) for i in range(orders)]

    ceiling_sha = server.client().script_load("return 1")
    for clients, depth in ((1, 1), (1, pipeline), (16, 16)):
        rps, note = _redis_benchmark(server.port, ["EVALSHA", ceiling_sha, "0"], clients, depth, requests)
        print(f"{'redis-benchmark EVALSHA return 1, ' + f'{clients} conn, pipeline {depth}':<72} {rps:>10,.0f} /s  {note}",
              flush=True)

    s = script(ADMIT_ORDER_SCRIPT)
    server.client().script_load(s.source)
    fixed = parse_place(_body(0))
    call = admit_order(order_id=fixed.order_id, client_order_id=fixed.client_order_id, order=fixed.as_payload())
    keys = [k if isinstance(k, str) else k.decode() for k in call.keys]
    for clients, depth in ((1, 1), (1, pipeline)):
        rps, note = _redis_benchmark(server.port, ["EVALSHA", s.sha, str(len(keys)), *keys,
                                                   *(str(a) if not isinstance(a, bytes) else a.decode()
                                                     for a in call.args)], clients, depth, requests)
        print(f"{'redis-benchmark EVALSHA admit_order (duplicate path), ' + f'{clients} conn, pipeline {depth}':<72}"
              f" {rps:>10,.0f} /s  {note}", flush=True)

    start = time.perf_counter()
    commands = [parse_place(body) for body in bodies]
    _line("parse_place alone (no Redis)", orders, time.perf_counter() - start)

    calls = [admission_call(c, actor="bench") for c in commands]
    _line("bare script from Python, 1 conn, one call at a time", orders,
          _timed(mq, lambda: [mq.run(c) for c in calls], orders))
    _line(f"bare script from Python, 1 conn, pipelines of {pipeline}", orders,
          _timed(mq, lambda: _in_chunks(mq, calls, pipeline), orders))
    _line("gateway (parse_place + admit_order), 1 conn, one at a time", orders,
          _timed(mq, lambda: [mq.run(admission_call(parse_place(b), actor="bench")) for b in bodies], orders))
    _line(f"gateway (parse_place + admit_order), 1 conn, pipelines of {pipeline}", orders,
          _timed(mq, lambda: _in_chunks(mq, [admission_call(parse_place(b), actor="bench") for b in bodies],
                                        pipeline), orders))
    mq.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.exchange", description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=20_000, help="distinct orders per Python figure")
    parser.add_argument("--pipeline", type=int, default=100, help="calls per pipeline")
    parser.add_argument("--requests", type=int, default=200_000, help="requests per redis-benchmark figure")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    version = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True).stdout.split()
    print(f"# {platform.node()}: {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"python {platform.python_version()}, {' '.join(version[:3])}", flush=True)
    server = RedisServer().start()
    try:
        run(server, orders=args.orders, pipeline=args.pipeline, requests=args.requests)
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
