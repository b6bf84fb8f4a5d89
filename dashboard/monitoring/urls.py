from __future__ import annotations

from django.urls import path

from . import views, workers

urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("readyz", views.readyz, name="readyz"),
    path("metrics", views.metrics, name="metrics"),
    path("workers/", workers.workers_page, name="workers"),
]
