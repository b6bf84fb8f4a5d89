from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from .dashboard import views

urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("dashboard/", views.panels, name="panels"),
    path("ops/queues/", include("dashboard.urls")),
]
