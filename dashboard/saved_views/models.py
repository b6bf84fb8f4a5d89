"""A saved view is console data, not protocol: its page's query, kept in the console's database under a name."""

from __future__ import annotations

from django.conf import settings
from django.db import models

NAME_LIMIT = 100


class SavedView(models.Model):
    """A search, a queue page's filters or a queue's failures by cause, as the page's query string holds them.

    ``params`` are the page's own query values (text). A frozen view's times are absolute (epoch ms) and its
    window ends when it was frozen, so its link finds the same jobs every time (those still in the state).
    Private views are their owner's; shared ones are the team's, each reader held to their own queue grants.
    """

    class Kind(models.TextChoices):
        SEARCH = "search", "a search"
        QUEUE = "queue", "a queue page"
        FAILURES = "failures", "failures by cause"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="saved_views")
    name = models.CharField(max_length=NAME_LIMIT)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # The queue the view reads; "" for a search of every queue (or of those whose names hold params["in"]).
    queue = models.CharField(max_length=128, blank=True)
    params = models.JSONField(default=dict)
    shared = models.BooleanField(default=False)
    frozen = models.BooleanField(default=False)
    # Who pinned it to their overview (a pin is each reader's own).
    pinned_by = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="pinned_views", blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="one_view_name_per_owner")]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()}, {'shared' if self.shared else 'private'})"
