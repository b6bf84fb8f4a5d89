from __future__ import annotations

from django.apps import AppConfig


class SavedViewsConfig(AppConfig):
    name = "dashboard.saved_views"
    label = "saved_views"
    verbose_name = "Saved views"
    default_auto_field = "django.db.models.BigAutoField"
