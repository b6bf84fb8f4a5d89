from __future__ import annotations

from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "dashboard.monitoring"
    label = "emq_monitoring"

    def ready(self) -> None:
        from .access import metrics_networks

        metrics_networks()  # a bad EMQ_METRICS_ALLOW stops the console at start, not at the first scrape
