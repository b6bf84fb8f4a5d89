"""What the signed-in user may do, for templates: ``{% may "manage_alerts" queue as allowed %}``, and the body's
classes that show each action's controls (``static/actions.css`` hides a ``data-permission`` control whose
``may-<permission>`` class the body lacks). The server refuses whatever a page shows anyway."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.actions import access
from dashboard.permissions import ACTION_PERMISSIONS, NEEDS
from dashboard.roles import can_view, holds

register = template.Library()


def _user(context: Any) -> Any:
    request = context.get("request")
    return context.get("user") or (request.user if request is not None else None)


@register.simple_tag(takes_context=True)
def may(context: Any, action: str, queue: str | None = None) -> bool:
    """Whether the user may do ``action`` (a permission, a move, an audit action), on ``queue`` when given ("" or
    none: everywhere)."""
    user = _user(context)
    return user is not None and access.may(user, action, queue or None)


@register.simple_tag(takes_context=True)
def acts_on(context: Any, queue: str | None = None) -> bool:
    """Whether the user may do some action on ``queue`` (none: some action somewhere)."""
    user = _user(context)
    if user is None or not access.acts_at_all(user):
        return False
    return not queue or any(access.may(user, codename, queue) for codename in ACTION_PERMISSIONS)


@register.simple_tag(takes_context=True)
def permission_classes(context: Any) -> str:
    """``can-act`` and one ``may-<permission>`` class a permission the user may use on the page's queue (its
    ``q``; none: everywhere), or ``view-only``."""
    user = _user(context)
    if user is None or not access.acts_at_all(user):
        return "view-only"
    request = context.get("request")
    queue = (request.GET.get("q") or None) if request is not None else None
    allowed = [codename for codename in ACTION_PERMISSIONS if access.may(user, codename, queue)]
    return " ".join(["can-act", *(f"may-{codename}" for codename in allowed)])


@register.filter
def permission_of(action: str) -> str:
    """The permission a move or an action needs (``retry`` → ``retry_jobs``)."""
    return NEEDS.get(action, action)


@register.simple_tag(takes_context=True)
def role_name(context: Any) -> str:
    """What the header calls the user: operator (every action), operator of some actions, viewer, or no role."""
    user = _user(context)
    if user is None or not user.is_authenticated or not can_view(user):
        return "no console role"
    if all(holds(user, codename) for codename in ACTION_PERMISSIONS):
        return "operator"
    return "operator of some actions" if access.acts_at_all(user) else "viewer"
