"""Settings come from the environment; see README.md, "Settings" and "Running it for real".

EMQ_DEMO=1 allows a generated SECRET_KEY and DEBUG for the local demo. Outside
the demo the console refuses to start without a SECRET_KEY of at least 50
characters, or with DEBUG on while ALLOWED_HOSTS names a non-local host; and
whatever ALLOWED_HOSTS says, while DEBUG is on it answers only connections
made to a loopback address (dashboard.asgi_limits.LoopbackOnlyWhileDebug), so
binding a debug server to 0.0.0.0 shows nobody else a traceback.

Behind a TLS proxy, the variables named like Django's settings
(SECURE_SSL_REDIRECT, SESSION_COOKIE_SECURE, CSRF_COOKIE_SECURE,
SECURE_HSTS_SECONDS, SECURE_HSTS_INCLUDE_SUBDOMAINS, SECURE_HSTS_PRELOAD,
SECURE_PROXY_SSL_HEADER) turn on what `manage.py check --deploy` asks for.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def _flag(name: str, default: bool = False) -> bool:
    return os.environ.get(name, "1" if default else "0").strip().lower() in {"1", "true", "yes", "on"}


def _number(name: str, default: float, *, minimum: float = 0) -> float:
    text = os.environ.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {text!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum:g}, not {text!r}")
    return value


def _list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def _proxy_ssl_header(text: str) -> tuple[str, str] | None:
    """``X-Forwarded-Proto,https`` (or Django's ``HTTP_X_FORWARDED_PROTO,https``) as Django wants it."""
    if not text.strip():
        return None
    header, _, value = text.partition(",")
    header, value = header.strip(), value.strip()
    if not header or not value:
        raise ImproperlyConfigured(f"SECURE_PROXY_SSL_HEADER must be 'Header-Name,value', not {text!r}")
    meta = header.upper().replace("-", "_")
    return (meta if meta.startswith("HTTP_") else f"HTTP_{meta}", value)


DEMO = _flag("EMQ_DEMO")
DEBUG = _flag("DEBUG")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
# Django's deployment check asks for this much; a short key can be guessed offline from any signed cookie.
MIN_SECRET_KEY_LENGTH = 50
if not SECRET_KEY:
    if not DEMO:
        raise ImproperlyConfigured("SECRET_KEY is required (set EMQ_DEMO=1 only for the local demo)")
    SECRET_KEY = secrets.token_urlsafe(50)
elif not DEMO and (len(SECRET_KEY) < MIN_SECRET_KEY_LENGTH or len(set(SECRET_KEY)) < 5
                   or SECRET_KEY.startswith("django-insecure-")):
    raise ImproperlyConfigured(
        f"SECRET_KEY must be at least {MIN_SECRET_KEY_LENGTH} random characters, not a few repeated "
        f"(it has {len(SECRET_KEY)}, {len(set(SECRET_KEY))} different); "
        "make one with: python3 -c 'import secrets; print(secrets.token_urlsafe(50))'")

ALLOWED_HOSTS = _list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
_LOCAL_HOSTS = {"localhost", "127.0.0.1", "[::1]", "::1", ".localhost", "testserver"}
if DEBUG and not DEMO and any(h not in _LOCAL_HOSTS for h in ALLOWED_HOSTS):
    raise ImproperlyConfigured("DEBUG must be off when ALLOWED_HOSTS names a non-local host")
# Also the origins a WebSocket may come from: one check for both (dashboard.asgi_limits.websocket_origin_trusted).
CSRF_TRUSTED_ORIGINS = _list("CSRF_TRUSTED_ORIGINS")

# Behind a TLS proxy (README, "Running it for real"); each is off unless set.
SECURE_SSL_REDIRECT = _flag("SECURE_SSL_REDIRECT")
SESSION_COOKIE_SECURE = _flag("SESSION_COOKIE_SECURE")
CSRF_COOKIE_SECURE = _flag("CSRF_COOKIE_SECURE")
SECURE_HSTS_SECONDS = int(_number("SECURE_HSTS_SECONDS", 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("SECURE_HSTS_INCLUDE_SUBDOMAINS")
SECURE_HSTS_PRELOAD = _flag("SECURE_HSTS_PRELOAD")
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header(os.environ.get("SECURE_PROXY_SSL_HEADER", ""))
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"

# Request bodies (dashboard.asgi_limits, dashboard.daphne_requests): larger ones are answered 413 before
# they are read, and a body that pauses longer than the timeout is cut (408).
EMQ_MAX_BODY_BYTES = int(_number("EMQ_MAX_BODY_BYTES", 1024 * 1024, minimum=1024))
EMQ_BODY_TIMEOUT_S = _number("EMQ_BODY_TIMEOUT_S", 10.0, minimum=0.1)
# Under daphne: a request's headers and body must arrive whole within the deadline (a slow trickle that never
# stalls is cut too), and a keep-alive connection idle between requests is closed after the idle timeout.
EMQ_REQUEST_DEADLINE_S = _number("EMQ_REQUEST_DEADLINE_S", 30.0, minimum=0.1)
EMQ_IDLE_TIMEOUT_S = _number("EMQ_IDLE_TIMEOUT_S", 60.0, minimum=0.1)
# Under daphne an answer is written at the pace its client reads it; a client that reads nothing of a waiting
# answer for this long is dropped.
EMQ_WRITE_TIMEOUT_S = _number("EMQ_WRITE_TIMEOUT_S", 30.0, minimum=0.1)
# Django refuses more form fields than this with a 400 (its default is 1000).
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000
DATA_UPLOAD_MAX_MEMORY_SIZE = EMQ_MAX_BODY_BYTES

EMQ_REDIS_URL = os.environ.get("EMQ_REDIS_URL", "redis://127.0.0.1:6379/0")
# Several Redis deployments in one console (README, "Many deployments"): a JSON object, checked here so that a
# mistake stops the start with what is wrong; empty, the one deployment EMQ_REDIS_URL names. The console's own
# background work (sweeper, scheduler, alert rounds) runs on EMQ_REDIS_URL, by default the first deployment's.
EMQ_DEPLOYMENTS = os.environ.get("EMQ_DEPLOYMENTS", "").strip()
if EMQ_DEPLOYMENTS:
    from dashboard.deployments import parse_deployments

    EMQ_REDIS_URL = os.environ.get("EMQ_REDIS_URL") or parse_deployments(EMQ_DEPLOYMENTS, EMQ_REDIS_URL)[0].url
# How long the page over every deployment waits for each one's answer (they are asked at once).
EMQ_DEPLOYMENT_BUDGET_S = _number("EMQ_DEPLOYMENT_BUDGET_S", 1.0, minimum=0.05)
# How long a search over every deployment runs on each one (all at once) before it says how far it got.
EMQ_DEPLOYMENT_SEARCH_BUDGET_S = _number("EMQ_DEPLOYMENT_SEARCH_BUDGET_S", 3.0, minimum=0.05)
# Entries of a state one step of a console search looks at, at most (each step is also held to ~2 ms).
EMQ_SEARCH_STEP_ENTRIES = int(os.environ.get("EMQ_SEARCH_STEP_ENTRIES", "2000"))
# A person runs at most EMQ_SEARCH_PER_USER searches at once, a console process EMQ_SEARCH_PER_PROCESS (a search
# socket beyond them waits its turn, saying so; a count asked for by a confirmation is refused in words). The
# process's searches and bulk runs over searches keep Redis busy at most EMQ_SEARCH_DUTY of the time together (a
# pause after each step in proportion to its cost), and one search stops after EMQ_SEARCH_REDIS_S of Redis time.
EMQ_SEARCH_PER_USER = int(_number("EMQ_SEARCH_PER_USER", 2, minimum=1))
EMQ_SEARCH_PER_PROCESS = int(_number("EMQ_SEARCH_PER_PROCESS", 4, minimum=1))
EMQ_SEARCH_DUTY = min(_number("EMQ_SEARCH_DUTY", 0.25, minimum=0.01), 1.0)
EMQ_SEARCH_REDIS_S = _number("EMQ_SEARCH_REDIS_S", 10.0, minimum=0.01)
# Open WebSockets (live pages, searches, bulk runs): at most EMQ_SOCKETS_PER_USER per session and per user, and
# EMQ_SOCKETS_PER_PROCESS per console process; one more is closed with 4429, which the page explains.
EMQ_SOCKETS_PER_USER = int(_number("EMQ_SOCKETS_PER_USER", 20, minimum=1))
EMQ_SOCKETS_PER_PROCESS = int(_number("EMQ_SOCKETS_PER_PROCESS", 300, minimum=1))
# A bulk run without progress for this long is marked abandoned (its console process stopped): its pages stop
# following it and a cancel says there is nothing left to cancel. Every console process sweeps for them.
EMQ_RUN_ABANDONED_MINUTES = _number("EMQ_RUN_ABANDONED_MINUTES", 5, minimum=0.01)

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
    "axes",
    "csp",
    # Its static files: the interactive API docs at /api/docs.
    "ninja",
    "dashboard",
    "dashboard.orders",
    "dashboard.actions",
    "dashboard.monitoring",
    "dashboard.saved_views",
    "dashboard.alerts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outside every layer that may answer an error: under /api/ the answer is JSON whoever gave it.
    "dashboard.api.errors.ApiJsonErrorsMiddleware",
    # Below whitenoise: static files keep their cache headers, every page gets no-store.
    "dashboard.middleware.NoStoreMiddleware",
    "dashboard.middleware.HeadAsGetMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dashboard.session_limits.SessionLimitsMiddleware",
    "dashboard.middleware.MethodNotAllowedPageMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a lockout into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "dashboard.project_urls"
ASGI_APPLICATION = "dashboard.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The console's templates and static files are its app's (dashboard/templates and dashboard/static, links to
        # the folders at the top of the checkout), found as a host project finds them.
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# A checkout keeps its database beside manage.py; an installed package, in the directory it is started from.
_DATA_DIR = BASE_DIR if (BASE_DIR / "manage.py").exists() else Path.cwd()
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{_DATA_DIR / 'db.sqlite3'}"), conn_max_age=0
    )
}
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # A transaction that reads and then writes (the audit log folding a refusal into its row) takes the write
    # lock first and waits for it, instead of failing with "database is locked" when another thread writes.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"transaction_mode": "IMMEDIATE", "timeout": 20})
    # Channels' live-server tests run daphne in another process: it needs a file.
    DATABASES["default"].setdefault("TEST", {})["NAME"] = str(_DATA_DIR / "test-db.sqlite3")

# createoperator and createviewer check passwords with these (the demo's own logins are exempt).
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

AUTHENTICATION_BACKENDS = [
    # First, so that a locked-out user name or address is refused even with the right password.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes): after EMQ_LOGIN_FAILURE_LIMIT failed logins
# for one user name from one client address, or from one address for any
# names, each within EMQ_LOGIN_COOLOFF_MINUTES of the one before, logins for
# that name from that address (or from that address at all) are refused until
# the cool-off has passed; each refused attempt is a row in the audit log. A
# user name alone is never locked: failures from other addresses cannot lock
# its owner out. The address is the one EMQ_TRUSTED_PROXY_HOPS settles
# (dashboard.client_address), never one the client wrote.
AXES_FAILURE_LIMIT = int(_number("EMQ_LOGIN_FAILURE_LIMIT", 10, minimum=1))
AXES_COOLOFF_TIME = timedelta(minutes=_number("EMQ_LOGIN_COOLOFF_MINUTES", 15, minimum=0.01))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
# Attempts during a lockout are refused and audited, but do not extend it.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_USERNAME_CALLABLE = "dashboard.login_throttling.login_username"
AXES_VERBOSE = False

# How many proxies in front of the console append to X-Forwarded-For (nginx's $proxy_add_x_forwarded_for):
# the client's address is the entry that many from the right. 0: no proxy, the header is ignored.
EMQ_TRUSTED_PROXY_HOPS = int(_number("EMQ_TRUSTED_PROXY_HOPS", 0))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
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
# A session ends after this long without a request, and this long after the login whatever happens
# (dashboard.session_limits); the cookie itself lasts the maximum age, not Django's two weeks.
EMQ_SESSION_IDLE_MINUTES = _number("EMQ_SESSION_IDLE_MINUTES", 60, minimum=1)
EMQ_SESSION_MAX_HOURS = _number("EMQ_SESSION_MAX_HOURS", 12, minimum=0.1)
SESSION_COOKIE_AGE = int(EMQ_SESSION_MAX_HOURS * 3600)
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the page, not the cookie
X_FRAME_OPTIONS = "DENY"

# Scripts, styles and images from the console itself only: no inline script,
# handler or style, no eval; nothing may frame a page, forms post only here.
# ("self" covers the page's own ws:// or wss:// origin for the live updates.)
_CSP = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "font-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}
# EMQ_CSP_REPORT_ONLY=1 reports violations in the browser's console instead of blocking them.
if _flag("EMQ_CSP_REPORT_ONLY"):
    CONTENT_SECURITY_POLICY_REPORT_ONLY = _CSP
else:
    CONTENT_SECURITY_POLICY = _CSP

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}

# The lease sweeper: each daphne process offers to recover lapsed
# leases every EMQ_SWEEPER_INTERVAL_S seconds (0: this process never sweeps);
# a lock on EMQ_REDIS_URL, or a Redlock over EMQ_LOCK_URLS when it lists
# several independent Redis, lets one process at a time do it.
EMQ_SWEEPER_INTERVAL_S = float(os.environ.get("EMQ_SWEEPER_INTERVAL_S", "5"))
# Alert rules (dashboard/alerts): each daphne process offers to evaluate them every EMQ_ALERTS_INTERVAL_S seconds
# (0: this process never does), under the lock emq:lock:alerts; mail goes out through Django's EMAIL_* settings.
EMQ_ALERTS_INTERVAL_S = _number("EMQ_ALERTS_INTERVAL_S", 10, minimum=0)
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(_number("EMAIL_PORT", 25, minimum=1))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = os.environ.get("EMAIL_USE_TLS", "") == "1"
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "echomq-console@localhost")
# The schedules' ticks (recurring jobs): each daphne process offers to run them every
# EMQ_SCHEDULER_INTERVAL_S seconds (0: never), under the lock emq:lock:scheduler (one process at a time).
EMQ_SCHEDULER_INTERVAL_S = float(os.environ.get("EMQ_SCHEDULER_INTERVAL_S", "1"))
EMQ_LOCK_URLS = [u.strip() for u in os.environ.get("EMQ_LOCK_URLS", "").split(",") if u.strip()]
# The sweeping process also finds queues no runtime registered: EMQ_DISCOVERY_SCANS_PER_S SCAN calls a
# second (0: never), each of EMQ_DISCOVERY_SCAN_COUNT keys (PROTOCOL.md, "The registry").
EMQ_DISCOVERY_SCANS_PER_S = float(os.environ.get("EMQ_DISCOVERY_SCANS_PER_S", "2"))
EMQ_DISCOVERY_SCAN_COUNT = int(os.environ.get("EMQ_DISCOVERY_SCAN_COUNT", "1000"))

# /metrics (README, "Monitoring"): callers from these addresses or CIDR ranges need no token
# (the demo: loopback); the queues are read in the background, a walk every EMQ_METRICS_INTERVAL_S
# at most EMQ_METRICS_QUEUES_PER_S queues a second.
EMQ_METRICS_ALLOW = [a.strip() for a in os.environ.get("EMQ_METRICS_ALLOW", "127.0.0.1,::1" if DEMO else "").split(",")
                     if a.strip()]
EMQ_METRICS_INTERVAL_S = float(os.environ.get("EMQ_METRICS_INTERVAL_S", "10"))
EMQ_METRICS_QUEUES_PER_S = float(os.environ.get("EMQ_METRICS_QUEUES_PER_S", "2000"))

# The overview's census (dashboard/census.py): every queue's counts, read in the background by each
# console process at most EMQ_CENSUS_CALLS_PER_S scripts a second, a pass at most every EMQ_CENSUS_PASS_S.
# Live pages read the queues they show when the follower knows of a change, and all of them every
# EMQ_LIVE_SAFETY_POLL_S (a writer that emits no event).
EMQ_CENSUS_CALLS_PER_S = _number("EMQ_CENSUS_CALLS_PER_S", 200, minimum=1)
EMQ_CENSUS_PASS_S = _number("EMQ_CENSUS_PASS_S", 5, minimum=0.1)
EMQ_LIVE_SAFETY_POLL_S = _number("EMQ_LIVE_SAFETY_POLL_S", 5, minimum=0.1)
# The overview's "Why" column: one why read per row on screen (refreshed on the live page's tick); off: none.
EMQ_OVERVIEW_REASONS = os.environ.get("EMQ_OVERVIEW_REASONS", "1") != "0"
