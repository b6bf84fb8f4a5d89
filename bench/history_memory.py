"""Memory of a queue's history in Redis: 48 h of minute buckets and 90 days of hour buckets, as the moves write them.

Writes, on a private redis-server, the keys ``count_series`` and ``count_wait``
(common.lua) leave behind for a busy queue (every field present: enqueued,
completed, failed, recovered and the wait buckets a steady queue fills), with
their expiry, and reports ``used_memory`` before and after, and the sum of
``MEMORY USAGE`` of the keys.

    python -m bench.history_memory
"""

from __future__ import annotations

from queues import QueueKeys

from .common import start_server

FIELDS = {"e": 3412, "c": 3390, "f": 17, "r": 2, "w0": 2800, "w1": 400, "w2": 150, "w3": 40, "w4": 12}


def main() -> None:
    server = start_server()
    client = server.client()
    try:
        prefix = QueueKeys("bench-history").prefix
        now_minute = 30_000_000
        before = int(client.info("memory")["used_memory"])
        pipe = client.pipeline(transaction=False)
        for n in range(48 * 60):
            key = f"{prefix}m:{now_minute - n}"
            pipe.hset(key, mapping=FIELDS)
            pipe.pexpire(key, 48 * 3_600_000)
        for n in range(90 * 24):
            key = f"{prefix}h:{now_minute // 60 - n}"
            pipe.hset(key, mapping={k: v * 60 for k, v in FIELDS.items()})
            pipe.pexpire(key, 90 * 86_400_000)
        pipe.execute()
        after = int(client.info("memory")["used_memory"])
        minutes = sum(client.memory_usage(f"{prefix}m:{now_minute - n}") or 0 for n in range(48 * 60))
        hours = sum(client.memory_usage(f"{prefix}h:{now_minute // 60 - n}") or 0 for n in range(90 * 24))
        print(f"minute buckets (48 h, 2,880 keys): MEMORY USAGE sum {minutes / 1024:,.0f} KiB")
        print(f"hour buckets (90 days, 2,160 keys): MEMORY USAGE sum {hours / 1024:,.0f} KiB")
        print(f"used_memory grew by {(after - before) / 1024:,.0f} KiB for one queue's full history "
              f"(key overhead and expiry entries included)")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
