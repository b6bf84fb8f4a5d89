"""Sessions end after EMQ_SESSION_IDLE_MINUTES without a request, and EMQ_SESSION_MAX_HOURS after the login.

Both are read from two times the session keeps (its start, and the last
request seen, written at most every SEEN_EVERY_S so that a busy page does not
write its session on every request); the pages' middleware signs an expired
session out, and the sockets (``dashboard.consumers.current_user``) treat it as
signed out too, so an open live page closes with 4401 once its session ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable, MutableMapping
from typing import Any, Final

from django.conf import settings
from django.contrib.auth import logout
from django.http import HttpRequest, HttpResponse

STARTED: Final = "emq_started_at"
SEEN: Final = "emq_seen_at"
SEEN_EVERY_S: Final = 30.0


def session_expired(session: MutableMapping[str, Any], now: float | None = None) -> bool:
    """True once the session was idle too long or is older than the maximum age."""
    now = time.time() if now is None else now
    started, seen = session.get(STARTED), session.get(SEEN)
    idle = float(settings.EMQ_SESSION_IDLE_MINUTES) * 60
    most = float(settings.EMQ_SESSION_MAX_HOURS) * 3600
    return bool((isinstance(seen, (int, float)) and now - seen > idle)
                or (isinstance(started, (int, float)) and now - started > most))


class SessionLimitsMiddleware:
    """Signs out an expired session before the view runs (the request goes on as anonymous)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.user.is_authenticated:
            session = request.session
            now = time.time()
            if session_expired(session, now):
                logout(request)
            else:
                session.setdefault(STARTED, now)
                seen = session.get(SEEN)
                if not isinstance(seen, (int, float)) or now - seen > SEEN_EVERY_S:
                    session[SEEN] = now
        return self.get_response(request)
