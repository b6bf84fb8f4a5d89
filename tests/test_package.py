"""The package: ``python -m build`` makes an sdist and, from it, a wheel; installed in a fresh venv with no checkout
in sight it gives ``emq`` and ``python -m queues`` (with the Lua scripts), a worker that needs no manage.py, and the
console (templates, static files, migrations) served by daphne.

The wheel is installed without its dependencies, which the fresh venv reads from this test's environment (a .pth
file): the test proves what the wheel holds, not how fast PyPI answers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import time
import urllib.request
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daphne import stop_daphne
from tests.support.http_login import answer, form_log_in, plain_opener
from tests.support.redis_servers import RedisServer, dies_with_this_process, free_port

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(600)

HANDLER = '''
def complete(job):
    """Returning completes the job."""
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv holding only the wheel built from this checkout; returns its bin folder."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], check=True, timeout=480,
                   capture_output=True)
    [sdist], [wheel] = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert sdist.stat().st_size > 0
    home = tmp_path_factory.mktemp("venv")
    venv.create(home, with_pip=False)
    python = home / "bin" / "python"
    # Without PYTHONPATH: the checkout on it (and the egg-info the build leaves there) reads as installed already.
    clean = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "-q", str(wheel)], check=True, timeout=240, capture_output=True, env=clean, cwd=out)
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    yield home / "bin"


def _env(work: Path, **extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in {"PYTHONPATH", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV"} and not name.startswith("EMQ_")}
    return {**env, "HOME": str(work), **extra}


def _run(command: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_the_installed_package_is_its_own_and_not_the_checkouts(installed: Path, tmp_path: Path) -> None:
    code = "import queues, dashboard, exchange; print(queues.__file__, dashboard.__file__, exchange.__file__)"

    files = _run([str(installed / "python"), "-c", code], _env(tmp_path), tmp_path).split()

    assert all(Path(name).is_relative_to(installed.parent) for name in files), files


def test_a_worker_from_the_wheel_completes_a_job_enqueued_by_python_m_queues(installed: Path, tmp_path: Path) -> None:
    redis = RedisServer().start()
    try:
        env = _env(tmp_path, EMQ_REDIS_URL=redis.url)
        (tmp_path / "handlers.py").write_text(HANDLER)
        assert "redis.call" in _run([str(installed / "emq"), "script", "claim"], env, tmp_path)
        _run([str(installed / "python"), "-m", "queues", "enqueue", "mail", '{"to": "a@example.com"}', "--id", "m1"],
             env, tmp_path)
        worker = subprocess.Popen([*dies_with_this_process(), str(installed / "emq"), "worker", "mail",
                                   "--handler", "handlers:complete"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                stats = json.loads(_run([str(installed / "emq"), "stats", "mail", "--json"], env, tmp_path))
                if stats["done"] == 1 or worker.poll() is not None:
                    break
                time.sleep(0.2)
        finally:
            worker.terminate()
            _, errors = worker.communicate(timeout=30)

        counts = {state: stats[state] for state in ("pending", "active", "done", "failed")}
        assert counts == {"pending": 0, "active": 0, "done": 1, "failed": 0}, errors.decode()[-2000:]
        assert "done" in _run([str(installed / "emq"), "show", "mail", "m1"], env, tmp_path)
    finally:
        redis.cleanup()


def test_the_console_from_the_wheel_migrates_serves_its_pages_and_static_files_and_signs_in(
        installed: Path, tmp_path: Path) -> None:
    redis = RedisServer().start()
    port = free_port()
    env = _env(tmp_path, DJANGO_SETTINGS_MODULE="dashboard.settings", SECRET_KEY="package-test-only-" + "x" * 40,
               EMQ_REDIS_URL=redis.url, DATABASE_URL=f"sqlite:///{tmp_path / 'console.sqlite3'}",
               EMQ_SWEEPER_INTERVAL_S="0", EMQ_ALERTS_INTERVAL_S="0", EMQ_PASSWORD="otto-password-1234")
    daphne = None
    try:
        _run([str(installed / "python"), "-m", "django", "migrate", "-v0"], env, tmp_path)
        _run([str(installed / "python"), "-m", "django", "createoperator", "otto"], env, tmp_path)
        _run([str(installed / "emq"), "enqueue", "billing", "{}"], env, tmp_path)
        daphne = subprocess.Popen([*dies_with_this_process(), str(installed / "python"), "-m", "daphne", "-b",
                                   "127.0.0.1", "-p", str(port), "dashboard.asgi:application"], env=env, cwd=tmp_path,
                                  stdout=subprocess.DEVNULL, stderr=open(tmp_path / "daphne.log", "wb"))
        url = f"http://127.0.0.1:{port}/"
        opener = plain_opener()
        deadline = time.monotonic() + 60
        status = 0
        while status != 200 and time.monotonic() < deadline and daphne.poll() is None:
            try:
                status, login_page = answer(opener, _request(url + "login/"))
            except OSError:
                time.sleep(0.2)
        assert status == 200, (tmp_path / "daphne.log").read_text()[-2000:]
        assert 'name="password"' in login_page
        static_status, script = answer(opener, _request(url + "static/console.js"))
        htmx_status, _ = answer(opener, _request(url + "static/django_htmx/htmx-2.min.js"))

        session = form_log_in(url, "otto", "otto-password-1234")
        page_status, overview = answer(opener, _request(url, Cookie=session.cookie))

        assert (static_status, htmx_status) == (200, 200) and "addEventListener" in script
        assert session.status == 302
        assert page_status == 200 and "billing" in overview and 'ws-connect="/ws/overview/' in overview
    finally:
        if daphne is not None:
            stop_daphne(daphne)
        redis.cleanup()


def _request(url: str, **headers: str) -> urllib.request.Request:
    return urllib.request.Request(url, headers=headers)
