"""``python -m bench.enqueue_floor``: how fast one job at a time can go from Python, beside BullMQ's ``Queue.add``.

Enqueueing one by one is a round trip per job: the caller waits for each reply before it sends the next.
This run takes the client out piece by piece, in rounds that interleave four sides on one private
redis-server (``--jobs`` each):

    PING, raw socket        a PING sent and its reply read on a bare socket: the round trip alone
    enqueue script, raw     the enqueue script's EVALSHA, every command packed before the clock starts,
                            on a bare socket (hiredis reads the reply): the round trip and the script,
                            no client at all
    EchoMQ.enqueue          the sync client (what ``python -m bench`` times as "enqueue one by one")
    BullMQ Queue.add        BullMQ in its own node process, awaiting each add

Each side's rate and its ratio to BullMQ's in the same round; the median of the per-round ratios.

    python -m bench.enqueue_floor --jobs 20000 --rounds 3
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
from collections.abc import Callable

import hiredis

from queues import EchoMQ, moves
from queues.scripts import script
from tests.support.redis_servers import RedisServer

from . import peers
from .common import start_server
from .protocol import PAYLOAD


def _connect(server: RedisServer) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", server.port))
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def _raw(server: RedisServer, commands: list[bytes]) -> float:
    """Sends each packed command and reads its reply before the next; jobs per second."""
    conn = _connect(server)
    reader = hiredis.Reader()
    try:
        start = time.perf_counter()
        for command in commands:
            conn.sendall(command)
            reply = False
            while reply is False:
                reader.feed(conn.recv(65536))
                reply = reader.gets()
            if isinstance(reply, hiredis.ReplyError):
                raise RuntimeError(f"the raw side got an error: {reply}")
        return len(commands) / (time.perf_counter() - start)
    finally:
        conn.close()


def ping_raw(server: RedisServer, jobs: int) -> float:
    return _raw(server, [hiredis.pack_command(("PING",))] * jobs)


def enqueue_raw(server: RedisServer, jobs: int) -> float:
    enqueue = script("enqueue")
    server.client().script_load(enqueue.source)
    commands = []
    for _ in range(jobs):
        call = moves.enqueue("bench-floor-raw", PAYLOAD, actor="bench")
        commands.append(hiredis.pack_command(("EVALSHA", enqueue.sha, len(call.keys), *call.keys, *call.args)))
    return _raw(server, commands)


def echomq(server: RedisServer, jobs: int) -> float:
    mq = EchoMQ.from_url(server.url, actor="bench")
    try:
        mq.enqueue("bench-warm", PAYLOAD)  # the registry entry and the script cache, outside the timing
        start = time.perf_counter()
        for _ in range(jobs):
            mq.enqueue("bench-floor-api", PAYLOAD)
        return jobs / (time.perf_counter() - start)
    finally:
        mq.close()


def bullmq(server: RedisServer, jobs: int) -> float:
    return peers.bullmq(server.port, jobs, "add-one")


SIDES: dict[str, Callable[[RedisServer, int], float]] = {
    "PING, raw socket": ping_raw,
    "enqueue script, raw": enqueue_raw,
    "EchoMQ.enqueue": echomq,
    "BullMQ Queue.add": bullmq,
}


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.enqueue_floor", description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    load = os.getloadavg()
    print(f"# load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; bullmq {peers.bullmq_version()}; {args.jobs} jobs a side",
          flush=True)
    rates: dict[str, list[float]] = {name: [] for name in SIDES}
    server = start_server()
    try:
        for round_no in range(1, args.rounds + 1):
            for name, side in SIDES.items():
                server.client().flushall()
                rates[name].append(side(server, args.jobs))
            print(f"round {round_no}: " + ", ".join(f"{name} {values[-1]:,.0f}/s" for name, values in rates.items()),
                  flush=True)
    finally:
        server.cleanup()
    base = rates["BullMQ Queue.add"]
    for name, values in rates.items():
        ratios = [value / theirs for value, theirs in zip(values, base)]
        rate = statistics.median(values)
        print(f"{name:<22} median {rate:>9,.0f} jobs/s ({1e6 / rate:6.1f} us a job); x BullMQ per round "
              + ", ".join(f"{r:.2f}" for r in ratios) + f"; median {statistics.median(ratios):.2f}", flush=True)
    end = os.getloadavg()
    print(f"# load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
