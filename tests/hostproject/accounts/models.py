from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import models


class User(AbstractUser):
    """The host's own user model, which the console uses for its logins, roles and audit rows."""

    team = models.CharField(max_length=40, blank=True)
