from __future__ import annotations

from typing import Any

from django.apps import apps as installed_apps
from django.db import migrations

# The app's label before it became emq_console (a host project may have an app of its own by that name).
FORMER_LABEL = "dashboard"


def adopt_former_label(apps: Any, schema_editor: Any) -> None:
    """A database made while the app was labelled "dashboard" keeps its console permissions and every grant of them:
    the content type they hang on is relabelled (the same rows, so groups and users keep them), unless an installed
    app now owns that label."""
    if FORMER_LABEL in installed_apps.app_configs:
        return
    ContentType = apps.get_model("contenttypes", "ContentType")
    if ContentType.objects.filter(app_label="emq_console", model="console").exists():
        return
    ContentType.objects.filter(app_label=FORMER_LABEL, model="console").update(app_label="emq_console")


def grant_view_to_roles(apps: Any, schema_editor: Any) -> None:
    """Existing viewers and operators keep seeing what they saw, now through the API and /metrics too."""
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")
    content_type, _ = ContentType.objects.get_or_create(app_label="emq_console", model="console")
    view, _ = Permission.objects.get_or_create(codename="view_console", content_type=content_type,
                                               defaults={"name": "Can see queues, jobs, metrics and the audit log"})
    for group in Group.objects.filter(name__in=["operators", "viewers"]):
        group.permissions.add(view)


class Migration(migrations.Migration):
    dependencies = [("emq_console", "0001_initial"), ("auth", "0012_alter_user_first_name_max_length"),
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
        migrations.RunPython(adopt_former_label, migrations.RunPython.noop),
        migrations.RunPython(grant_view_to_roles, migrations.RunPython.noop),
    ]
