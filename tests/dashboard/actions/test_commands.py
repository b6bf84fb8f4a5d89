"""createoperator and createviewer: console users in one role, their password from a prompt or $EMQ_PASSWORD."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from dashboard.actions.access import may

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def password(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("EMQ_PASSWORD", "olga-password-1")
    return "olga-password-1"


def test_createoperator_makes_a_user_who_may_act_on_every_queue(db: None, password: str) -> None:
    call_command("createoperator", "olga")

    user = User.objects.get(username="olga")
    assert user.check_password(password)
    assert may(user, "retry", "mail") and may(user, "retry", "billing")
    assert [g.name for g in user.groups.all()] == ["operators"]


def test_createoperator_can_restrict_an_operator_to_some_queues(db: None, password: str) -> None:
    call_command("createoperator", "olga", queue=["billing-*", "mail"])

    user = User.objects.get(username="olga")
    assert may(user, "retry", "billing-eu") and may(user, "retry", "mail")
    assert not may(user, "retry", "reports")


def test_createviewer_makes_a_user_who_may_not_act(db: None, password: str) -> None:
    call_command("createviewer", "vic")

    user = User.objects.get(username="vic")
    assert user.check_password(password) and not may(user, "retry", "mail")
    assert [g.name for g in user.groups.all()] == ["viewers"]


def test_running_it_again_resets_the_password_and_the_role(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMQ_PASSWORD", "first-password-1")
    call_command("createoperator", "sam", queue=["mail"])
    monkeypatch.setenv("EMQ_PASSWORD", "second-password-2")
    call_command("createviewer", "sam")

    user = User.objects.get(username="sam")
    assert user.check_password("second-password-2") and not may(user, "retry", "mail")
    assert not user.queue_grants.exists()


@pytest.mark.parametrize("weak, reason", [
    ("short-pw", "too short"),
    ("password", "too common"),
    ("12345678", "entirely numeric"),
    ("password1234", "too common"),
    ("olga-the-operator", "too similar to the username"),
])
def test_a_weak_password_is_refused_with_the_reason(db: None, monkeypatch: pytest.MonkeyPatch, weak: str,
                                                   reason: str) -> None:
    monkeypatch.setenv("EMQ_PASSWORD", weak)

    with pytest.raises(CommandError, match=reason):
        call_command("createoperator", "olga-the-operator" if "similar" in reason else "olga")
    assert not User.objects.exists()


def test_a_password_on_the_command_line_is_not_taken(db: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMQ_PASSWORD", raising=False)

    with pytest.raises((CommandError, TypeError)):
        call_command("createoperator", "olga", password="olga-password-1")
    with pytest.raises(CommandError, match="set EMQ_PASSWORD"):
        call_command("createoperator", "olga")
    assert not User.objects.exists()


def test_the_password_can_be_typed_at_a_prompt_twice(db: None, tmp_path: Path) -> None:
    env = {**{k: v for k, v in os.environ.items() if k != "EMQ_PASSWORD"}, "DJANGO_SETTINGS_MODULE": "tests.settings",
           "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "PYTHONPATH": str(ROOT)}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=120)
    leader, follower = os.openpty()
    # A session of its own: no controlling terminal, so getpass prompts on stderr and reads stdin,
    # both the pseudo-terminal it is given.
    command = subprocess.Popen([*manage, "createviewer", "tess"], env=env, cwd=ROOT, stdin=follower,
                               stdout=subprocess.PIPE, stderr=follower, start_new_session=True)
    os.close(follower)
    for _ in range(2):
        _wait_for_prompt(leader)
        os.write(leader, b"tess-typed-password-7\n")
    out, _ = command.communicate(timeout=60)
    os.close(leader)

    assert command.returncode == 0
    assert b"viewer tess is ready" in out
    check = subprocess.run([*manage, "shell", "-v0", "-c", "from django.contrib.auth.models import User; "
                            "print(User.objects.get(username='tess').check_password('tess-typed-password-7'))"],
                           env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "True", check.stderr


def _wait_for_prompt(leader: int, timeout: float = 60.0) -> None:
    seen = b""
    deadline = time.monotonic() + timeout
    while b"Password" not in seen:
        if time.monotonic() > deadline:
            raise AssertionError(f"no password prompt, saw {seen!r}")
        ready, _, _ = select.select([leader], [], [], 1.0)
        if ready:
            seen += os.read(leader, 1024)
