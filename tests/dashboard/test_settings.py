"""Settings from the environment: the console refuses to start unsafely, and production settings pass Django's check."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KEY = secrets.token_urlsafe(50)
# What README's "Running it for real" sets behind a TLS proxy.
PRODUCTION = {
    "SECRET_KEY": KEY, "ALLOWED_HOSTS": "console.example.com", "SECURE_SSL_REDIRECT": "1",
    "SESSION_COOKIE_SECURE": "1", "CSRF_COOKIE_SECURE": "1", "SECURE_HSTS_SECONDS": "31536000",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS": "1", "SECURE_HSTS_PRELOAD": "1", "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto,https",
}
SETTINGS_NAMES = {"SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "EMQ_DEMO", "EMQ_CSP_REPORT_ONLY", *PRODUCTION}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in SETTINGS_NAMES}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=ROOT, timeout=120,
                          env={**clean, "DJANGO_SETTINGS_MODULE": "dashboard.settings", **env})


def _start(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return _run(env, "-c", "import django; django.setup()")


def _setting(env: dict[str, str], name: str) -> str:
    done = _run(env, "-c", f"import django; django.setup(); from django.conf import settings; print(repr(settings.{name}))")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("env, refusal", [
    ({}, "SECRET_KEY is required"),
    ({"SECRET_KEY": "s" * 49 + "x"}, "at least 50 random characters"),
    ({"SECRET_KEY": "s" * 60}, "at least 50 random characters"),
    ({"SECRET_KEY": "django-insecure-" + KEY}, "at least 50 random characters"),
    ({"SECRET_KEY": KEY, "DEBUG": "1", "ALLOWED_HOSTS": "console.example.com"}, "DEBUG must be off"),
    ({"SECRET_KEY": KEY, "SECURE_HSTS_SECONDS": "a year"}, "SECURE_HSTS_SECONDS must be a number"),
    ({"SECRET_KEY": KEY, "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto"}, "SECURE_PROXY_SSL_HEADER must be"),
    ({"SECRET_KEY": KEY, "EMQ_MAX_BODY_BYTES": "10"}, "EMQ_MAX_BODY_BYTES must be at least 1024"),
])
def test_outside_the_demo_the_console_refuses_to_start_unsafely(env: dict[str, str], refusal: str) -> None:
    started = _start(env)

    assert started.returncode != 0 and refusal in started.stderr


@pytest.mark.parametrize("env", [
    {"EMQ_DEMO": "1"},
    {"EMQ_DEMO": "1", "SECRET_KEY": "short"},
    {"SECRET_KEY": KEY, "ALLOWED_HOSTS": "console.example.com"},
    {"SECRET_KEY": KEY, "DEBUG": "1"},
    PRODUCTION,
])
def test_the_console_starts_with_safe_settings_or_in_the_demo(env: dict[str, str]) -> None:
    started = _start(env)

    assert started.returncode == 0, started.stderr


def test_the_production_settings_pass_the_deployment_check_with_nothing_to_report() -> None:
    checked = _run(PRODUCTION, "manage.py", "check", "--deploy", "--fail-level", "WARNING")

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "System check identified no issues" in checked.stdout


def test_without_them_the_deployment_check_names_what_is_missing() -> None:
    checked = _run({"SECRET_KEY": KEY}, "manage.py", "check", "--deploy", "--fail-level", "WARNING")

    assert checked.returncode != 0
    for warning in ("security.W004", "security.W008", "security.W012", "security.W016"):
        assert warning in checked.stderr


def test_the_environment_names_the_settings_django_reads() -> None:
    assert _setting(PRODUCTION, "SECURE_PROXY_SSL_HEADER") == "('HTTP_X_FORWARDED_PROTO', 'https')"
    assert _setting({**PRODUCTION, "SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https"},
                    "SECURE_PROXY_SSL_HEADER") == "('HTTP_X_FORWARDED_PROTO', 'https')"
    assert _setting(PRODUCTION, "SECURE_HSTS_SECONDS") == "31536000"
    assert _setting(PRODUCTION, "SESSION_COOKIE_SECURE") == "True"
    assert _setting({"SECRET_KEY": KEY}, "SESSION_COOKIE_SECURE") == "False"
    assert _setting({"SECRET_KEY": KEY, "EMQ_MAX_BODY_BYTES": "4096"}, "EMQ_MAX_BODY_BYTES") == "4096"


def test_the_demo_refuses_to_serve_debug_pages_beyond_loopback(settings: object, db: None) -> None:
    from django.core.management import CommandError, call_command

    settings.DEBUG = True  # type: ignore[attr-defined]

    with pytest.raises(CommandError, match="DEBUG=0"):
        call_command("demo", addr="0.0.0.0")

