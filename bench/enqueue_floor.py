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
``--before REV`` adds two sides to compare a change of the client within the same rounds: ``EchoMQ.enqueue``
of this tree and of the package at REV (``git archive REV queues``), each in a process of its own, with
the client's CPU time per job (user and system) of each.

    python -m bench.enqueue_floor --jobs 20000 --rounds 3
    python -m bench.enqueue_floor --jobs 20000 --rounds 7 --before HEAD
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from functools import partial
from io import BytesIO
from pathlib import Path

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


_AT_REVISION = """
import sys, time
from queues import EchoMQ
mq = EchoMQ.from_url(sys.argv[1], actor="bench")
mq.enqueue("bench-warm", sys.argv[3])
start, cpu = time.perf_counter(), time.process_time()
for _ in range(int(sys.argv[2])):
    mq.enqueue("bench-floor-before", sys.argv[3])
print((time.process_time() - cpu) / int(sys.argv[2]) * 1e6, int(sys.argv[2]) / (time.perf_counter() - start))
"""
# The client's CPU per job (user and system, its syscalls included) of each run of echomq_at, by the root it ran.
CPU_US: dict[Path, list[float]] = {}


def echomq_at(root: Path, server: RedisServer, jobs: int) -> float:
    """EchoMQ.enqueue of the package unpacked at ``root``, in a process of its own (its start not timed)."""
    measured = subprocess.run([sys.executable, "-c", _AT_REVISION, server.url, str(jobs), PAYLOAD],
                              env={**os.environ, "PYTHONPATH": str(root)}, cwd=root, capture_output=True,
                              text=True, timeout=600, check=True)
    cpu_us, rate = measured.stdout.split()[-2:]
    CPU_US.setdefault(root, []).append(float(cpu_us))
    return float(rate)


def unpack_package(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", revision, "queues"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


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
    parser.add_argument("--before", metavar="REV", help="also time EchoMQ.enqueue of the package at REV")
    args = parser.parse_args()
    sides = dict(SIDES)
    unpacked = tempfile.TemporaryDirectory(prefix="emq-before-")
    if args.before:
        # Both in a process of their own, started the same way.
        sides["EchoMQ.enqueue, own process"] = partial(echomq_at, Path(__file__).resolve().parents[1])
        sides[f"EchoMQ.enqueue at {args.before}"] = partial(echomq_at, unpack_package(args.before,
                                                                                     Path(unpacked.name)))
    load = os.getloadavg()
    print(f"# load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; bullmq {peers.bullmq_version()}; {args.jobs} jobs a side",
          flush=True)
    rates: dict[str, list[float]] = {name: [] for name in sides}
    server = start_server()
    try:
        for round_no in range(1, args.rounds + 1):
            for name, side in sides.items():
                server.client().flushall()
                rates[name].append(side(server, args.jobs))
            print(f"round {round_no}: " + ", ".join(f"{name} {values[-1]:,.0f}/s" for name, values in rates.items()),
                  flush=True)
    finally:
        server.cleanup()
        unpacked.cleanup()  # its path stays the key of its CPU figures
    base = rates["BullMQ Queue.add"]
    for name, values in rates.items():
        ratios = [value / theirs for value, theirs in zip(values, base)]
        rate = statistics.median(values)
        print(f"{name:<22} median {rate:>9,.0f} jobs/s ({1e6 / rate:6.1f} us a job); x BullMQ per round "
              + ", ".join(f"{r:.2f}" for r in ratios) + f"; median {statistics.median(ratios):.2f}", flush=True)
    if args.before:
        ratios = [ours / theirs for ours, theirs in zip(rates["EchoMQ.enqueue, own process"],
                                                        rates[f"EchoMQ.enqueue at {args.before}"])]
        print(f"this tree / {args.before}, per round " + ", ".join(f"{r:.3f}" for r in ratios)
              + f"; median {statistics.median(ratios):.3f}", flush=True)
        for root, label in ((Path(__file__).resolve().parents[1], "this tree"), (Path(unpacked.name), args.before)):
            print(f"client CPU per job, {label}: " + ", ".join(f"{us:.1f}" for us in CPU_US[root])
                  + f" us; median {statistics.median(CPU_US[root]):.1f}", flush=True)
    end = os.getloadavg()
    print(f"# load at the end {end[0]:.2f} {end[1]:.2f} {end[2]:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
