"""``python -m bench.count_batch``: what counting one job and eight jobs costs Redis, counted directly (one
``HINCRBY`` per count) and batched (``count_batch`` ... ``count_flush``: one per key and field).

Each figure is a loop inside one ``EVAL`` of ``common.lua`` followed by the counting a job's claim and completion
do (``count_move`` twice, ``count_wait``, ``count_duration``, ``record_latency``, ``count_series``), timed by the
server's own clock, best of 5; the sides alternate. It shows from how many jobs a batch pays for its tables.
"""

from __future__ import annotations

import argparse

from queues.keys import QueueKeys
from queues.scripts import expand, lua_dirs

from .common import start_server

ONE_JOB = ("count_move(KEYS[5], 'claim') count_wait(PREFIX, 1796637668265, 5780) count_move(KEYS[5], 'complete') "
           "count_duration(PREFIX, 'run', 9) record_latency(PREFIX, 1796637668265, 'R', 9) "
           "count_series(PREFIX, 1796637668265, 'c')")


def per_call_us(client, body: str, calls: int) -> float:  # type: ignore[no-untyped-def]
    source = (expand("common.lua", lua_dirs("")) + f"\nlocal t0 = redis.call('TIME')\nfor _i = 1, {calls} do\n{body}\n"
              "end\nlocal t1 = redis.call('TIME')\nreturn (t1[1] - t0[1]) * 1000000 + (t1[2] - t0[2])")
    keys = QueueKeys("bench-count").script_keys(None)
    return min(int(client.eval(source, len(keys), *keys)) for _ in range(5)) / calls


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.count_batch", description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per loop")
    args = parser.parse_args()
    server = start_server()
    try:
        client = server.client()
        for jobs in (1, 2, 8):
            body = " ".join([ONE_JOB] * jobs)
            direct = per_call_us(client, body, args.calls)
            batched = per_call_us(client, f"count_batch() {body} count_flush()", args.calls)
            print(f"{jobs} job(s) per call: direct {direct:6.2f} us, batched {batched:6.2f} us, "
                  f"batched / direct {batched / direct:.2f}", flush=True)
    finally:
        server.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
