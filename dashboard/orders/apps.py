from __future__ import annotations

from django.apps import AppConfig


class OrdersConfig(AppConfig):
    name = "dashboard.orders"
    label = "orders"
    verbose_name = "Exchange orders API"
    default_auto_field = "django.db.models.BigAutoField"
