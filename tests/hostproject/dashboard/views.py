from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .models import Panel


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


@login_required
def panels(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/panels.html", {"panels": Panel._default_manager.order_by("pk")})
