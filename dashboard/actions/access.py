"""Who may act: operators (the console's act permission), optionally only on some queues.

Every action path asks here, on the server; hidden buttons are only a courtesy.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from dashboard.deployments import current, deployment_refusal
from dashboard.roles import can_act, can_view
from dashboard.viewing import NO_ROLE_REFUSAL

from .models import QueueGrant

VIEWER_REFUSAL = "You are signed in as a viewer: viewers see everything and change nothing. Ask an admin for the operators role."


def refusal(user: Any, queue: str | None = None) -> str | None:
    """Why ``user`` may not act (on ``queue``), or None when they may."""
    if not user.is_authenticated or not can_view(user):
        return NO_ROLE_REFUSAL
    if not can_act(user):
        return VIEWER_REFUSAL
    refused = deployment_refusal(user, current(), acting=True)
    if refused is not None:
        return refused
    if queue is None:
        return None
    return grant_refusal(user, queue)


def grant_refusal(user: Any, queue: str) -> str | None:
    """Why ``user``'s queue grants leave ``queue`` out, or None (no grants: every queue)."""
    patterns = list(QueueGrant.objects.filter(user=user).values_list("pattern", flat=True))
    if patterns and not any(fnmatchcase(queue, pattern) for pattern in patterns):
        return f"You may act on the queues {', '.join(sorted(patterns))} only, not on {queue}."
    return None


def see_refusal(user: Any, queue: str) -> str | None:
    """Why ``user`` may not be shown ``queue``'s jobs through a saved view or an alert, or None when they may.

    Reading needs a console role; queue grants narrow it as they narrow acting (a view or an alert carries a
    queue's data to whoever opens or receives it). ``queue`` "" is every queue: only for an account without grants.
    """
    if not user.is_authenticated or not can_view(user):
        return NO_ROLE_REFUSAL
    refused = deployment_refusal(user, current(), acting=False)
    if refused is not None:
        return refused
    patterns = sorted(QueueGrant.objects.filter(user=user).values_list("pattern", flat=True))
    if not patterns:
        return None
    if not queue:
        return f"You may see the queues {', '.join(patterns)} only, not every queue."
    if not any(fnmatchcase(queue, pattern) for pattern in patterns):
        return f"You may see the queues {', '.join(patterns)} only, not {queue}."
    return None


def may_act(user: Any, queue: str | None = None) -> bool:
    return refusal(user, queue) is None


def entry_refusal(user: Any, queues: list[str]) -> str | None:
    """Why ``user`` may not act on a run over ``queues`` (every one of them must be theirs), or None."""
    for queue in queues or [""]:
        reason = refusal(user, queue)
        if reason is not None:
            return reason
    return None
