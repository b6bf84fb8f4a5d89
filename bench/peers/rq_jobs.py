"""The no-op job RQ's workers import (RQ finds a job's function by its dotted name)."""

from __future__ import annotations


def noop(to: str, n: int) -> None:
    return None
