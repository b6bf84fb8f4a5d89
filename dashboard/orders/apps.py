from __future__ import annotations

from typing import Any

from django.apps import AppConfig


def _roles_changed(sender: Any, instance: Any, action: str, reverse: bool, pk_set: set[int] | None,
                   **kwargs: Any) -> None:
    """A role or permission taken away: the users' tokens go (a demoted operator's script must not act on)."""
    from django.contrib.auth import get_user_model

    from .tokens import api_tokens_delete_all

    if action not in ("post_remove", "pre_clear"):
        return
    if not reverse:
        api_tokens_delete_all(instance)
    elif action == "pre_clear":
        for user in instance.user_set.all():
            api_tokens_delete_all(user)
    else:
        for user in get_user_model().objects.filter(pk__in=pk_set or ()):
            api_tokens_delete_all(user)


def _user_saved(sender: Any, instance: Any, **kwargs: Any) -> None:
    from .tokens import api_tokens_delete_all

    if not instance.is_active:
        api_tokens_delete_all(instance)


class OrdersConfig(AppConfig):
    name = "dashboard.orders"
    label = "orders"
    verbose_name = "Exchange orders API"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from django.db.models.signals import m2m_changed, post_save

        # The project's user model, which a host project may have swapped for its own.
        User = get_user_model()
        for through in (User.groups.through, User.user_permissions.through):
            m2m_changed.connect(_roles_changed, sender=through, dispatch_uid=f"tokens-{through.__name__}")
        post_save.connect(_user_saved, sender=User, dispatch_uid="tokens-deactivated")
