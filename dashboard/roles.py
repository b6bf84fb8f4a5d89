"""The two roles, as default bundles of the console's permissions (``dashboard.permissions``): viewers see
everything and change nothing; operators may do every action. A group of one's own holds any other bundle."""

from __future__ import annotations

from typing import Any, Final

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractUser, AnonymousUser, Group, Permission, User
from django.contrib.contenttypes.models import ContentType

from .models import Console
from .permissions import ACTION_PERMISSIONS, ALL_ACTIONS, LEGACY_PERMISSIONS, PERMISSIONS, VIEW, qualified

OPERATORS: Final = "operators"
VIEWERS: Final = "viewers"
# Every action, as one permission: what operators held before each action had its own; it still means them all.
ACT_PERMISSION: Final = qualified(ALL_ACTIONS)
# Both roles hold it; an account outside them (one made only to place orders, say) does not, so its API
# token reads neither /metrics nor the JSON API.
VIEW_PERMISSION: Final = qualified(VIEW)


def console_permissions(codenames: tuple[str, ...]) -> list[Permission]:
    """The permission rows of ``codenames``, made if missing (before post_migrate has run)."""
    content_type = ContentType.objects.get_for_model(Console, for_concrete_model=False)
    names = {**LEGACY_PERMISSIONS, **PERMISSIONS}
    return [Permission.objects.get_or_create(codename=codename, content_type=content_type,
                                             defaults={"name": names[codename]})[0] for codename in codenames]


def ensure_roles() -> tuple[Group, Group]:
    """Creates the groups (and the permissions, before post_migrate has run) if missing; adds, never takes away."""
    operators, _ = Group.objects.get_or_create(name=OPERATORS)
    operators.permissions.add(*console_permissions((VIEW, *ACTION_PERMISSIONS)))
    viewers, _ = Group.objects.get_or_create(name=VIEWERS)
    viewers.permissions.add(*console_permissions((VIEW,)))
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


def holds(user: AbstractUser | AnonymousUser, codename: str) -> bool:
    """Whether ``user`` holds the console permission ``codename`` everywhere (the every-action bundle counts for
    each action). Queue grants are ``dashboard.actions.access.may``'s to add."""
    if not user.is_authenticated:
        return False
    if user.has_perm(qualified(codename)):
        return True
    return codename != VIEW and user.has_perm(ACT_PERMISSION)


def can_view(user: AbstractUser | AnonymousUser) -> bool:
    return bool(user.is_authenticated and (user.has_perm(VIEW_PERMISSION) or user.has_perm(ACT_PERMISSION)))
