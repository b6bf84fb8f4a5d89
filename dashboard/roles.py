"""The two roles: viewers see everything and change nothing; operators may act."""

from __future__ import annotations

from typing import Any, Final

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, AnonymousUser, Group, Permission, User
from django.contrib.contenttypes.models import ContentType

from .models import Console

OPERATORS: Final = "operators"
VIEWERS: Final = "viewers"
ACT_PERMISSION: Final = "emq_console.act_on_jobs"
# Both roles hold it; an account outside them (one made only to place orders, say) does not, so its API
# token reads neither /metrics nor the JSON API.
VIEW_PERMISSION: Final = "emq_console.view_console"


def ensure_roles() -> tuple[Group, Group]:
    """Creates the groups (and the permission, before post_migrate has run) if missing."""
    content_type = ContentType.objects.get_for_model(Console, for_concrete_model=False)
    act, _ = Permission.objects.get_or_create(
        codename="act_on_jobs", content_type=content_type,
        defaults={"name": "Can retry, recover, promote, cancel, delete and purge jobs"},
    )
    view, _ = Permission.objects.get_or_create(
        codename="view_console", content_type=content_type,
        defaults={"name": "Can see queues, jobs, metrics and the audit log"},
    )
    operators, _ = Group.objects.get_or_create(name=OPERATORS)
    operators.permissions.add(act, view)
    viewers, _ = Group.objects.get_or_create(name=VIEWERS)
    viewers.permissions.add(view)
    return operators, viewers


def user_create(*, username: str, password: str, role: str) -> User:
    """Creates or resets a console user in the given role (``operators`` or ``viewers``)."""
    operators, viewers = ensure_roles()
    group = {OPERATORS: operators, VIEWERS: viewers}[role]
    model = get_user_model()  # the project's, which a host project may have swapped for its own
    lookup: dict[str, Any] = {model.USERNAME_FIELD: username}
    user, _ = model.objects.get_or_create(**lookup)
    user.set_password(password)
    user.save()
    user.groups.set([group])
    return user


def can_act(user: AbstractUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.has_perm(ACT_PERMISSION))


def can_view(user: AbstractUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and (user.has_perm(VIEW_PERMISSION) or user.has_perm(ACT_PERMISSION)))
