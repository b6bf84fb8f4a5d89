"""``python -m bench.async_profile``: where a lone async handler's time per job goes, beside a lone sync handler.

One private redis-server. Each round drains ``--jobs`` pending no-op jobs through the
:class:`~queues.worker.Worker` (``concurrency=1``, no prefetch) once per side, A B A B:

* ``async``: one async handler (the one-task engine) on the loop ``Worker.run`` uses (uvloop when installed);
* ``sync``: one sync handler (the one-thread engine), the baseline;
* ``async-before`` (with ``--before``): the async side with the client put back as it was before the two
  changes this profile led to (:func:`_before`), so that they are measured beside what they replaced.

For each side and round: the wall time per job (first handler call to last), this process's CPU per job
(``time.process_time``: the loop, the client, the kernel's share of its socket calls, every thread),
Redis's time per job (the ``usec`` of every command in ``INFO commandstats``: scripts, lease notes,
heartbeats, registry) and redis-server's own CPU per job (``used_cpu_user + used_cpu_sys``: the commands
and its socket work).

Then, unless ``--no-profile``, one profiled drain per round of each async side under cProfile with a CPU
clock (a send preempted by the redis-server it woke, or an epoll wait, is charged only what it ran), on
asyncio's own selector loop (every part of it is Python or a named syscall) and on the worker's loop
(uvloop, whose loop, epoll and socket calls are Cython that cProfile charges to the Python function that
called in). Each function's own CPU goes to one of:

* ``loop``: asyncio and selectors, the C futures and tasks, contextvars, the loop's timers;
* ``uvloop``: (worker's loop only) uvloop's own loop, epoll and reads;
* ``client``: ``queues/`` (the worker, its ledger, the client, the lean wire) and redis-py, hiredis;
* ``wire``: the socket calls (``send``, ``recv``; on uvloop, the writes it makes inside the wire's calls);
* ``wait``: in ``epoll`` (on the CPU clock: the syscall's own cost);
* ``handler``: the handler itself;
* ``other``: the rest (the bench's own watch loop, logging, ...).

A builtin's time goes to the category of the functions that called it (in proportion). cProfile's own
overhead inflates every Python call (and not uvloop's C), so the profiled CPU is several times the plain
drain's and its Python parts are over-weighted: the summary splits the plain drain's CPU (which ran on the
worker's loop) by each profile's shares, the worker loop's first. The load average is printed at each round.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio.cluster
import redis.cluster

from queues import ClaimedJob, EchoMQ
from queues.client import AsyncEchoMQ
from queues.worker import Worker, event_loop_factory

from .common import start_server
from .protocol import PAYLOAD

CATEGORIES = ("loop", "uvloop", "client", "wire", "wait", "handler", "other")


@dataclass
class Drain:
    wall_us: float
    cpu_us: float
    redis_us: float
    redis_cpu_us: float
    profile: dict[str, float] | None = None


class _Counter:
    """The no-op handler's bookkeeping: when the last job's handler returned."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.seen = 0
        self.first = self.last = 0.0

    def note(self) -> None:
        self.seen += 1
        if self.seen == 1:
            self.first = time.perf_counter()
        if self.seen == self.jobs:
            self.last = time.perf_counter()


def _async_handler(counter: _Counter) -> Callable[[ClaimedJob], Any]:
    async def noop_async_handler(job: ClaimedJob) -> None:
        counter.note()

    return noop_async_handler


def _sync_handler(counter: _Counter) -> Callable[[ClaimedJob], Any]:
    def noop_sync_handler(job: ClaimedJob) -> None:
        counter.note()

    return noop_sync_handler


async def _serve_until_done(url: str, queue: str, handler: Any, counter: _Counter) -> None:
    worker = Worker(queue=queue, handler=handler, concurrency=1, url=url, release="bench")
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    while worker.stats.completed < counter.jobs:
        if serving.done():
            raise RuntimeError(f"the worker stopped early: {serving.exception()}")
        await asyncio.sleep(0.005)
    stop.set()
    stats = await serving
    if (stats.completed, stats.failed, stats.lost) != (counter.jobs, 0, 0):
        raise RuntimeError(f"processing went wrong: {stats}")


def _redis_totals(client: redis.Redis) -> tuple[float, float]:
    """Every command's usec, and redis-server's CPU (µs), so far."""
    commands: Any = client.info("commandstats")
    cpu: Any = client.info("cpu")
    usec = sum(float(stat["usec"]) for stat in commands.values())
    return usec, (float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"])) * 1e6


def drain(url: str, client: redis.Redis, jobs: int, kind: str, *, loop: str = "worker",
          profiled: bool = False) -> Drain:
    """Drains ``jobs`` no-op jobs with one handler of ``kind`` ("async" or "sync") on a flushed server."""
    client.flushall()
    mq = EchoMQ.from_url(url, actor="bench")
    queue = f"bench-profile-{kind}"
    try:
        mq.enqueue_many(queue, [PAYLOAD] * jobs)
    finally:
        mq.close()
    counter = _Counter(jobs)
    handler = _async_handler(counter) if kind == "async" else _sync_handler(counter)
    factory = event_loop_factory() if loop == "worker" else asyncio.new_event_loop
    # CPU time, not wall time: a call that is preempted (a send that wakes redis-server on this core) or
    # blocked (epoll) is charged only what it ran.
    profiler = cProfile.Profile(time.process_time) if profiled else None
    client.config_resetstat()
    usec_before, cpu_before = _redis_totals(client)
    cpu_start = time.process_time()
    with asyncio.Runner(loop_factory=factory) as runner:
        if profiler is not None:
            profiler.enable()
        try:
            runner.run(_serve_until_done(url, queue, handler, counter))
        finally:
            if profiler is not None:
                profiler.disable()
    cpu = time.process_time() - cpu_start
    usec_after, cpu_after = _redis_totals(client)
    # The first job's claim is not timed: the worker's start (connect, register) is not a job's cost.
    wall = counter.last - counter.first
    per = 1e6 / (jobs - 1)
    return Drain(wall * per, cpu * 1e6 / jobs, (usec_after - usec_before) / jobs, (cpu_after - cpu_before) / jobs,
                 _categorize(pstats.Stats(profiler), jobs, uvloop=factory is not asyncio.new_event_loop)
                 if profiler is not None else None)


# Classifying a profile --------------------------------------------------------------------------------------

_WAIT = ("'poll' of 'select.epoll'", "'select' of 'select.epoll'", "'poll' of 'select.poll'")
_WIRE = ("of '_socket.socket' objects", "'sendall'", "'recv_into'")
_LOOP_FILES = ("/asyncio/", "/selectors.py", "/contextvars", "/heapq.py", "uvloop")
_LOOP_BUILTINS = ("_asyncio.", "_contextvars.", "uvloop", "_heapq.", "built-in method time.monotonic",
                  "'run' of 'Context'", "'run' of '_contextvars.Context'")
_CLIENT_FILES = ("/queues/", "/redis/", "hiredis")
_CLIENT_BUILTINS = ("hiredis",)
_STDLIB = sysconfig.get_paths()["stdlib"]


def _name(func: tuple[str, int, str]) -> str:
    return func[2] if func[0] == "~" else f"{func[0]}:{func[2]}"


# uvloop's loop and transports are Cython, which cProfile does not see as calls: their time is the own time
# of the Python function that called into them.
_UVLOOP_RUN = ("/asyncio/runners.py", "run")
_UVLOOP_WRITES = {("/queues/wire.py", "call"), ("/queues/wire.py", "send")}


def _own_category(func: tuple[str, int, str], uvloop: bool) -> str | None:
    """A function's category from its file or name, or None for a builtin that goes with its callers."""
    filename, _, name = func
    if uvloop and filename.endswith(_UVLOOP_RUN[0]) and name == _UVLOOP_RUN[1]:
        return "uvloop"
    if uvloop and any(filename.endswith(path) and name == method for path, method in _UVLOOP_WRITES):
        return "wire"
    if filename == "~":
        if any(mark in name for mark in _WAIT):
            return "wait"
        if any(mark in name for mark in _WIRE):
            return "wire"
        if any(mark in name for mark in _LOOP_BUILTINS):
            return "loop"
        if any(mark in name for mark in _CLIENT_BUILTINS):
            return "client"
        return None
    if "noop_async_handler" in name or "noop_sync_handler" in name or name == "note":
        return "handler"
    if any(mark in filename for mark in _LOOP_FILES):
        return "loop"
    if any(mark in filename for mark in _CLIENT_FILES):
        return "client"
    if filename.startswith((_STDLIB, "<frozen")):
        return None  # typing's isinstance checks, dataclasses, enum...: whoever called them
    return "other"


def _categorize(stats: pstats.Stats, jobs: int, *, uvloop: bool) -> dict[str, float]:
    """µs per job in each category (a builtin's own time split among its callers' categories)."""
    table: Any = stats.stats  # type: ignore[attr-defined]
    memo: dict[tuple[str, int, str], dict[str, float]] = {}

    def shares(func: tuple[str, int, str], depth: int = 0) -> dict[str, float]:
        """How ``func``'s own time divides among the categories (fractions summing to 1)."""
        if func in memo:
            return memo[func]
        own = _own_category(func, uvloop)
        if own is not None or depth > 20 or func not in table:
            result = {own or "other": 1.0}
        else:
            callers: dict[Any, tuple[Any, ...]] = table[func][4]
            weights = {caller: float(entry[2]) for caller, entry in callers.items()}
            total = sum(weights.values())
            if not callers or total <= 0:
                # No caller seen (a C callback of the loop) or no time: it goes with the loop's own.
                result = {"loop": 1.0}
            else:
                result = {}
                for caller, weight in weights.items():
                    for category, part in shares(caller, depth + 1).items():
                        result[category] = result.get(category, 0.0) + part * weight / total
        memo[func] = result
        return result

    per_job = {category: 0.0 for category in CATEGORIES}
    for func, entry in table.items():
        tottime = float(entry[2])
        for category, part in shares(func).items():
            per_job[category] += tottime * part * 1e6 / jobs
    return per_job


def _top(stats: pstats.Stats, count: int) -> list[tuple[str, float]]:
    table: Any = stats.stats  # type: ignore[attr-defined]
    ranked = sorted(table.items(), key=lambda item: -float(item[1][2]))
    return [(_name(func), float(entry[2])) for func, entry in ranked[:count]]


# The change measured beside what it replaced ----------------------------------------------------------------

def _uncached_is_cluster_client(client: object) -> bool:
    return isinstance(client, (redis.cluster.RedisCluster, redis.asyncio.cluster.RedisCluster))


def _before() -> Callable[[], None]:
    """Puts back the async client as it was before this bench's profile led to two changes: a claim's lease
    note sent in a task of its own through redis-py's pool (now one write on the lean wire), and
    ``is_cluster_client`` asked with ``isinstance`` each time (now kept per class). Returns what undoes it."""
    import queues.client as module
    import queues.lease_index as index_module

    current = AsyncEchoMQ._hint_leases
    cached = module.is_cluster_client
    module.is_cluster_client = index_module.is_cluster_client = _uncached_is_cluster_client

    async def hint_in_a_task(self: AsyncEchoMQ, calls: list[Any], results: list[Any]) -> None:
        hints = module._lease_hints(calls, results, self.redis)
        if hints:
            task = asyncio.create_task(self._send_hints(hints))
            self._hints.add(task)
            task.add_done_callback(self._hints.discard)

    AsyncEchoMQ._hint_leases = hint_in_a_task  # type: ignore[method-assign]

    def undo() -> None:
        AsyncEchoMQ._hint_leases = current  # type: ignore[method-assign]
        module.is_cluster_client = index_module.is_cluster_client = cached

    return undo


def _run_side(url: str, client: redis.Redis, jobs: int, side: str, **options: Any) -> Drain:
    undo = _before() if side == "async-before" else None
    try:
        return drain(url, client, jobs, "sync" if side == "sync" else "async", **options)
    finally:
        if undo is not None:
            undo()


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def _print_profile(label: str, profile: dict[str, float], plain_cpu: float) -> None:
    cells = "  ".join(f"{category} {profile[category]:6.1f}" for category in CATEGORIES)
    print(f"  profile {label:<26} {cells}  (sum {sum(profile.values()):.1f} us/job of CPU; "
          f"{plain_cpu:.1f} unprofiled)",
          flush=True)


def _print_split(side: str, loop: str, plain: list[Drain], profiled: list[Drain]) -> None:
    """Per job: the plain drain's wall, its CPU split by the profile's shares, Redis, and what is left."""
    if not profiled:
        return
    wall = statistics.median(r.wall_us for r in plain)
    cpu = statistics.median(r.cpu_us for r in plain)
    redis_us = statistics.median(r.redis_us for r in plain)
    redis_cpu = statistics.median(r.redis_cpu_us for r in plain)
    shares = {c: statistics.median(r.profile[c] / sum(r.profile.values()) for r in profiled if r.profile)
              for c in CATEGORIES}
    cells = ", ".join(f"{c} {cpu * shares[c]:.1f}" for c in CATEGORIES if shares[c] > 0)
    print(f"{side} (CPU split by the {loop} profile's shares): wall {wall:.1f} us/job = this process's CPU "
          f"{cpu:.1f} ({cells}) + redis-server's CPU "
          f"{redis_cpu:.1f} (its commands {redis_us:.1f}) + the rest {wall - cpu - redis_cpu:.1f} "
          "(waiting for a core, wake-ups; negative where they overlap)", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.async_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000, help="jobs per drain")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", action="store_true",
                        help="also drain with the async client as it was before (see _before)")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile drains")
    parser.add_argument("--top", type=int, default=0, help="print the N functions with the most own time")
    parser.add_argument("--top-loop", choices=("asyncio", "worker"), default="asyncio",
                        help="the loop of the --top drain")
    args = parser.parse_args()
    sides = ["async", "sync"] + (["async-before"] if args.before else [])
    profiled_sides = ["async"] + (["async-before"] if args.before else [])
    print(f"# load at the start {_load()}; {args.jobs} jobs per drain, {args.rounds} rounds", flush=True)
    server = start_server()
    client = server.client()
    plain: dict[str, list[Drain]] = {side: [] for side in sides}
    profiles: dict[tuple[str, str], list[Drain]] = {}
    try:
        drain(server.url, client, min(args.jobs, 500), "async")  # script cache, imports
        for round_no in range(1, args.rounds + 1):
            print(f"round {round_no}: load {_load()}", flush=True)
            for side in sides:
                result = _run_side(server.url, client, args.jobs, side)
                plain[side].append(result)
                print(f"  {side:<13} wall {result.wall_us:6.1f} us/job ({1e6 / result.wall_us:,.0f} jobs/s)  "
                      f"python cpu {result.cpu_us:6.1f}  redis commands {result.redis_us:5.1f}  "
                      f"redis cpu {result.redis_cpu_us:5.1f}", flush=True)
            if args.no_profile:
                continue
            for side in profiled_sides:
                for loop in ("asyncio", "worker"):
                    result = _run_side(server.url, client, args.jobs, side, loop=loop, profiled=True)
                    profiles.setdefault((side, loop), []).append(result)
                    assert result.profile is not None
                    _print_profile(f"{side}, {'asyncio loop' if loop == 'asyncio' else 'worker loop'}",
                                   result.profile, plain[side][-1].cpu_us)
        print(f"# medians (load at the end {_load()})", flush=True)
        for side, results in plain.items():
            print(f"{side:<13} wall {statistics.median(r.wall_us for r in results):6.1f} us/job "
                  f"({statistics.median(1e6 / r.wall_us for r in results):,.0f} jobs/s; rounds "
                  + " / ".join(f"{1e6 / r.wall_us:,.0f}" for r in results) + ")  "
                  f"python cpu {statistics.median(r.cpu_us for r in results):.1f}  "
                  f"redis commands {statistics.median(r.redis_us for r in results):.1f}  "
                  f"redis cpu {statistics.median(r.redis_cpu_us for r in results):.1f}", flush=True)
        for other in sides[1:]:
            ratios = [a.wall_us / b.wall_us for a, b in zip(plain[other], plain["async"])]
            print(f"async / {other} jobs/s, per round: " + ", ".join(f"{r:.2f}" for r in ratios)
                  + f"; median {statistics.median(ratios):.2f}", flush=True)
        for (side, loop), results in profiles.items():
            median_profile = {c: statistics.median(r.profile[c] for r in results if r.profile) for c in CATEGORIES}
            _print_profile(f"{side}, {'asyncio loop' if loop == 'asyncio' else 'worker loop'}", median_profile,
                           statistics.median(r.cpu_us for r in plain[side]))
        for side in profiled_sides:
            for loop in ("worker", "asyncio"):
                _print_split(side, f"{loop} loop", plain[side], profiles.get((side, loop), []))
        if args.top:
            profiler = cProfile.Profile(time.process_time)
            counter = _Counter(args.jobs)
            client.flushall()
            mq = EchoMQ.from_url(server.url, actor="bench")
            mq.enqueue_many("bench-top", [PAYLOAD] * args.jobs)
            mq.close()
            factory = asyncio.new_event_loop if args.top_loop == "asyncio" else event_loop_factory()
            with asyncio.Runner(loop_factory=factory) as runner:
                profiler.enable()
                runner.run(_serve_until_done(server.url, "bench-top", _async_handler(counter), counter))
                profiler.disable()
            for name, seconds in _top(pstats.Stats(profiler), args.top):
                print(f"  {seconds * 1e6 / args.jobs:7.2f} us/job  {name}", flush=True)
    finally:
        client.close()
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
