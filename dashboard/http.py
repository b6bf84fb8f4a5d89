"""The request the console's views are handed: Django's, plus django-htmx's ``request.htmx`` (for the type checker)."""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
