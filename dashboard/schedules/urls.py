from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("schedules/", views.schedules_page, name="schedules"),
    path("schedules/edit/", views.schedule_edit, name="schedule_edit"),
    path("schedules/act/", views.schedule_action, name="schedule_action"),
]
