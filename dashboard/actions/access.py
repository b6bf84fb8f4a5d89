"""Who may do what: :func:`may` decides for every view, API call, socket and template.

Each action needs its permission (``dashboard.permissions``): held everywhere (through a role, a group or
the account), or added on some queues by an :class:`ActionGrant`. A :class:`QueueGrant` narrows what an
account holds everywhere to some queues. Every action path asks here, on the server; hidden buttons are
only a courtesy.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import Any

from django.db.models import Q

from dashboard.deployments import current, deployment_refusal
from dashboard.permissions import ACTION_PERMISSIONS, ALL_ACTIONS, PERMISSIONS, VIEW, permission_for, qualified
from dashboard.roles import can_view, holds
from dashboard.viewing import NO_ROLE_REFUSAL

from .models import ActionGrant, QueueGrant

VIEWER_REFUSAL = "You are signed in as a viewer: viewers see everything and change nothing. Ask an admin for the operators role."
# Where a user's action grants are kept for the rest of the request (a page asks for each button).
_GRANTS_CACHE = "_emq_action_grants"
_RESTRICTION_CACHE = "_emq_queue_restriction"


def may(user: Any, action: str, queue: str | None = None) -> bool:
    """Whether ``user`` may do ``action`` (a permission's codename, an operator move's name or an audit action's),
    on ``queue`` when given; without one, whether they hold it everywhere."""
    return refusal(user, action, queue) is None


def refusal(user: Any, action: str, queue: str | None = None) -> str | None:
    """Why ``user`` may not do ``action`` (on ``queue``), in words, or None when they may."""
    if not user.is_authenticated or not can_view(user):
        return NO_ROLE_REFUSAL
    codename = permission_for(action)
    if codename == VIEW:
        return None
    if acts_at_all(user):
        refused = deployment_refusal(user, current(), acting=True)
        if refused is not None:
            return refused
    patterns = sorted(pattern for granted, pattern in action_grants(user) if granted == codename)
    if queue is not None and any(fnmatchcase(queue, pattern) for pattern in patterns):
        return None
    if _holds(user, codename):
        return None if queue is None else grant_refusal(user, queue)
    if not acts_at_all(user):
        return VIEWER_REFUSAL
    what = PERMISSIONS.get(codename, "do every console action").removeprefix("Can ")
    where = f" on {queue}" if queue is not None else " on every queue"
    granted = f" (you may on {', '.join(patterns)} only)" if patterns else ""
    return f"You may not {what}{where}: that needs the permission {qualified(codename)}{granted}."


def _holds(user: Any, codename: str) -> bool:
    if codename == ALL_ACTIONS:  # an action without a permission of its own: whoever holds every one
        return holds(user, ALL_ACTIONS) or all(holds(user, name) for name in ACTION_PERMISSIONS)
    return holds(user, codename)


def action_grants(user: Any) -> list[tuple[str, str]]:
    """The (permission, queue pattern) pairs granted to ``user`` and to their groups, read once per user object."""
    cached: list[tuple[str, str]] | None = getattr(user, _GRANTS_CACHE, None)
    if cached is None:
        to = Q(user=user)
        if hasattr(user, "groups"):
            to |= Q(group__in=user.groups.all())
        cached = sorted(set(ActionGrant.objects.filter(to).values_list("permission", "pattern")))
        setattr(user, _GRANTS_CACHE, cached)
    return cached


def acts_at_all(user: Any) -> bool:
    """Whether ``user`` may do some action somewhere: the page shows them the action controls."""
    if not user.is_authenticated or not can_view(user):
        return False
    return any(holds(user, name) for name in ACTION_PERMISSIONS) or bool(action_grants(user))


def acting_refusal(user: Any) -> str | None:
    """Why ``user`` may do no action anywhere, or None (each action is then checked with its queue)."""
    if not user.is_authenticated or not can_view(user):
        return NO_ROLE_REFUSAL
    return None if acts_at_all(user) else VIEWER_REFUSAL


def _queue_restriction(user: Any) -> list[str]:
    """The patterns of ``user``'s queue grants (none: every queue), read once per user object."""
    cached: list[str] | None = getattr(user, _RESTRICTION_CACHE, None)
    if cached is None:
        cached = list(QueueGrant.objects.filter(user=user).values_list("pattern", flat=True))
        setattr(user, _RESTRICTION_CACHE, cached)
    return cached


def grant_refusal(user: Any, queue: str) -> str | None:
    """Why ``user``'s queue grants leave ``queue`` out, or None (no grants: every queue)."""
    patterns = _queue_restriction(user)
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


def entry_refusal(user: Any, action: str, queues: list[str]) -> str | None:
    """Why ``user`` may not do ``action`` over ``queues`` (a run over every one of them), or None."""
    for queue in queues or [""]:
        reason = refusal(user, action, queue)
        if reason is not None:
            return reason
    return None
