from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("cluster/", views.cluster_page, name="cluster"),
    path("sweeper/", views.sweeper_fragment, name="sweeper_status"),
]
