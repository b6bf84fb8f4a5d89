from __future__ import annotations

from typing import Any

from django.db import migrations


def grant_view_to_roles(apps: Any, schema_editor: Any) -> None:
    """Existing viewers and operators keep seeing what they saw, now through the API and /metrics too."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="dashboard", model="console")
    view, _ = Permission.objects.get_or_create(codename="view_console", content_type=content_type,
                                               defaults={"name": "Can see queues, jobs, metrics and the audit log"})
    for group in Group.objects.filter(name__in=["operators", "viewers"]):
        group.permissions.add(view)


class Migration(migrations.Migration):
    dependencies = [("dashboard", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length"),
                    ("contenttypes", "0002_remove_content_type_name")]

    operations = [
        migrations.AlterModelOptions(
            name="console",
            options={
                "managed": False,
                "default_permissions": (),
                "permissions": [("act_on_jobs", "Can retry, recover, promote, cancel, delete and purge jobs"),
                                ("view_console", "Can see queues, jobs, metrics and the audit log")],
            },
        ),
        migrations.RunPython(grant_view_to_roles, migrations.RunPython.noop),
    ]
