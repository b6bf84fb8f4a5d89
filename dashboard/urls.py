"""The console's pages, mountable under any prefix: ``path("ops/queues/", include("dashboard.urls"))``.

The standalone project's own URLs (admin, login, logout) are in ``dashboard.project_urls``; mounted, the console
links to the host's ``login`` and ``logout`` (README, "Mounting in your project").
"""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from . import deployment_views, payload_views, views
from .api.api import api
from .mounting import console_requests
from .orders import token_views

urlpatterns: list[URLPattern | URLResolver] = [
    # The console. Queue names and job ids travel in the query
    # string: they may hold '/' and other characters a path cannot carry.
    path("", views.overview, name="overview"),
    path("queue/", views.queue_detail, name="queue"),
    path("job/", views.job_detail, name="job"),
    path("job/payload/", views.job_payload, name="job_payload"),
    path("job/version/", payload_views.job_version, name="job_version"),
    path("schema/", payload_views.schema_page, name="schema"),
    path("find/", views.find, name="find"),
    # Every deployment's totals, and a job id looked for in all of them (EMQ_DEPLOYMENTS).
    path("deployments/", deployment_views.deployments_page, name="deployments"),
    # A user's own API tokens: listed (never the secret) and revocable.
    path("tokens/", token_views.tokens_page, name="tokens"),
    path("tokens/revoke/", token_views.token_revoke, name="token_revoke"),
    path("", include("dashboard.search.urls")),
    # Saved views (searches, queue pages, failures by cause) and their permalinks.
    path("", include("dashboard.saved_views.urls")),
    # Alert rules, their deliveries and silences.
    path("", include("dashboard.alerts.urls")),
    # Operator actions and the audit log.
    path("", include("dashboard.actions.urls")),
    # Schedules (recurring jobs): the page and its presses.
    path("", include("dashboard.schedules.urls")),
    # The cluster page and the sweeper lock.
    path("", include("dashboard.cluster.urls")),
    # Probes and Prometheus metrics (no login: /metrics checks a token or the address itself).
    path("", include("dashboard.monitoring.urls")),
    # The JSON API, its OpenAPI schema (/api/schema) and interactive docs (/api/docs), POST /api/orders included.
    path("api/", api.urls),
]
console_requests(urlpatterns)
