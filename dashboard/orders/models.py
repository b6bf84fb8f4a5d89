from __future__ import annotations

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A secret that lets a program call the API as its user; only its SHA-256 is stored.

    ``scope`` "read" reads only, whatever the user may do; "act" may also do what the user may
    (moves, orders). A token past ``expires_at`` is refused; a token of a user who loses a role or is
    deactivated is deleted (``dashboard.orders.apps``).
    """

    class Scope(models.TextChoices):
        READ = "read", "read only"
        ACT = "act", "read and act"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    scope = models.CharField(max_length=8, choices=Scope.choices, default=Scope.READ)
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        permissions = [("place_orders", "Can place exchange orders")]

    def __str__(self) -> str:
        return f"{self.name} ({self.user})"
