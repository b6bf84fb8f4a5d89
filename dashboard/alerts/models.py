"""Alert rules, their deliveries and silences: console data, in the console's database.

A rule watches one condition (a saved view, a failure group, a queue's why
state, an objective's burn rate, a schedule's tick); the evaluator (one
console process at a time, under a lock) turns it firing when the condition
holds and resolved when it stops holding. Each firing is numbered
(``firings``), and a delivery is unique per rule, firing, event and channel:
the same firing is never delivered twice, whoever evaluates.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

NAME_LIMIT = 100


class AlertRule(models.Model):
    class Kind(models.TextChoices):
        VIEW = "view", "a saved view finds jobs"
        FAILURE_GROUP = "failure_group", "a failure group holds jobs"
        WHY = "why", "a queue is not draining"
        SLO_BURN = "slo_burn", "an objective burns its error budget"
        SCHEDULE = "schedule", "a schedule's tick is not seen"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL,
                              related_name="alert_rules")
    name = models.CharField(max_length=NAME_LIMIT, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    queue = models.CharField(max_length=128, blank=True)
    view = models.ForeignKey("saved_views.SavedView", null=True, blank=True, on_delete=models.CASCADE,
                             related_name="alert_rules")
    # What the kind needs: {"codes": [...]}, {"group": ..., "at_least": n}, {"at_least": n},
    # {"threshold": 14.4, "windows": ["1h", "5m"]}, {"schedule": name, "grace_s": s}.
    parameters = models.JSONField(default=dict, blank=True)
    webhook_url = models.CharField(max_length=500, blank=True)
    # The webhook's HMAC-SHA256 key: shown once, when the rule is made, and never again.
    secret = models.CharField(max_length=128, blank=True)
    emails = models.JSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # The evaluator's state: the current (or last) firing's number and since when it holds.
    firing = models.BooleanField(default=False)
    firings = models.PositiveIntegerField(default=0)
    firing_since = models.DateTimeField(null=True, blank=True)
    evaluated_at = models.DateTimeField(null=True, blank=True)
    observed = models.TextField(blank=True)  # what the last evaluation saw, in words
    error = models.TextField(blank=True)  # why the last evaluation could not decide ("" when it could)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"


class AlertSilence(models.Model):
    """While it lasts, a rule's firings (every rule's, when ``rule`` is None) are recorded but not delivered."""

    rule = models.ForeignKey(AlertRule, null=True, blank=True, on_delete=models.CASCADE, related_name="silences")
    ends_at = models.DateTimeField(db_index=True)
    reason = models.CharField(max_length=500, blank=True)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-ends_at", "-id"]

    def __str__(self) -> str:
        return f"silence of {self.rule or 'every rule'} until {self.ends_at:%Y-%m-%d %H:%M}"


class AlertDelivery(models.Model):
    class Event(models.TextChoices):
        FIRING = "firing", "firing"
        RESOLVED = "resolved", "resolved"

    class Channel(models.TextChoices):
        WEBHOOK = "webhook", "signed webhook"
        EMAIL = "email", "e-mail"

    class Status(models.TextChoices):
        PENDING = "pending", "to deliver"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "given up"
        SILENCED = "silenced", "silenced, not delivered"

    rule = models.ForeignKey(AlertRule, on_delete=models.CASCADE, related_name="deliveries")
    firing = models.PositiveIntegerField()
    event = models.CharField(max_length=16, choices=Event.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(db_index=True)
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [models.UniqueConstraint(fields=["rule", "firing", "event", "channel"],
                                               name="one_delivery_per_firing_event_channel")]

    @property
    def delivery_id(self) -> str:
        """What a receiver deduplicates on: the same on every retry of this delivery."""
        return f"{self.rule_id}-{self.firing}-{self.event}"

    def __str__(self) -> str:
        return f"{self.rule} #{self.firing} {self.event} by {self.channel}: {self.status}"
