"""The console keeps no jobs in its database: only who may act (and, later, what they did)."""

from __future__ import annotations

from django.db import models

from .permissions import LEGACY_PERMISSIONS, PERMISSIONS


class Console(models.Model):
    """A table-less model that carries the console's permissions: one per kind of action (``dashboard.permissions``).

    Every action checks its own on the server (``dashboard.actions.access.may``), whatever the page showed;
    ``emq_console.act_on_jobs`` still means every action.
    """

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [*LEGACY_PERMISSIONS.items(), *PERMISSIONS.items()]
