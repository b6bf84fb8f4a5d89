"""Real daphne processes serving the console, each on a free port, with the environment a test gives."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.support.redis_servers import dies_with_this_process, free_port

ROOT = Path(__file__).resolve().parents[2]


def wait_for_http(url: str, process: subprocess.Popen[bytes], timeout: float = 30.0, probe: str = "login/") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"daphne exited with {process.returncode}")
        try:
            urllib.request.urlopen(url + probe, timeout=1)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.1)
    raise RuntimeError("daphne did not answer")


def start_daphne(env: dict[str, str], workdir: Path, name: str,
                 options: tuple[str, ...] = (), application: str = "dashboard.asgi:application",
                 probe: str = "login/") -> tuple[str, subprocess.Popen[bytes]]:
    """Starts daphne on a free port (with ``options``, e.g. ``--proxy-headers``) serving ``application`` and waits
    until ``probe`` answers; returns its base URL (ending in /)."""
    port = free_port()
    daphne = subprocess.Popen([*dies_with_this_process(), sys.executable, "-m", "daphne", "-b", "127.0.0.1",
                               "-p", str(port), *options, application], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=open(workdir / f"{name}.log", "wb"))
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_for_http(url, daphne, probe=probe)
    except RuntimeError:
        stop_daphne(daphne)
        raise
    return url, daphne


def stop_daphne(daphne: subprocess.Popen[bytes]) -> None:
    daphne.terminate()
    try:
        daphne.wait(10)
    except subprocess.TimeoutExpired:
        daphne.kill()
        daphne.wait()


def console_env(redis_url: str, workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of a console process: its own SQLite file, the given Redis, DEBUG off."""
    import os

    return {**os.environ, "DJANGO_SETTINGS_MODULE": "dashboard.settings", "SECRET_KEY": "live-tests-only-" + "x" * 40,
            "EMQ_REDIS_URL": redis_url, "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}", "DEBUG": "0",
            "PYTHONPATH": str(ROOT), "EMQ_CONSOLE_WORKDIR": str(workdir),
            # No alert evaluator holds emq:lock:alerts in a test's keyspace unless the test asks for one.
            "EMQ_ALERTS_INTERVAL_S": "0", **extra}


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env, cwd=ROOT, check=True,
                          timeout=120, capture_output=True, text=True)
    return done.stdout


def session_cookies(env: dict[str, str], users: dict[str, str]) -> dict[str, str]:
    """Creates each user (name: role) in the console's database; returns a signed-in session cookie value for each."""
    code = ("import json\nfrom django.test import Client\nfrom dashboard.roles import user_create\nout = {}\n"
            f"for name, role in {users!r}.items():\n"
            "    user = user_create(username=name, password=name + '-password-0', role=role)\n"
            "    client = Client()\n    client.force_login(user)\n    out[name] = client.cookies['sessionid'].value\n"
            "print(json.dumps(out))")
    return dict(json.loads(manage(env, "shell", "-c", code).strip().splitlines()[-1]))
