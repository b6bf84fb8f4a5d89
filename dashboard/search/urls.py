from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("search/", views.search_page, name="search"),
    path("failures/", views.failures_page, name="failures"),
]
