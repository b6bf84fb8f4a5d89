from __future__ import annotations

from django.apps import AppConfig


class ActionsConfig(AppConfig):
    name = "dashboard.actions"
    label = "actions"
    verbose_name = "Operator actions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.apps import apps

        # The standalone console throttles its logins with django-axes; a host project may have another way.
        if not apps.is_installed("axes"):
            return
        from axes.signals import user_locked_out

        from .audit import record_lockout

        user_locked_out.connect(record_lockout, dispatch_uid="console-audit-lockout")
