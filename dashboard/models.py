"""The console keeps no jobs in its database: only who may act (and, later, what they did)."""

from __future__ import annotations

from django.db import models


class Console(models.Model):
    """A table-less model that carries the console's custom permission.

    Operators hold ``emq_console.act_on_jobs``; viewers do not. Every operator
    action checks it on the server, whatever the page showed.
    """

    class Meta:
        managed = False
        default_permissions = ()
        permissions = [("act_on_jobs", "Can retry, recover, promote, cancel, delete and purge jobs"),
                       ("view_console", "Can see queues, jobs, metrics and the audit log")]
