"""Waiting for a condition instead of sleeping a guess: tests must pass on a machine at load 10."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import redis


def _holds(predicate: Callable[[], object]) -> bool:
    try:
        return bool(predicate())
    except (redis.exceptions.RedisError, OSError):
        return False


def wait_until(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.05) -> None:
    """Polls ``predicate`` until it is true; a Redis or socket error counts as "not yet"."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _holds(predicate):
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


async def wait_until_async(predicate: Callable[[], object], timeout: float, what: str, interval: float = 0.02) -> None:
    """:func:`wait_until` for a test running an event loop: the loop keeps running while it waits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _holds(predicate):
            return
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")
