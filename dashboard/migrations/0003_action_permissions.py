from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import migrations

# As dashboard.permissions had them when this migration was written: a migration does not follow later edits.
ACTIONS = {
    "retry_jobs": "Can retry failed jobs",
    "cancel_jobs": "Can cancel pending and running jobs",
    "delete_jobs": "Can delete jobs",
    "promote_jobs": "Can promote delayed jobs",
    "purge_queues": "Can purge done and failed jobs",
    "recover_leases": "Can recover lapsed leases",
    "pause_queues": "Can pause and resume queues",
    "edit_payloads": "Can edit and restore payloads and set a queue's payload schema",
    "rerun_jobs": "Can re-run and clone jobs",
    "remove_keys": "Can remove a state key of another type",
    "mark_deploys": "Can mark deploys",
    "manage_schedules": "Can add, edit, pause, resume, run and delete schedules",
    "manage_alerts": "Can make and delete alert rules and silences",
    "manage_slos": "Can set and delete latency objectives",
    "manage_tokens": "Can list and revoke every user's API tokens",
}
LEGACY = ("act_on_jobs", "Can retry, recover, promote, cancel, delete and purge jobs")
VIEW = ("view_console", "Can see queues, jobs, metrics and the audit log")


def give_operators_every_action(apps: Any, schema_editor: Any) -> None:
    """Whoever held the one act permission (the operators group, any other group or user given it) holds each of
    the new ones instead: the same abilities, now one per action, so an admin can take one away."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="emq_console", model="console")
    new = [Permission.objects.get_or_create(codename=codename, content_type=content_type, defaults={"name": name})[0]
           for codename, name in ACTIONS.items()]
    act = Permission.objects.filter(codename=LEGACY[0], content_type=content_type).first()
    if act is None:
        return
    for group in Group.objects.filter(permissions=act):
        group.permissions.add(*new)
        group.permissions.remove(act)
    for user in apps.get_model(settings.AUTH_USER_MODEL).objects.filter(user_permissions=act):
        user.user_permissions.add(*new)
        user.user_permissions.remove(act)


class Migration(migrations.Migration):
    dependencies = [("emq_console", "0002_view_console"),
                    migrations.swappable_dependency(settings.AUTH_USER_MODEL)]

    operations = [
        migrations.AlterModelOptions(
            name="console",
            options={"managed": False, "default_permissions": (),
                     "permissions": [LEGACY, VIEW, *ACTIONS.items()]},
        ),
        migrations.RunPython(give_operators_every_action, migrations.RunPython.noop),
    ]
