"""The EchoMQ console: a Django app (label ``emq_console``) with its companion apps, standalone or mounted."""

from __future__ import annotations

from typing import Final

# What a host project adds to INSTALLED_APPS (README, "Mounting in your project"): the console's apps and the two
# whose static files its pages load (htmx, the API docs).
CONSOLE_APPS: Final = [
    "django_htmx",
    "ninja",
    "dashboard",
    "dashboard.orders",
    "dashboard.actions",
    "dashboard.monitoring",
    "dashboard.saved_views",
    "dashboard.alerts",
]
