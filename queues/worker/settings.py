"""A worker's settings, checked once by :class:`~queues.worker.Worker` and read by its parts."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata

RUNTIME = f"python {sys.version.split()[0]} emq"
RELEASE_BYTES = 64


def detect_release() -> str:
    """The release label this worker's attempts record: ``EMQ_RELEASE``, else ``git describe`` of the working
    directory when it is a checkout, else the installed package's version, else '' ("release unknown")."""
    label = os.environ.get("EMQ_RELEASE", "").strip()
    if label:
        return label.encode()[:RELEASE_BYTES].decode(errors="ignore")
    try:
        described = subprocess.run(["git", "describe", "--always", "--dirty", "--tags"], capture_output=True,
                                   text=True, timeout=2, check=False)
        if described.returncode == 0 and described.stdout.strip():
            return described.stdout.strip()[:RELEASE_BYTES]
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        return metadata.version("echomq-console")
    except metadata.PackageNotFoundError:
        return ""


@dataclass(frozen=True, slots=True)
class WorkerSettings:
    queue: str
    actor: str
    concurrency: int
    prefetch: int
    lease_ms: int
    backoff_ms: int
    batch: int
    grace_ms: int
    poll_ms: int
    started_ms: int
    # What each attempt this worker claims records (PROTOCOL.md, section 9); '' when it cannot tell.
    release: str = ""

    @property
    def slots(self) -> int:
        """The most leases the worker holds at once: one per handler, plus the prefetched."""
        return self.concurrency + self.prefetch
