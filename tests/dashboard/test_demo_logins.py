"""The demo's one-command start keeps working under the hardening: it prints its logins and they log in."""

from __future__ import annotations

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

from tests.support.redis_servers import free_port

ROOT = Path(__file__).resolve().parents[2]


def _log_in(base: str, username: str, password: str) -> tuple[int, str]:
    """Logs in through the form as a browser would; returns the final status and URL."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    form = opener.open(base + "login/", timeout=30).read().decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
    assert token, form[:500]
    body = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token[1],
                                   "next": "/"}).encode()
    answer = opener.open(urllib.request.Request(base + "login/", data=body), timeout=30)
    return answer.status, answer.url


def test_the_demo_prints_its_logins_and_both_log_in(redis_url: str) -> None:
    # redis_url, not the shared server: the demo refuses a Redis that holds keys, and earlier tests leave some.
    workdir = Path(tempfile.mkdtemp(prefix="emq-demo-"))
    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DJANGO_SETTINGS_MODULE"}},
           "EMQ_DEMO": "1", "DEBUG": "1", "EMQ_REDIS_URL": redis_url, "PYTHONPATH": str(ROOT),
           "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "EMQ_SWEEPER_INTERVAL_S": "0"}
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, cwd=ROOT, check=True, timeout=120)
    demo = subprocess.Popen([*manage, "demo", "--port", str(port)], env=env, cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        printed = ""
        deadline = time.monotonic() + 90
        while "viewer-demo" not in printed and time.monotonic() < deadline:
            line = demo.stdout.readline()  # type: ignore[union-attr]
            if not line and demo.poll() is not None:
                break
            printed += line
        assert "log in as operator / operator-demo" in printed and "log in as viewer / viewer-demo" in printed, printed
        base = f"http://127.0.0.1:{port}/"
        while True:
            try:
                urllib.request.urlopen(base + "login/", timeout=2)
                break
            except OSError:
                assert time.monotonic() < deadline, "the demo did not serve"
                time.sleep(0.3)

        for username, password in (("operator", "operator-demo"), ("viewer", "viewer-demo")):
            assert _log_in(base, username, password) == (200, base)
    finally:
        os.killpg(demo.pid, signal.SIGTERM)
        demo.wait(30)
