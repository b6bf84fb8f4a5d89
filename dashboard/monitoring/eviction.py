"""The eviction guard for the pages: a red banner while Redis may evict keys.

Read at most every ``CHECK_EVERY_S`` per process (one ``INFO memory`` per
primary), so a page's cost on Redis does not grow by it.
"""

from __future__ import annotations

import threading
import time
from typing import Final

from django.http import HttpRequest

from dashboard.services import read
from queues import Unavailable
from queues.health import server_health

CHECK_EVERY_S: Final = 15.0

_lock = threading.Lock()
_checked_at = -CHECK_EVERY_S
_warning = ""


def eviction_warning() -> str:
    """The sentence to show, or '' (also while Redis is unreachable: that has a banner of its own)."""
    global _checked_at, _warning
    now = time.monotonic()
    if now - _checked_at < CHECK_EVERY_S:
        return _warning
    with _lock:
        if now - _checked_at >= CHECK_EVERY_S:
            _checked_at = now
            try:
                _warning = read(server_health).eviction_warning
            except Unavailable:
                pass
    return _warning


def eviction_check_reset() -> None:
    global _checked_at, _warning
    _checked_at, _warning = -CHECK_EVERY_S, ""


def eviction_banner(request: HttpRequest | None) -> str:
    """The banner's warning on a signed-in page (read by the page itself, so a host project needs no context
    processor); empty otherwise."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return ""
    return eviction_warning()
