from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("views/", views.views_page, name="views"),
    path("views/save/", views.view_save_action, name="view_save"),
    path("views/<int:pk>/", views.view_open, name="view_open"),
    path("views/<int:pk>/pin/", views.view_pin_action, name="view_pin"),
    path("views/<int:pk>/delete/", views.view_delete_action, name="view_delete"),
]
