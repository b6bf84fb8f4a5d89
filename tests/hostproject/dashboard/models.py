from __future__ import annotations

from django.db import models


class Panel(models.Model):
    """The host's own app labelled "dashboard", with a table and migrations of its own."""

    title = models.CharField(max_length=80)
