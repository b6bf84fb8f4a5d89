"""Memory per job: Redis bytes per job in each state, written by today's scripts and by a baseline's.

On one private redis-server, for each side (the scripts of a baseline commit, ``git show
BASE:queues/lua/...`` expanded as queues.scripts does, then today's) and each kind of job, the
run flushes Redis and writes ``--jobs`` jobs (28-byte payload) with the moves' own scripts:

    pending        enqueued
    active         enqueued, claimed
    done           enqueued, claimed, completed
    failed         enqueued with max_attempts 1, claimed, failed with an error
    retried, done  enqueued, claimed, failed with an error, claimed again, completed
                   (the typical job that ran twice)
    done, pod names   done, by a producer and a worker named as Kubernetes names pods
                   (``orders-api-7d9f8c6b5-x2k4p:1``, 30 characters)

Per job: ``used_memory`` grown over the jobs, less the queue-wide keys (the capped event
stream, the counters and the per-minute and per-hour series, reported apart: their size
does not grow with the jobs), then the job's hash alone (``MEMORY USAGE``) and its encoding,
and the state's sorted set per member. At 10,000 jobs every sorted set is a skiplist (over
``zset-max-listpack-entries``, 128), as it is in any queue that matters.

    python -m bench.memory                          # baseline c9242ca, 10,000 jobs
    python -m bench.memory --baseline main --jobs 1000
    python -m bench.memory --listpack-value 128     # the same under a raised hash-max-listpack-value

Then two floors: a hash of the three core fields and one sorted-set member, and a hash of the payload alone and
one sorted-set member (what a job costs in this keyspace whatever its hash's encoding).
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import redis
from redis.typing import EncodableT, FieldT

from bench.bounded_reads import _run_many, old_source
from queues import QueueKeys
from queues.scripts import script
from tests.support.redis_servers import RedisServer

PAYLOAD = '{"to": "user1@example.com"}'.ljust(28)
PRODUCER = "api-1:4242"
WORKER = "host-1:12345"
CLAIM_ID = "9f86d081884c7d65"
# What the Python worker keeps of a handler's exception: type, message, where it was raised.
ERROR = "ValueError: bad input (at handlers.py:12 in send)"
KINDS = ("pending", "active", "done", "failed", "retried, done", "done, pod names")
POD_ACTORS = ("orders-api-7d9f8c6b5-x2k4p:1", "mail-worker-5c8d7b9f4-q7r2m:1")
MOVES = ("enqueue", "claim", "complete", "fail")


def _claim_all(client: redis.Redis, sha: str, keys: QueueKeys, jobs: int, worker: str) -> list[tuple[bytes, bytes]]:
    replies = _run_many(client, sha, [(keys.script_keys(None), [30_000, CLAIM_ID, worker, 1000])
                                      for _ in range(-(-jobs // 1000))])
    return [(reply[i], reply[i + 1]) for reply in replies if reply[0] == b"OK" for i in range(2, len(reply), 3)]


def write_jobs(client: redis.Redis, sha: dict[str, str], keys: QueueKeys, kind: str, jobs: int) -> None:
    """``jobs`` jobs of ``kind``, written by the scripts ``sha`` names, as a producer and a worker would."""
    ids = [f"job-{n:07d}" for n in range(jobs)]
    tries = 1 if kind == "failed" else 3
    producer, worker = POD_ACTORS if kind == "done, pod names" else (PRODUCER, WORKER)
    _run_many(client, sha["enqueue"], [(keys.script_keys(i), [i, PAYLOAD, 0, tries, producer]) for i in ids])
    if kind == "pending":
        return
    held = _claim_all(client, sha["claim"], keys, jobs, worker)
    if kind in ("failed", "retried, done"):
        _run_many(client, sha["fail"], [(keys.script_keys(i.decode()), [i, a, CLAIM_ID, ERROR, 0, worker])
                                        for i, a in held])
        if kind == "failed":
            return
        held = _claim_all(client, sha["claim"], keys, jobs, worker)
    if kind == "active":
        return
    _run_many(client, sha["complete"], [(keys.script_keys(i.decode()), [i, a, CLAIM_ID, worker]) for i, a in held])


def _queue_wide(client: redis.Redis, keys: QueueKeys) -> dict[str, int]:
    """The queue's keys that do not grow with its jobs: the event stream, the counters, the series."""
    sizes = {"stream": client.memory_usage(keys.events, samples=0) or 0,
             "counters and series": 0}
    for key in client.scan_iter(match=keys.prefix.replace("{", "\\{").replace("}", "\\}") + "*", count=1000):
        name = key.decode()
        if name == keys.counts or name.startswith((keys.prefix + "m:", keys.prefix + "h:")):
            sizes["counters and series"] += client.memory_usage(key, samples=0) or 0
    return sizes


def measure(client: redis.Redis, sha: dict[str, str], kind: str, jobs: int) -> dict[str, Any]:
    keys = QueueKeys("bench-memory")
    client.flushall()
    before = int(client.info("memory")["used_memory"])
    write_jobs(client, sha, keys, kind, jobs)
    grown = int(client.info("memory")["used_memory"]) - before
    apart = _queue_wide(client, keys)
    sample = [keys.job(f"job-{n:07d}") for n in range(0, jobs, max(jobs // 50, 1))]
    state = "done" if kind.startswith(("retried", "done")) else kind
    state_set = getattr(keys, state)
    return {"per_job": (grown - sum(apart.values())) / jobs, "stream": apart["stream"],
            "queue_wide": apart["counters and series"],
            "hash": statistics.median(client.memory_usage(key, samples=0) or 0 for key in sample),
            "encoding": client.object("encoding", sample[-1]).decode(),
            "history": statistics.median(client.hstrlen(key, "history") for key in sample),
            "fields": statistics.median(client.hlen(key) for key in sample),
            "set_per_member": (client.memory_usage(state_set, samples=0) or 0) / jobs,
            "set_encoding": client.object("encoding", state_set).decode()}


CORE_FIELDS: dict[FieldT, EncodableT] = {"state": "pending", "attempts": 0, "payload": PAYLOAD}


def floor(client: redis.Redis, jobs: int, fields: dict[FieldT, EncodableT] = CORE_FIELDS) -> float:
    """A job hash of ``fields`` only (the three core fields: what no encoding of the other fields can go below;
    the payload alone: what no encoding of the job hash can go below) and its id in one sorted set, with these
    key names."""
    keys = QueueKeys("bench-memory")
    client.flushall()
    before = int(client.info("memory")["used_memory"])
    for start in range(0, jobs, 1000):
        pipe = client.pipeline(transaction=False)
        for n in range(start, min(start + 1000, jobs)):
            pipe.hset(keys.job(f"job-{n:07d}"), mapping=fields)
            pipe.zadd(keys.pending, {f"job-{n:07d}": 1_796_121_464_863 + n})
        pipe.execute()
    return (int(client.info("memory")["used_memory"]) - before) / jobs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="c9242ca", help="the commit whose scripts are the baseline")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--listpack-value", type=int, default=0,
                        help="set hash-max-listpack-value on the private server (0: leave Redis's default, 64)")
    args = parser.parse_args(argv)
    server = RedisServer().start()
    try:
        client = server.client()
        if args.listpack_value:
            client.config_set("hash-max-listpack-value", args.listpack_value)
        print(f"hash-max-listpack-value {client.config_get('hash-max-listpack-value')['hash-max-listpack-value']}", flush=True)
        print(f"redis {client.info('server')['redis_version']}, {args.jobs:,} jobs of a {len(PAYLOAD)}-byte payload; "
              f"per job: used_memory over the jobs less the queue-wide keys (stream, counters, series)", flush=True)
        shas = {side: {name: client.script_load(old_source(args.baseline, name) if side == "old" else script(name).source)
                       for name in MOVES} for side in ("old", "new")}
        measure(client, shas["new"], "done", args.jobs)  # a first run grows the server's own tables: not counted
        for kind in KINDS:
            for side in ("old", "new"):
                m = measure(client, shas[side], kind, args.jobs)
                label = f"{args.baseline}" if side == "old" else "today"
                print(f"{kind:<16} {label:<8} per job {m['per_job']:6.0f} B   hash {m['hash']:6.0f} B "
                      f"({m['encoding']}, {m['fields']:.0f} fields, history {m['history']:.0f} B)   "
                      f"{m['set_encoding']} {m['set_per_member']:5.0f} B/member   "
                      f"apart: stream {m['stream'] / 1024:6.0f} KiB, counters and series {m['queue_wide']:,} B",
                      flush=True)
        print(f"floor: three core fields and one sorted-set member {floor(client, args.jobs):6.0f} B per job", flush=True)
        print(f"floor: the payload alone and one sorted-set member {floor(client, args.jobs, {'payload': PAYLOAD}):6.0f} "
              "B per job", flush=True)
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
