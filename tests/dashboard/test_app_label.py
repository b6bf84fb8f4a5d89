"""The console's app is labelled emq_console (a host's own "dashboard" app keeps that label), its settings are all
EMQ_* with defaults, and a database made under the former label keeps its roles."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command

from dashboard import CONSOLE_APPS
from dashboard.actions.access import may
from dashboard.conf import DEFAULTS
from dashboard.permissions import ACTION_PERMISSIONS
from dashboard.roles import ACT_PERMISSION, VIEW_PERMISSION, user_create

ROOT = Path(__file__).resolve().parents[2]


def test_no_console_app_is_labelled_dashboard() -> None:
    labels = {config.label for config in apps.get_app_configs() if config.name.startswith("dashboard")}

    assert "dashboard" not in labels
    assert apps.get_app_config("emq_console").name == "dashboard"
    assert ACT_PERMISSION == "emq_console.act_on_jobs" and VIEW_PERMISSION == "emq_console.view_console"


def test_a_host_project_adds_the_same_apps_the_standalone_project_runs() -> None:
    standalone = [name for name in settings.INSTALLED_APPS if name in CONSOLE_APPS or name.startswith("dashboard")]

    assert standalone == CONSOLE_APPS


@pytest.mark.django_db(transaction=True)
def test_a_database_made_under_the_former_label_keeps_its_roles_and_their_grants() -> None:
    operator = user_create(username="olga", password="olga-password-0", role="operators")
    viewer = user_create(username="vic", password="vic-password-0", role="viewers")
    permission_ids = set(Permission.objects.filter(content_type__app_label="emq_console").values_list("pk", flat=True))
    # As such a database stands: the console's migrations recorded under the old label, its content type named so.
    call_command("migrate", "emq_console", "0001", verbosity=0)
    ContentType.objects.filter(app_label="emq_console").update(app_label="dashboard")
    ContentType.objects.clear_cache()

    call_command("migrate", "emq_console", verbosity=0)

    assert not ContentType.objects.filter(app_label="dashboard").exists()
    assert set(Permission.objects.filter(content_type__app_label="emq_console").values_list("pk", flat=True)) \
        == permission_ids
    operator = type(operator).objects.get(pk=operator.pk)
    viewer = type(viewer).objects.get(pk=viewer.pk)
    assert all(may(operator, action) for action in ACTION_PERMISSIONS) and operator.has_perm(VIEW_PERMISSION)
    assert viewer.has_perm(VIEW_PERMISSION) and not any(may(viewer, action) for action in ACTION_PERMISSIONS)


def _settings_read(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        if path.name == "settings.py" or "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "settings" \
                    and node.attr.startswith("EMQ_"):
                names.add(node.attr)
    return names


def test_every_emq_setting_the_console_reads_has_a_default() -> None:
    read = _settings_read(ROOT / "dashboard") | _settings_read(ROOT / "exchange")

    assert read, "the walk found no settings at all"
    assert read - DEFAULTS.keys() == set()


def test_the_standalone_project_with_no_environment_has_the_defaults() -> None:
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("EMQ_") and name not in {"DEBUG", "DJANGO_SETTINGS_MODULE"}}
    env.update(SECRET_KEY="defaults-test-only-" + "x" * 40, PYTHONPATH=str(ROOT))
    code = ("import json, dashboard.settings as s, dashboard.conf as c\n"
            "print(json.dumps({name: getattr(s, name) for name in c.DEFAULTS}))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=60, check=True)

    assert json.loads(done.stdout) == json.loads(json.dumps(DEFAULTS))
