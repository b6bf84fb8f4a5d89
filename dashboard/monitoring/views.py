"""``/healthz``, ``/readyz`` and ``/metrics``.

The probes need no login and answer only words (``ok`` / ``not ok`` per
check): an orchestrator may call them from anywhere, so they reveal nothing
about the queues or the servers. Why a check failed goes to the log.
"""

from __future__ import annotations

import logging
import time
from typing import Final

from django.db import DatabaseError, connection
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dashboard.services import read
from queues import Unavailable
from queues.health import ping, scripts_load, server_health

from .access import metrics_refusal
from .exposition import CONTENT_TYPE
from .snapshot import walker

log = logging.getLogger(__name__)

MIGRATIONS_OK_FOR_S: Final = 60.0
_migrations_ok_at = -MIGRATIONS_OK_FOR_S


def _text(body: str, status: int = 200) -> HttpResponse:
    return HttpResponse(body, status=status, content_type="text/plain; charset=utf-8")


@never_cache
@require_GET
def healthz(request: HttpRequest) -> HttpResponse:
    """The process answers: nothing else is looked at (a Redis outage must not get the console restarted)."""
    return _text("ok\n")


def _migrations_applied() -> bool:
    global _migrations_ok_at
    # Loading the migration graph costs tens of ms: a yes is kept for a minute (a no is asked again each time).
    if time.monotonic() - _migrations_ok_at < MIGRATIONS_OK_FOR_S:
        return True
    try:
        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as error:
        log.warning("readyz: the database cannot be read: %s", error)
        return False
    if plan:
        log.warning("readyz: %d migrations are not applied", len(plan))
        return False
    _migrations_ok_at = time.monotonic()
    return True


def _redis_checks() -> tuple[bool, bool, bool]:
    """(reachable, every script loads, no primary may evict)."""
    try:
        read(ping)
    except Unavailable as error:
        log.warning("readyz: %s", error)
        return False, False, False
    try:
        problems = read(scripts_load)
        health = read(server_health)
    except Unavailable as error:
        log.warning("readyz: %s", error)
        return False, False, False
    for problem in problems:
        log.warning("readyz: script: %s", problem)
    if health.may_evict:
        log.warning("readyz: %s", health.eviction_warning)
    return True, not problems, not health.may_evict


@never_cache
@require_GET
def readyz(request: HttpRequest) -> HttpResponse:
    """Ready to serve: Redis answers, the database is migrated, the scripts load.

    An evicting Redis is said ("eviction policy: not ok") but does not make the
    console unready: taking it out of service would hide the very banner that
    tells the operator, and the alert on ``emq_redis_maxmemory_policy_info`` pages someone.
    """
    reachable, scripts, no_eviction = _redis_checks()
    migrations = _migrations_applied()
    ready = reachable and scripts and migrations
    word = {True: "ok", False: "not ok"}
    lines = [f"redis: {word[reachable]}", f"migrations: {word[migrations]}", f"scripts: {word[scripts]}",
             f"eviction policy: {word[no_eviction] if reachable else 'unknown'}",
             "ready" if ready else "not ready"]
    return _text("\n".join(lines) + "\n", 200 if ready else 503)


@never_cache
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    refusal = metrics_refusal(request)
    if refusal is not None:
        response = _text(refusal.reason + "\n", refusal.status)
        if refusal.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="emq metrics"'
        return response
    snapshot = walker().scraped()
    if snapshot is None:
        return _text("the first read of the queues has not finished yet; scrape again\n", 503)
    return HttpResponse(snapshot.rendered, content_type=CONTENT_TYPE)
