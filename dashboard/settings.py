"""Settings come from the environment; see README.md, "Running it".

EMQ_DEMO=1 allows a generated SECRET_KEY and DEBUG for the local demo. Outside
the demo the console refuses to start without SECRET_KEY, or with DEBUG on
while ALLOWED_HOSTS names a non-local host.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").strip().lower() in {"1", "true", "yes", "on"}


DEMO = _flag("EMQ_DEMO")
DEBUG = _flag("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEMO:
        raise ImproperlyConfigured("SECRET_KEY is required (set EMQ_DEMO=1 only for the local demo)")
    SECRET_KEY = secrets.token_urlsafe(50)

ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h.strip()]
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1", ".localhost", "testserver"}
if DEBUG and not DEMO and any(h not in _LOCAL_HOSTS for h in ALLOWED_HOSTS):
    raise ImproperlyConfigured("DEBUG must be off when ALLOWED_HOSTS names a non-local host")
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

EMQ_REDIS_URL = os.environ.get("EMQ_REDIS_URL", "redis://127.0.0.1:6379/0")
# Entries of a state one step of a console search looks at, at most (each step is also held to ~2 ms).
EMQ_SEARCH_STEP_ENTRIES = int(os.environ.get("EMQ_SEARCH_STEP_ENTRIES", "2000"))

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "dashboard",
    "dashboard.orders",
    "dashboard.actions",
    "dashboard.monitoring",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "dashboard.urls"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.monitoring.eviction.eviction_banner",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}"), conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # Channels' live-server tests run daphne in another process: it needs a file.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = str(BASE_DIR / "test-db.sqlite3")

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# whitenoise serves the files from their folders (finders); STATIC_ROOT only
# matters to whoever runs collectstatic, so it is set only when asked for.
STATIC_ROOT = os.environ.get("STATIC_ROOT") or None
# whitenoise serves static files under daphne, in production too.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# The lease sweeper (issue 6): each daphne process offers to recover lapsed
# leases every EMQ_SWEEPER_INTERVAL_S seconds (0: this process never sweeps);
# a lock on EMQ_REDIS_URL, or a Redlock over EMQ_LOCK_URLS when it lists
# several independent Redis, lets one process at a time do it.
EMQ_SWEEPER_INTERVAL_S = float(os.environ.get("EMQ_SWEEPER_INTERVAL_S", "5"))
EMQ_LOCK_URLS = [u.strip() for u in os.environ.get("EMQ_LOCK_URLS", "").split(",") if u.strip()]

# /metrics (README, "Monitoring"): callers from these addresses or CIDR ranges need no token
# (the demo: loopback); the queues are read in the background, a walk every EMQ_METRICS_INTERVAL_S
# at most EMQ_METRICS_QUEUES_PER_S queues a second.
EMQ_METRICS_ALLOW = [a.strip() for a in os.environ.get("EMQ_METRICS_ALLOW", "127.0.0.1,::1" if DEMO else "").split(",")
                     if a.strip()]
EMQ_METRICS_INTERVAL_S = float(os.environ.get("EMQ_METRICS_INTERVAL_S", "10"))
EMQ_METRICS_QUEUES_PER_S = float(os.environ.get("EMQ_METRICS_QUEUES_PER_S", "2000"))
