"""createoperator and createviewer: console users in one role, from the command line."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from dashboard.actions.access import may_act


def test_createoperator_makes_a_user_who_may_act_on_every_queue(db: None) -> None:
    call_command("createoperator", "olga", password="olga-password-1")

    user = User.objects.get(username="olga")
    assert user.check_password("olga-password-1")
    assert may_act(user, "mail") and may_act(user, "billing")
    assert [g.name for g in user.groups.all()] == ["operators"]


def test_createoperator_can_restrict_an_operator_to_some_queues(db: None) -> None:
    call_command("createoperator", "olga", password="olga-password-1", queue=["billing-*", "mail"])

    user = User.objects.get(username="olga")
    assert may_act(user, "billing-eu") and may_act(user, "mail")
    assert not may_act(user, "reports")


def test_createviewer_makes_a_user_who_may_not_act(db: None) -> None:
    call_command("createviewer", "vic", password="vic-password-1")

    user = User.objects.get(username="vic")
    assert user.check_password("vic-password-1") and not may_act(user, "mail")
    assert [g.name for g in user.groups.all()] == ["viewers"]


def test_running_it_again_resets_the_password_and_the_role(db: None) -> None:
    call_command("createoperator", "sam", password="first-password", queue=["mail"])
    call_command("createviewer", "sam", password="second-password")

    user = User.objects.get(username="sam")
    assert user.check_password("second-password") and not may_act(user, "mail")
    assert not user.queue_grants.exists()


def test_a_too_short_password_is_refused_with_the_reason(db: None) -> None:
    with pytest.raises(CommandError, match="too short"):
        call_command("createoperator", "olga", password="short")
    assert not User.objects.filter(username="olga").exists()
