"""Waiting for a condition instead of sleeping a guess: tests must pass on a machine at load 10."""

from __future__ import annotations

import time
from collections.abc import Callable

import redis


def wait_until(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> None:
    """Polls ``predicate`` until it is true; a Redis or socket error counts as "not yet"."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (redis.exceptions.RedisError, OSError):
            pass
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
