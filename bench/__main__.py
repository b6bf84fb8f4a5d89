"""``python -m bench [protocol|peers|all]``: one private redis-server, its raw ceiling, then each part.

Every part runs against the same server in the same run, so the figures can
be read side by side; ``--json`` also writes them to a file (bench/results/
is ignored by git).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from tests.support.redis_servers import REDIS_SERVER

from . import peers, protocol
from .common import Report, raw_ceiling, start_server

PARTS = ("protocol", "peers")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="*", metavar="PART",
                        help="protocol, peers or all (default: all)")
    parser.add_argument("--jobs", type=int, default=50_000, help="jobs per enqueue and processing figure")
    parser.add_argument("--page-sizes", default="1000,100000,1000000",
                        help="sizes of the state whose page reads are timed (comma separated)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    unknown = set(args.parts) - {*PARTS, "all"}
    if unknown:
        parser.error(f"unknown part {', '.join(sorted(unknown))}: choose from {', '.join(PARTS)} or all")
    parts = PARTS if not args.parts or "all" in args.parts else tuple(dict.fromkeys(args.parts))
    sizes = [int(s) for s in args.page_sizes.split(",") if s]

    load = os.getloadavg()
    redis_version = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True).stdout.split()
    print(f"# {platform.node()}: {os.cpu_count()} cores, load {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"python {platform.python_version()}, {' '.join(redis_version[:3])}", flush=True)
    server = start_server()
    report = Report()
    try:
        raw_ceiling(server, report)
        if "protocol" in parts:
            protocol.run(server, report, jobs=args.jobs, page_sizes=sizes)
        if "peers" in parts:
            peers.run(server, report, jobs=args.jobs)
    finally:
        server.cleanup()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"load": load, "figures": [f.as_dict() for f in report.figures]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
