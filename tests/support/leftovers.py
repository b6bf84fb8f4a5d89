"""The redis-server and daphne processes a test run started that are still alive after it.

``./dev test`` gives its run a temporary directory (TMPDIR) and a mark (EMQ_TEST_RUN in the environment
of everything it starts). A redis-server of the run has its working directory in that directory (tests
start each server with ``--dir`` inside it; redis-server writes its title over its environment, so the
mark cannot be read there); a daphne, or a demo serving one, carries the mark. Other processes on the
machine (another checkout's suite, a demo someone runs) have neither and are never touched.

``python -m tests.support.leftovers RUN_DIR MARK`` lists what is left, stops it, and exits 1 if anything was.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

MARK_VARIABLE = "EMQ_TEST_RUN"
# A process being stopped when the run ends (a fixture's SIGTERM) gets this long to go by itself.
GRACE_S = 5.0


@dataclass(frozen=True)
class Leftover:
    pid: int
    command: str

    def describe(self) -> str:
        return f"pid {self.pid}: {self.command}"


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _inside(path: str, directory: Path) -> bool:
    return path == str(directory) or path.startswith(str(directory) + os.sep)


def leftovers(run_dir: Path, mark: str) -> list[Leftover]:
    found = []
    marker = f"{MARK_VARIABLE}={mark}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        command = _read(entry / "cmdline").replace(b"\0", b" ").decode(errors="replace").strip()
        if not command:
            continue  # gone meanwhile, or a zombie (its parent will reap it)
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            cwd = ""
        redis = "redis-server" in command and _inside(cwd, run_dir)
        serving = ("daphne" in command or "manage.py demo" in command) and marker in _read(entry / "environ").split(b"\0")
        if redis or serving:
            found.append(Leftover(int(entry.name), command))
    return found


def stop(processes: list[Leftover]) -> None:
    for process in processes:
        try:
            os.kill(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv: list[str]) -> int:
    run_dir, mark = Path(argv[0]).resolve(), argv[1]
    deadline = time.monotonic() + GRACE_S
    left = leftovers(run_dir, mark)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = leftovers(run_dir, mark)
    if not left:
        return 0
    print(f"error: the test run left {len(left)} process(es) running (now stopped):", file=sys.stderr)
    for process in left:
        print(f"  {process.describe()}", file=sys.stderr)
    stop(left)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
