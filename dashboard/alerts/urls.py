from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("alerts/", views.alerts_page, name="alerts"),
    path("alerts/new/", views.alert_new, name="alert_new"),
    path("alerts/<int:pk>/delete/", views.alert_delete, name="alert_delete"),
    path("alerts/silence/", views.alert_silence, name="alert_silence"),
    path("alerts/silences/<int:pk>/end/", views.alert_unsilence, name="alert_unsilence"),
]
