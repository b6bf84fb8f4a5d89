"""Bounded reads: a page of large payloads, and a job's history, beside the scripts they replaced.

Page: 50 done jobs whose payloads are 1 KiB, 64 KiB or 1 MiB, read by today's page.lua and by the
page.lua of a baseline commit (``git show BASE:queues/lua/page.lua``, expanded the same way), on one
private redis-server, in interleaved rounds. Figures: Redis's own time per read (the mean of the whole
script from INFO commandstats, the longest from SLOWLOG), and the worst PING another client saw while
5 reader processes read that page (a stand-in for 5 live tabs): each once every 200 ms, the pace at
which the console re-renders a live page, and each in a tight loop (harsher than any tab; on 2 cores
it also measures CPU contention).

History: one job's history on a queue that saw 10^2 or 10^6 events, by the history read (its own
hash field) and by the old way (XREVRANGE of the newest 10,000 events, filtered): Redis time, wall
time and how many of the job's moves each finds.

    python -m bench.bounded_reads                  # baseline ecdba80, 3 rounds of 3 s per reader load
    python -m bench.bounded_reads --baseline main --rounds 2 --seconds 2
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from bench.retry_all import Probe, _prober
from queues import EchoMQ, QueueKeys
from queues.scripts import script
from tests.support.redis_servers import RedisServer

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"1 KiB": 1024, "64 KiB": 64 * 1024, "1 MiB": 1024 * 1024}
ROWS = 50
# A live page is re-rendered at most once per publish interval of the follower (0.2 s).
TAB_PACE_S = 0.2
_INCLUDE = re.compile(r"^--@include ([\w.]+)$", re.MULTILINE)


def old_source(commit: str, name: str) -> str:
    """A script as it was at ``commit``, its includes expanded as queues.scripts does."""
    def text(file: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:queues/lua/{file}"], check=True,
                              capture_output=True, text=True).stdout

    def expand(file: str) -> str:
        return _INCLUDE.sub(lambda m: expand(m.group(1)).rstrip("\n"), text(file))

    return expand(f"{name}.lua")


def _page_args(queue: str) -> list[Any]:
    return [*QueueKeys(queue).script_keys(None), "done", "asc", "offset", 0, "", ROWS, 120]


def _reader(port: int, sha: str, queue: str, pace_s: float, stop: Any, ready: Any, out: Any) -> None:
    """A page reader: one read every ``pace_s`` seconds (0: as fast as it can)."""
    client = redis.Redis(port=port, socket_timeout=None)
    args = _page_args(queue)
    reads = 0
    ready.set()
    while not stop.is_set():
        started = time.perf_counter()
        client.evalsha(sha, 6, *args)
        reads += 1
        if pace_s:
            time.sleep(max(pace_s - (time.perf_counter() - started), 0))
    out.send([float(reads)])


def _seed_pages(mq: EchoMQ) -> dict[str, str]:
    queues = {}
    for label, size in SIZES.items():
        queue = "bench-page-" + label.replace(" ", "").lower()
        payload = ('{"blob": "' + "x" * (size - 12) + '"}').encode()
        for _ in range(0, ROWS, 10):
            ids = mq.enqueue_many(queue, [payload] * 10)
            for job in mq.claim(queue, count=10, lease_ms=600_000):
                mq.complete(queue, job.id, job.token)
            assert len(ids) == 10
        queues[label] = queue
    return queues


def _redis_ms_per_read(client: redis.Redis, sha: str, queue: str, reads: int) -> tuple[float, float]:
    """Redis's own time per read: the mean from INFO commandstats (the whole script, its inner commands
    included), and the longest from SLOWLOG (reads over 0.1 ms; SLOWLOG at 0 would log every command
    inside the script too, and its logging would inflate the very time it measures)."""
    client.config_set("slowlog-log-slower-than", 100)
    client.config_set("slowlog-max-len", 10_000)
    client.slowlog_reset()
    client.config_resetstat()
    args = _page_args(queue)
    for _ in range(reads):
        client.evalsha(sha, 6, *args)
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    mean = float(stats.get("usec", 0)) / max(int(stats.get("calls", 1)), 1) / 1000
    slow = [entry["duration"] / 1000 for entry in client.slowlog_get(10_000)
            if bytes(entry["command"]).upper().startswith(b"EVALSHA")]
    return mean, max(slow, default=0.0)


def _loaded(port: int, sha: str, queue: str, seconds: float, pace_s: float) -> tuple[float, float, float]:
    """Worst and p99 PING (ms) of another client while 5 readers read the page; and reads per second."""
    readers = [Probe(_reader, port, sha, queue, pace_s) for _ in range(5)]
    for reader in readers:
        reader.__enter__()
    with Probe(_prober, port) as probe:
        time.sleep(seconds)
        pings = probe.samples()
    reads = sum(reader.samples()[0] for reader in readers)
    for reader in readers:
        reader.__exit__()
    ordered = sorted(pings)
    return ordered[-1], ordered[int(len(ordered) * 0.99)], reads / seconds


def bench_pages(server: RedisServer, baseline: str, rounds: int, seconds: float) -> list[str]:
    client = server.client()
    mq = EchoMQ.from_url(server.url, actor="bench")
    queues = _seed_pages(mq)
    shas = {"new": client.script_load(script("page").source), "old": client.script_load(old_source(baseline, "page"))}
    lines = []
    for label, queue in queues.items():
        for side in ("old", "new"):
            _redis_ms_per_read(client, shas[side], queue, 3)  # warm
        redis_ms: dict[str, list[tuple[float, float]]] = {"old": [], "new": []}
        loaded: dict[tuple[str, float], list[tuple[float, float, float]]] = {}
        for _ in range(rounds):
            for side in ("old", "new"):  # interleaved, so a drift cannot favour one side
                redis_ms[side].append(_redis_ms_per_read(client, shas[side], queue, 10 if label == "1 MiB" else 100))
                for pace in (TAB_PACE_S, 0.0):
                    loaded.setdefault((side, pace), []).append(_loaded(server.port, shas[side], queue, seconds, pace))
        for side in ("old", "new"):
            lines.append(f"page of {ROWS} x {label:>6} {side} ({'page.lua@' + baseline if side == 'old' else 'page.lua'}): "
                         f"Redis {statistics.median(m for m, _ in redis_ms[side]):8.3f} ms/read "
                         f"(longest {max(w for _, w in redis_ms[side]):8.3f})")
            for pace in (TAB_PACE_S, 0.0):
                runs = loaded[(side, pace)]
                what = "5 readers every 200 ms (live tabs' pace)" if pace else "5 readers in a loop"
                lines.append(f"    {what:<42} worst PING {max(r[0] for r in runs):8.2f} ms, "
                             f"p99 {statistics.median(r[1] for r in runs):7.2f} ms, "
                             f"{statistics.median(r[2] for r in runs):7.0f} reads/s")
            print("\n".join(lines[-3:]), flush=True)
    mq.close()
    return lines


def _old_history(client: redis.Redis, queue: str, job_id: str) -> int:
    entries = client.xrevrange(QueueKeys(queue).events, "+", "-", count=10_000)
    return sum(1 for _, data in entries if data.get(b"id") == job_id.encode())


def bench_history(server: RedisServer, events: int, repeats: int) -> list[str]:
    client = server.client()
    client.flushall()
    mq = EchoMQ.from_url(server.url, actor="bench")
    queue = "bench-history"
    keys = QueueKeys(queue)
    mq.enqueue(queue, "{}", job_id="watched", max_attempts=5)
    for _ in range(2):
        [job] = mq.claim(queue)
        mq.fail(queue, "watched", job.token, error="try again", backoff_ms=0)
    # The rest of the queue's traffic: events of other jobs, appended as the moves append them.
    pipe = client.pipeline(transaction=False)
    for n in range(events - 5):
        pipe.xadd(keys.events, {"move": "claim", "id": f"other-{n}", "from": "pending", "to": "active",
                                "attempts": "1", "actor": "bench", "ts": "0"}, maxlen=10_000, approximate=True)
        if n % 10_000 == 9_999:
            pipe.execute()
    pipe.execute()
    lines = []
    client.script_load(script("history").source)
    for label, run in (("old (XREVRANGE 10,000, filtered)", lambda: _old_history(client, queue, "watched")),
                       ("new (history read)", lambda: len(mq.job_events(queue, "watched")))):
        client.config_resetstat()
        walls, found = [], 0
        for _ in range(repeats):
            started = time.perf_counter()
            found = run()
            walls.append((time.perf_counter() - started) * 1000)
        stats = client.info("commandstats")
        used = [stats[name] for name in ("cmdstat_xrevrange", "cmdstat_evalsha") if name in stats]
        redis_ms = sum(float(s["usec"]) for s in used) / max(sum(int(s["calls"]) for s in used), 1) / 1000
        lines.append(f"history at {events:>9,} events, {label:<34}: Redis {redis_ms:7.3f} ms, "
                     f"wall {statistics.median(walls):7.3f} ms, moves of the job found: {found} of 5")
        print(lines[-1], flush=True)
    mq.close()
    return lines


def _run_many(client: redis.Redis, sha: str, calls: list[tuple[list[str], list[Any]]]) -> list[Any]:
    replies: list[Any] = []
    for start in range(0, len(calls), 1000):
        pipe = client.pipeline(transaction=False)
        for keys, args in calls[start:start + 1000]:
            pipe.evalsha(sha, len(keys), *keys, *args)
        replies += pipe.execute()
    return replies


def bench_memory(server: RedisServer, baseline: str, jobs: int) -> list[str]:
    """Memory per job (used_memory over ``jobs`` jobs, the sets' and stream's share included) with a
    28-byte payload, pending and then done, written by today's scripts and by the baseline's."""
    client = server.client()
    lines = []
    payload = '{"to": "user1@example.com"}'.ljust(28)
    for side in ("old", "new"):
        client.flushall()
        source = {name: old_source(baseline, name) if side == "old" else script(name).source
                  for name in ("enqueue", "claim", "complete")}
        sha = {name: client.script_load(text) for name, text in source.items()}
        keys = QueueKeys("bench-memory")
        before = int(client.info("memory")["used_memory"])
        _run_many(client, sha["enqueue"], [(keys.script_keys(f"job-{n:07d}"), [f"job-{n:07d}", payload, 0, 3,
                                                                                 "host-1:12345"]) for n in range(jobs)])
        pending = (int(client.info("memory")["used_memory"]) - before) / jobs
        claimed = _run_many(client, sha["claim"], [(keys.script_keys(None), [30_000, "9f86d081884c7d65", "host-1:12345",
                                                                             1000]) for _ in range(jobs // 1000)])
        held = [(reply[i], reply[i + 1]) for reply in claimed for i in range(2, len(reply), 3)]
        _run_many(client, sha["complete"], [(keys.script_keys(job_id.decode()), [job_id, attempts, "9f86d081884c7d65",
                                                                                 "host-1:12345"])
                                             for job_id, attempts in held])
        done = (int(client.info("memory")["used_memory"]) - before) / jobs
        hash_done = client.memory_usage(keys.job("job-0000000"))
        lines.append(f"memory per job, {side} ({'scripts@' + baseline if side == 'old' else 'today'}): "
                     f"pending {pending:6.0f} B, done {done:6.0f} B (the done hash alone {hash_done} B)")
        print(lines[-1], flush=True)
    return lines


def _evalsha_ms(client: redis.Redis) -> float:
    stats = client.info("commandstats").get("cmdstat_evalsha", {})
    return float(stats.get("usec", 0)) / max(int(stats.get("calls", 1)), 1) / 1000


def bench_move_cost(server: RedisServer, baseline: str, jobs: int, rounds: int) -> list[str]:
    """What the checks before the first write and the history entry cost each move: Redis time per
    enqueue, claim (one job) and complete, today's scripts beside the baseline's, in interleaved rounds."""
    client = server.client()
    names = ("enqueue", "claim", "complete")
    shas = {side: {name: client.script_load(old_source(baseline, name) if side == "old" else script(name).source)
                   for name in names} for side in ("old", "new")}
    keys = QueueKeys("bench-moves")
    cost: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for side in ("old", "new"):
            client.flushall()
            client.config_resetstat()
            _run_many(client, shas[side]["enqueue"], [(keys.script_keys(f"j{n}"), [f"j{n}", "{}", 0, 3, "host-1:12345"])
                                                     for n in range(jobs)])
            cost.setdefault((side, "enqueue"), []).append(_evalsha_ms(client))
            client.config_resetstat()
            claimed = _run_many(client, shas[side]["claim"], [(keys.script_keys(None), [30_000, "9f86d081884c7d65",
                                                                                        "host-1:12345", 1])
                                                             for _ in range(jobs)])
            cost.setdefault((side, "claim"), []).append(_evalsha_ms(client))
            client.config_resetstat()
            _run_many(client, shas[side]["complete"], [(keys.script_keys(r[2].decode()), [r[2], r[3], "9f86d081884c7d65",
                                                                                         "host-1:12345"])
                                                      for r in claimed])
            cost.setdefault((side, "complete"), []).append(_evalsha_ms(client))
    lines = []
    for name in names:
        old, new = (cost[(side, name)] for side in ("old", "new"))
        # The least of the rounds is the cost with the least interference from other processes.
        lines.append(f"Redis time per {name:<8}: old {min(old) * 1000:6.1f} µs (median {statistics.median(old) * 1000:6.1f}), "
                     f"new {min(new) * 1000:6.1f} µs (median {statistics.median(new) * 1000:6.1f})")
        print(lines[-1], flush=True)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bounded_reads", description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="ecdba80", help="the commit whose page.lua is the baseline")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--realtime", action="store_true",
                        help="run redis-server at SCHED_FIFO priority (chrt, root only), so that on a shared machine "
                             "its time per call is not stretched by other processes")
    args = parser.parse_args(argv)
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    server = RedisServer().start()
    if args.realtime:
        assert server.process is not None
        subprocess.run(["chrt", "-f", "-p", "50", str(server.process.pid)], check=True)
    try:
        bench_memory(server, args.baseline, 10_000)
        bench_move_cost(server, args.baseline, 2_000, 3 * args.rounds)
        bench_pages(server, args.baseline, args.rounds, args.seconds)
        for events in (100, 1_000_000):
            bench_history(server, events, args.repeats)
    finally:
        server.cleanup()
    print(f"load: {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
