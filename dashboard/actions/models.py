"""The audit log: every operator action, single or bulk, as one row, refusals included.

A row holds only validated, bounded fields: ids, queue, action, the state
and attempts the page showed, counts; its free text (``result``) is cut to
RESULT_LIMIT characters, so no request can make a row large.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.deployments import current
from dashboard.permissions import ACTION_PERMISSIONS, PERMISSIONS
from queues.operator_moves import OPERATOR_MOVES

# A run saves its progress every quarter second; a minute of silence means its process is gone.
STALLED_AFTER: Final = timedelta(minutes=1)
# The most characters of free text a row keeps; longer text ends with how much was cut.
RESULT_LIMIT: Final = 1000
NAME_LIMIT: Final = 150


def bounded(text: str, limit: int = RESULT_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying so when it was."""
    if len(text) <= limit:
        return text
    note = f"… ({len(text) - limit} more characters not kept)"
    return text[:max(0, limit - len(note))] + note


def audit_actions() -> list[tuple[str, str]]:
    """Every action the log may hold, and its label: the operator moves (queues.operator_moves), then the rest.

    The fields take this function, not its list, so that a migration names the function: a move added
    to the table needs no migration.
    """
    return [(move.name, move.label) for move in OPERATOR_MOVES] + AuditEntry.Action.choices


class AuditEntry(models.Model):
    class Scope(models.TextChoices):
        JOB = "job", "one job"
        SELECTION = "selection", "ticked jobs"
        QUEUE = "queue", "whole queue"
        SEARCH = "search", "jobs a search found"
        ACCOUNT = "account", "an account"

    class Outcome(models.TextChoices):
        RUNNING = "running", "running"
        MOVED = "moved", "moved"
        REFUSED = "refused", "refused"
        FINISHED = "finished", "finished"
        CANCELLED = "cancelled", "cancelled"
        ERROR = "error", "error"

    class Action(models.TextChoices):
        """What the log records besides the operator moves (whose names and labels are in their table)."""

        CANCEL_RUN = "cancel_run", "cancel a bulk run"
        PLACE_ORDER = "place_order", "place an order"
        MARK_DEPLOY = "mark_deploy", "mark a deploy"
        LOGIN = "login", "log in"
        SLO_SET = "slo_set", "set a latency objective"
        SLO_DELETE = "slo_delete", "delete a latency objective"
        ALERT_ADD = "alert_add", "make an alert rule"
        ALERT_DELETE = "alert_delete", "delete an alert rule"
        ALERT_FIRE = "alert_fire", "an alert fired"
        ALERT_RESOLVE = "alert_resolve", "an alert resolved"
        ALERT_DELIVER = "alert_deliver", "deliver an alert"
        ALERT_SILENCE = "alert_silence", "silence alerts"
        ALERT_UNSILENCE = "alert_unsilence", "end a silence"
        SCHEDULE_ADD = "schedule_add", "add a schedule"
        SCHEDULE_EDIT = "schedule_edit", "edit a schedule"
        SCHEDULE_PAUSE = "schedule_pause", "pause a schedule"
        SCHEDULE_RESUME = "schedule_resume", "resume a schedule"
        SCHEDULE_RUN = "schedule_run", "run a schedule now"
        SCHEDULE_DELETE = "schedule_delete", "delete a schedule"
        SCHEMA_SET = "schema_set", "set a payload schema"
        TOKEN_REVOKE = "token_revoke", "revoke another user's API token"
        REDACTION_SET = "redaction_set", "set masked payload paths"
        # A refused request that named no action the console knows.
        UNKNOWN = "unknown", "an unknown action"

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A running bulk action writes its progress here; a stale value means its process stopped.
    updated_at = models.DateTimeField(null=True, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="audit_entries")
    # Kept as text too, so the log still says who after the account is deleted.
    username = models.CharField(max_length=150, db_index=True)
    queue = models.CharField(max_length=128, db_index=True)
    action = models.CharField(max_length=16, choices=audit_actions, db_index=True)
    scope = models.CharField(max_length=16, choices=Scope.choices)
    # The jobs acted on, each as the page showed it: {"id", "state", "attempts"}.
    jobs = models.JSONField(default=list, blank=True)
    parameters = models.JSONField(default=dict, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, db_index=True)
    result = models.TextField(blank=True)
    moved = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    missing = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    # What happened to each ticked job (selection runs): the jobs' entries plus "outcome" and "text".
    outcomes = models.JSONField(default=list, blank=True)
    cancel_requested_by = models.CharField(max_length=150, blank=True)
    # Which Redis deployment it acted on (EMQ_DEPLOYMENTS): the one the request showed.
    deployment = models.CharField(max_length=32, blank=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "audit entry"
        verbose_name_plural = "audit log"

    def __str__(self) -> str:
        return f"{self.username} {self.action} on {self.queue}: {self.outcome}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.result = bounded(self.result)
        self.username = self.username[:NAME_LIMIT]
        self.cancel_requested_by = self.cancel_requested_by[:NAME_LIMIT]
        if not self.deployment:
            self.deployment = current().name
        super().save(*args, **kwargs)

    @property
    def is_running(self) -> bool:
        return self.outcome == self.Outcome.RUNNING

    @property
    def is_stalled(self) -> bool:
        """A running row without progress for STALLED_AFTER: the process running it has most likely stopped."""
        reference = self.updated_at or self.created_at
        return self.is_running and reference is not None and timezone.now() - reference > STALLED_AFTER

    @property
    def expected(self) -> str:
        """The state (and attempts) the operator saw, for a single-job action."""
        if self.scope != self.Scope.JOB or not self.jobs:
            return ""
        seen: dict[str, Any] = self.jobs[0]
        return f"{seen.get('state', '')} (attempts {seen.get('attempts') or 'any'})"

    @property
    def queues(self) -> list[str]:
        """The queues the action touched: its own, or those of a search of many (their names in its counts)."""
        if self.queue:
            return [self.queue]
        counts = self.parameters.get("counts") if isinstance(self.parameters, dict) else None
        return [name for name in counts if isinstance(name, str)] if isinstance(counts, dict) else []

    @property
    def where(self) -> str:
        """The queue, as a row or a run names it: one name, or how many queues."""
        if self.queue:
            return self.queue
        queues = self.queues
        return f"{len(queues)} queue{'' if len(queues) == 1 else 's'}" if queues else ""

    @property
    def tally(self) -> str:
        if self.scope == self.Scope.JOB:
            return ""
        text = f"{self.moved} moved, {self.skipped} skipped because they had moved on, {self.missing} missing"
        return text + (f", {self.errors} errors" if self.errors else "")


class QueueGrant(models.Model):
    """Restricts an operator to some queues. An operator without grants may act on every queue. (An
    :class:`ActionGrant` is the other way round: it adds an action on some queues.)

    ``pattern`` is a queue name or a shell-style pattern (``billing-*``).
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="queue_grants")
    pattern = models.CharField(max_length=128)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "pattern"], name="one_grant_per_pattern")]

    def __str__(self) -> str:
        return f"{self.user} may act on {self.pattern}"


def action_permission_choices() -> list[tuple[str, str]]:
    return [(codename, f"{codename}: {PERMISSIONS[codename]}") for codename in ACTION_PERMISSIONS]


class ActionGrant(models.Model):
    """Adds one action on some queues for a user (or every member of a group) who lacks it everywhere: a viewer
    who may retry on ``billing-*``, say. Grants only add; what someone holds everywhere they keep.

    ``pattern`` is a queue name or a shell-style pattern (``billing-*``); ``permission`` a codename of
    ``dashboard.permissions.ACTION_PERMISSIONS``.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="action_grants")
    group = models.ForeignKey("auth.Group", null=True, blank=True, on_delete=models.CASCADE,
                              related_name="action_grants")
    pattern = models.CharField(max_length=128)
    permission = models.CharField(max_length=32, choices=action_permission_choices)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(user__isnull=False, group__isnull=True)
                                   | models.Q(user__isnull=True, group__isnull=False),
                                   name="action_grant_to_a_user_or_a_group"),
            models.UniqueConstraint(fields=["user", "group", "pattern", "permission"], name="one_action_grant"),
        ]

    def __str__(self) -> str:
        return f"{self.user or f'group {self.group}'} may {self.permission} on {self.pattern}"


class Confirmation(models.Model):
    """The single-use half of a confirmation: the signed token names this row, which is spent once.

    The token (see :mod:`dashboard.actions.confirmations`) carries the nonce,
    the user and a digest of the action and its parameters; this row makes a
    replay of the same token refused, on any console process.
    """

    nonce = models.CharField(max_length=32, unique=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="confirmations")
    action = models.CharField(max_length=16, choices=audit_actions)
    queue = models.CharField(max_length=128)
    digest = models.CharField(max_length=64)
    # How many jobs the confirmation said it would touch, when it was asked.
    count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.user} {self.action} on {self.queue} ({'used' if self.used_at else 'open'})"
