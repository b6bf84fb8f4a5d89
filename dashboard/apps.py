from __future__ import annotations

from typing import Any

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The console's app. Its label is not "dashboard": a host project's own app of that name keeps its label,
    its tables and its permissions (README, "Mounting in your project")."""

    name = "dashboard"
    label = "emq_console"
    verbose_name = "EchoMQ console"
    default_auto_field = "django.db.models.BigAutoField"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from .conf import settings_defaults

        # Before any model or view module is imported, so that none reads a setting the host left out.
        settings_defaults()

    def ready(self) -> None:
        from .deployments import deployments

        # A host project's EMQ_DEPLOYMENTS is checked at start too: a mistake is said then, not on a first page.
        deployments()
