from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A secret that lets a program place orders as its user; only its SHA-256 is stored."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        permissions = [("place_orders", "Can place exchange orders")]

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"
