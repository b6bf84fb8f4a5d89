"""The console's settings, all named ``EMQ_*``, with their defaults: a host project sets only those it changes.

The standalone project reads each from the environment (``dashboard.settings``, README "Settings"); a test holds
that its values with no environment are these, and that every ``settings.EMQ_*`` the console reads is here.
"""

from __future__ import annotations

from typing import Any, Final

from django.conf import settings

DEFAULTS: Final[dict[str, Any]] = {
    "EMQ_REDIS_URL": "redis://127.0.0.1:6379/0",
    "EMQ_DEPLOYMENTS": "",
    "EMQ_DEPLOYMENT_BUDGET_S": 1.0,
    "EMQ_DEPLOYMENT_SEARCH_BUDGET_S": 3.0,
    "EMQ_MAX_BODY_BYTES": 1024 * 1024,
    "EMQ_BODY_TIMEOUT_S": 10.0,
    "EMQ_REQUEST_DEADLINE_S": 30.0,
    "EMQ_IDLE_TIMEOUT_S": 60.0,
    "EMQ_WRITE_TIMEOUT_S": 30.0,
    "EMQ_SEARCH_STEP_ENTRIES": 2000,
    "EMQ_SEARCH_PER_USER": 2,
    "EMQ_SEARCH_PER_PROCESS": 4,
    "EMQ_SEARCH_DUTY": 0.25,
    "EMQ_SEARCH_REDIS_S": 10.0,
    "EMQ_SOCKETS_PER_USER": 20,
    "EMQ_SOCKETS_PER_PROCESS": 300,
    "EMQ_RUN_ABANDONED_MINUTES": 5.0,
    "EMQ_TRUSTED_PROXY_HOPS": 0,
    "EMQ_SESSION_IDLE_MINUTES": 60.0,
    "EMQ_SESSION_MAX_HOURS": 12.0,
    "EMQ_SWEEPER_INTERVAL_S": 5.0,
    "EMQ_LOCK_URLS": [],
    "EMQ_DISCOVERY_SCANS_PER_S": 2.0,
    "EMQ_DISCOVERY_SCAN_COUNT": 1000,
    "EMQ_METRICS_ALLOW": [],
    "EMQ_METRICS_INTERVAL_S": 10.0,
    "EMQ_METRICS_QUEUES_PER_S": 2000.0,
    "EMQ_CENSUS_CALLS_PER_S": 200.0,
    "EMQ_CENSUS_PASS_S": 5.0,
    "EMQ_LIVE_SAFETY_POLL_S": 5.0,
    "EMQ_OVERVIEW_REASONS": True,
    "EMQ_ALERTS_INTERVAL_S": 10.0,
    "EMQ_SCHEDULER_INTERVAL_S": 1.0,
}


def settings_defaults() -> None:
    """Each ``EMQ_*`` setting the project did not set takes its default."""
    for name, value in DEFAULTS.items():
        if not hasattr(settings, name):
            setattr(settings, name, list(value) if isinstance(value, list) else value)
