"""One permission per action: the roles as bundles, queue grants that add an action, the every-action bundle of
old, the migration that turns it into the new permissions, ``manage.py grant``, and the controls a page shows."""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from dashboard.actions.access import may, refusal
from dashboard.actions.models import ActionGrant, AuditEntry, QueueGrant
from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import api_token_create
from dashboard.permissions import ACTION_PERMISSIONS, NEEDS, PERMISSIONS, permission_for
from dashboard.roles import OPERATORS, VIEWERS
from queues import EchoMQ
from queues.operator_moves import OPERATOR_MOVES
from queues.schedules import Definition, add_schedule
from tests.support.jobs import failed_job

pytestmark = pytest.mark.django_db(transaction=True)

STATIC = Path(__file__).resolve().parents[3] / "static"


def _fresh(user: User) -> User:
    """The user as the next request loads it (permissions and grants read again)."""
    return User.objects.get(pk=user.pk)


def test_every_operator_move_needs_a_permission_of_its_own() -> None:
    assert {move.name for move in OPERATOR_MOVES} <= set(NEEDS)
    assert set(NEEDS.values()) <= set(ACTION_PERMISSIONS)


def test_operators_may_do_every_action_and_viewers_none(operator: User, viewer: User) -> None:
    assert all(may(operator, action, "mail") for action in [*ACTION_PERMISSIONS, *NEEDS])
    assert not any(may(viewer, action, "mail") for action in [*ACTION_PERMISSIONS, *NEEDS])
    assert may(viewer, "view_console")


def test_a_grant_adds_one_action_on_the_queues_its_pattern_matches_only(viewer: User) -> None:
    ActionGrant.objects.create(user=viewer, permission="retry_jobs", pattern="billing-*")
    viewer = _fresh(viewer)

    assert may(viewer, "retry", "billing-eu") and may(viewer, "retry_all", "billing-us")
    assert not may(viewer, "retry", "mail")
    assert not may(viewer, "retry")  # everywhere: a grant is not
    assert not may(viewer, "delete", "billing-eu")
    assert refusal(viewer, "retry", "mail") == ("You may not retry failed jobs on mail: that needs the permission "
                                                "emq_console.retry_jobs (you may on billing-* only).")


def test_a_grant_to_a_group_reaches_its_members(viewer: User) -> None:
    group = Group.objects.create(name="billing-team")
    viewer.groups.add(group)
    ActionGrant.objects.create(group=group, permission="purge_queues", pattern="billing-eu")

    assert may(_fresh(viewer), "purge_failed", "billing-eu")
    assert not may(_fresh(viewer), "purge_failed", "billing-us")


def test_a_permission_of_its_own_lets_an_account_do_that_action_on_every_queue_and_nothing_else(viewer: User) -> None:
    viewer.user_permissions.add(Permission.objects.get(codename="cancel_jobs"))
    viewer = _fresh(viewer)

    assert may(viewer, "cancel", "mail") and may(viewer, "cancel")
    assert not may(viewer, "delete", "mail")


def test_the_every_action_permission_of_old_still_means_every_action(db: None) -> None:
    legacy = User.objects.create_user(username="old", password="old-password")
    legacy.user_permissions.add(Permission.objects.get(codename="view_console"),
                                Permission.objects.get(codename="act_on_jobs"))
    legacy = _fresh(legacy)

    assert all(may(legacy, action, "mail") for action in [*ACTION_PERMISSIONS, *NEEDS])
    assert may(legacy, "a-move-added-later", "mail")


def test_an_action_nobody_named_a_permission_for_needs_every_permission(operator: User, viewer: User) -> None:
    ActionGrant.objects.create(user=viewer, permission="retry_jobs", pattern="*")

    assert permission_for("a-move-added-later") == "act_on_jobs"
    assert may(operator, "a-move-added-later", "mail")
    assert not may(_fresh(viewer), "a-move-added-later", "mail")


def test_an_operator_held_to_some_queues_stays_held_to_them_but_for_what_a_grant_adds(operator: User) -> None:
    QueueGrant.objects.create(user=operator, pattern="billing-*")
    ActionGrant.objects.create(user=operator, permission="retry_jobs", pattern="mail")
    operator = _fresh(operator)

    assert may(operator, "delete", "billing-eu") and not may(operator, "delete", "mail")
    assert may(operator, "retry", "mail") and not may(operator, "retry", "reports")


def test_an_account_without_a_role_may_do_nothing_even_with_a_grant(db: None) -> None:
    nora = User.objects.create_user(username="nora", password="nora-password")
    ActionGrant.objects.create(user=nora, permission="retry_jobs", pattern="*")

    assert not may(_fresh(nora), "retry", "mail") and not may(_fresh(nora), "view_console")


def test_the_migration_turns_the_every_action_permission_into_each_action(db: None) -> None:
    operators, _ = Group.objects.get_or_create(name=OPERATORS)
    executor = MigrationExecutor(connection)
    executor.migrate([("emq_console", "0002_view_console")])
    act = Permission.objects.get(codename="act_on_jobs")
    operators.permissions.set([act, Permission.objects.get(codename="view_console")])
    someone = User.objects.create_user(username="old", password="old-password")
    someone.user_permissions.add(act)

    MigrationExecutor(connection).migrate([("emq_console", "0003_action_permissions")])

    held = set(operators.permissions.values_list("codename", flat=True))
    assert held == {"view_console", *ACTION_PERMISSIONS}
    assert set(someone.user_permissions.values_list("codename", flat=True)) == set(ACTION_PERMISSIONS)
    assert set(Permission.objects.filter(content_type__app_label="emq_console").values_list("codename", flat=True)) \
        == {"act_on_jobs", *PERMISSIONS}


def test_manage_py_grant_adds_lists_and_revokes_an_action_on_a_queue(viewer: User) -> None:
    out = StringIO()
    call_command("grant", "vera", "retry", "--queue", "billing-*", stdout=out)
    call_command("grant", "--list", stdout=out)

    assert may(_fresh(viewer), "retry", "billing-eu") and not may(_fresh(viewer), "retry", "mail")
    assert out.getvalue().splitlines() == ["vera may retry_jobs on billing-*", "vera\tretry_jobs\tbilling-*"]

    call_command("grant", "vera", "retry_jobs", "--queue", "billing-*", "--revoke", stdout=out)
    assert not may(_fresh(viewer), "retry", "billing-eu")
    with pytest.raises(CommandError, match="has no grant"):
        call_command("grant", "vera", "retry_jobs", "--queue", "billing-*", "--revoke")


def test_manage_py_grant_gives_and_takes_an_action_everywhere_to_a_user_or_a_group(viewer: User) -> None:
    call_command("grant", "vera", "pause_queues", stdout=StringIO())
    assert may(_fresh(viewer), "pause", "mail")
    call_command("grant", "vera", "pause_queues", "--revoke", stdout=StringIO())
    assert not may(_fresh(viewer), "pause", "mail")

    call_command("grant", VIEWERS, "manage_alerts", "--group", stdout=StringIO())
    assert may(_fresh(viewer), "alert_add", "mail")


def test_manage_py_grant_names_the_actions_it_knows(viewer: User) -> None:
    with pytest.raises(CommandError, match="unknown action 'fly'.*retry_jobs"):
        call_command("grant", "vera", "fly")
    with pytest.raises(CommandError, match="no user named 'nobody'"):
        call_command("grant", "nobody", "retry")


def test_the_stylesheet_hides_the_controls_of_every_permission() -> None:
    css = (STATIC / "actions.css").read_text()

    for codename in ACTION_PERMISSIONS:
        assert f'body:not(.may-{codename}) [data-permission="{codename}"]' in css


def _body_class(client: Client, url: str) -> set[str]:
    match = re.search(r'<body class="([^"]*)"', client.get(url).content.decode())
    assert match
    return set(match[1].split())


def test_a_page_shows_the_controls_of_the_actions_the_user_may_do_on_its_queue(
        viewer: User, viewer_client: Client, operator_client: Client, console_mq: EchoMQ) -> None:
    failed_job(console_mq, "billing-eu", "a")
    failed_job(console_mq, "mail", "a")
    ActionGrant.objects.create(user=viewer, permission="retry_jobs", pattern="billing-*")

    on_billing = _body_class(viewer_client, "/queue/?q=billing-eu&state=failed")
    on_mail = _body_class(viewer_client, "/queue/?q=mail&state=failed")
    operator = _body_class(operator_client, "/queue/?q=mail&state=failed")
    page = viewer_client.get("/job/?q=billing-eu&id=a").content.decode()

    assert on_billing == {"can-act", "may-retry_jobs"}
    assert on_mail == {"can-act"}
    assert operator == {"can-act", *(f"may-{codename}" for codename in ACTION_PERMISSIONS)}
    assert 'value="retry" title' in page and 'data-permission="retry_jobs"' in page
    assert "vera · operator of some actions" in page


def test_a_viewer_without_grants_is_view_only(viewer_client: Client, console_mq: EchoMQ) -> None:
    assert _body_class(viewer_client, "/") == {"view-only"}


def test_a_user_who_may_manage_tokens_lists_and_revokes_everyone_s_and_the_log_says_so(
        viewer: User, operator: User, operator_client: Client, viewer_client: Client) -> None:
    api_token_create(user=viewer, name="grafana", scope="read")
    api_token_create(user=operator, name="deploy")
    grafana, deploy = ApiToken.objects.get(name="grafana"), ApiToken.objects.get(name="deploy")

    page = operator_client.get("/tokens/").content.decode()
    refused = viewer_client.post("/tokens/revoke/", {"id": str(deploy.pk)})
    revoked = operator_client.post("/tokens/revoke/", {"id": str(grafana.pk)})

    assert 'id="others-tokens"' in page and "grafana" in page
    assert refused.status_code == 403 and "viewers see everything" in refused.content.decode()
    assert ApiToken.objects.filter(pk=deploy.pk).exists()
    assert revoked.status_code == 302 and not ApiToken.objects.filter(pk=grafana.pk).exists()
    entry = AuditEntry.objects.get(action="token_revoke")
    assert (entry.username, entry.parameters) == ("otto", {"owner": "vera", "name": "grafana"})
    assert 'id="others-tokens"' not in viewer_client.get("/tokens/").content.decode()


def test_a_schedule_row_offers_its_alert_to_whoever_may_make_alerts_and_its_buttons_to_whoever_may_change_it(
        viewer: User, viewer_client: Client, console_mq: EchoMQ) -> None:
    add_schedule(console_mq, "mail", "nightly", Definition.of(every_ms=60_000, payload="x"))
    ActionGrant.objects.create(user=viewer, permission="manage_alerts", pattern="mail")

    page = viewer_client.get("/schedules/").content.decode()

    assert "Alert if a tick is missed" in page and "Run now" not in page
