"""Lock acquire + release: the single-instance lease against Redlock over 3 and 5 masters.

Private redis-servers on loopback, one per master. The baseline, measured in
the same run, is the bare ``SET NX PX`` + ``DEL`` pair on one server: what any
lock costs at least. Each figure is ``--rounds`` acquire+release pairs from one
caller (latency percentiles), then from ``--callers`` threads on distinct keys
(throughput).

    python -m bench.locks                       # 2000 rounds, 4 callers
    python -m bench.locks --rounds 5000 --callers 8
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import threading
import time
from collections.abc import Callable

from queues.locks import AsyncRedlock, Redlock, lock_clients
from tests.support.redis_servers import RedisServer


def _percentiles(samples: list[float]) -> str:
    cuts = statistics.quantiles(samples, n=100)
    return f"p50 {cuts[49] * 1e6:6.0f} µs  p99 {cuts[98] * 1e6:6.0f} µs"


def _one_caller(pair: Callable[[], None], rounds: int) -> tuple[float, str]:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        pair()
        samples.append(time.perf_counter() - start)
    return rounds / sum(samples), _percentiles(samples)


def _callers(make_pair: Callable[[int], Callable[[], None]], callers: int, rounds: int) -> float:
    pairs = [make_pair(i) for i in range(callers)]
    barrier = threading.Barrier(callers + 1)

    def run(pair: Callable[[], None]) -> None:
        barrier.wait()
        for _ in range(rounds):
            pair()
    threads = [threading.Thread(target=run, args=(p,)) for p in pairs]
    for t in threads:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return callers * rounds / (time.perf_counter() - start)


def _lock_pair(urls: list[str], key: str) -> Callable[[], None]:
    lock = Redlock(lock_clients(urls, timeout_s=0.05), key, ttl_ms=10_000, holder="bench")

    def pair() -> None:
        if lock.acquire(blocking=False) is None:
            raise SystemExit(f"benchmark invalid: {key} was not acquired")
        if lock.release() < lock.quorum:
            raise SystemExit(f"benchmark invalid: {key} was not released on a majority")
    return pair


def _bare_pair(url: str, key: str) -> Callable[[], None]:
    client = lock_clients([url])[0]

    def pair() -> None:
        if not client.set(key, "token", nx=True, px=10_000):
            raise SystemExit("benchmark invalid: bare SET NX failed")
        client.delete(key)
    return pair


def _async_rate(urls: list[str], rounds: int) -> tuple[float, str]:
    async def main() -> tuple[float, str]:
        lock = AsyncRedlock(lock_clients(urls), "bench:async", holder="bench")
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            if await lock.acquire(blocking=False) is None:
                raise SystemExit("benchmark invalid: async lock not acquired")
            await lock.release()
            samples.append(time.perf_counter() - start)
        return rounds / sum(samples), _percentiles(samples)
    return asyncio.run(main())


def _line(what: str, rate: float, note: str = "") -> None:
    print(f"{what:<58} {rate:>9,.0f} /s  {note}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument("--callers", type=int, default=4)
    args = parser.parse_args()
    servers = [RedisServer().start() for _ in range(5)]
    urls = [s.url for s in servers]
    try:
        print(f"# {platform.node()} python {platform.python_version()}; {args.rounds} acquire+release pairs per "
              f"figure; {args.callers} callers on distinct keys for throughput", flush=True)
        rate, note = _one_caller(_bare_pair(urls[0], "bench:bare"), args.rounds)
        _line("baseline: bare SET NX PX + DEL, 1 server, 1 caller", rate, note)
        _line(f"baseline: bare SET NX PX + DEL, 1 server, {args.callers} callers",
              _callers(lambda i: _bare_pair(urls[0], f"bench:bare:{i}"), args.callers, args.rounds))
        for n, name in ((1, "single-instance lease (Redlock over 1 master)"), (3, "Redlock over 3 masters"),
                        (5, "Redlock over 5 masters")):
            rate, note = _one_caller(_lock_pair(urls[:n], f"bench:{n}"), args.rounds)
            _line(f"{name}, 1 caller", rate, note)
            _line(f"{name}, {args.callers} callers",
                  _callers(lambda i, n=n: _lock_pair(urls[:n], f"bench:{n}:{i}"), args.callers, args.rounds))
        rate, note = _async_rate(urls, args.rounds)
        _line("AsyncRedlock over 5 masters, 1 caller", rate, note)
        servers[3].kill()
        servers[4].kill()
        rate, note = _one_caller(_lock_pair(urls, "bench:degraded"), args.rounds)
        _line("Redlock over 5 masters with 2 killed, 1 caller", rate, note)
    finally:
        for server in servers:
            server.cleanup()


if __name__ == "__main__":
    main()
