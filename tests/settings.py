"""Settings for the test run: the real settings with a fixed test SECRET_KEY."""

from __future__ import annotations

import os

os.environ.setdefault("SECRET_KEY", "tests-only-secret-key-not-for-production-0123456789")

from dashboard.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests

# Tests that watch a lease lapse need it to stay lapsed: no console process
# sweeps unless a test starts a sweeper itself.
EMQ_SWEEPER_INTERVAL_S = 0.0
# Tests drive alert rounds themselves (dashboard.alerts.evaluator.evaluate_round), or start an evaluator.
EMQ_ALERTS_INTERVAL_S = 0.0
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
# No console process runs the schedules' ticks (tests drive them with queues.scheduler themselves).
EMQ_SCHEDULER_INTERVAL_S = 0.0

# Test clients load the middleware afresh each: WhiteNoise looks through the static folders once per process.
MIDDLEWARE = [("tests.support.static_files.WhiteNoiseScannedOnce" if name == "whitenoise.middleware.WhiteNoiseMiddleware"
               else name) for name in MIDDLEWARE]  # noqa: F405
