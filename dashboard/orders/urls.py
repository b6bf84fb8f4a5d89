from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("api/orders", views.place_order_api, name="place_order_api"),
]
