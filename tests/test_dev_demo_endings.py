"""However the demo ends (Ctrl-C, SIGTERM, a closed terminal, SIGKILL), its private redis-server ends too,
and a later demo stops a leftover server of a demo that is gone, saying so."""

from __future__ import annotations

import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.support.demo import RunningDemo, alive, answers, demo_env
from tests.support.redis_servers import REDIS_SERVER, free_port
from tests.support.waiting import wait_until

ENDINGS = {
    "ctrl-c": (signal.SIGINT, True),
    "kill": (signal.SIGTERM, False),
    "closed-terminal": (signal.SIGHUP, True),
    "kill-9": (signal.SIGKILL, False),
}


@pytest.mark.parametrize("ending", ENDINGS)
def test_the_demo_stops_its_private_redis_server_however_it_ends(ending: str) -> None:
    sig, to_group = ENDINGS[ending]
    demo = RunningDemo()
    try:
        demo.wait_until_serving()
        server = demo.redis_pid
        assert alive(server) and answers(demo.redis_url)

        demo.signal(sig, group=to_group)

        demo.process.wait(60)
        wait_until(lambda: not alive(server), 30, f"the private redis-server (pid {server}) to end after {ending}")
        assert not answers(demo.redis_url) and not demo.serving()
    finally:
        demo.stop()


def dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def test_a_later_demo_stops_the_leftover_private_redis_server_of_a_demo_that_is_gone_and_says_so() -> None:
    # As a demo killed before its server could follow it left it: running, daemonized, in the demo's directory.
    redis_dir = Path(tempfile.mkdtemp(prefix="emq-demo-redis-"))
    port = free_port()
    leftover = redis_dir / str(port)
    leftover.mkdir()
    (leftover / "demo.pid").write_text(f"{dead_pid()}\n")
    subprocess.run([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "yes",
                    "--dir", str(leftover), "--pidfile", str(leftover / "redis.pid"),
                    "--logfile", str(leftover / "redis.log")], check=True, timeout=30)
    url = f"redis://127.0.0.1:{port}/0"
    wait_until(lambda: (leftover / "redis.pid").exists() and answers(url), 30, "the leftover server to start")
    pid = int((leftover / "redis.pid").read_text())

    demo = RunningDemo(env=demo_env(redis_dir))
    try:
        demo.wait_until_serving()
        assert (f"Stopped a leftover private redis-server of an earlier demo that is gone (pid {pid}, port {port})"
                in demo.output)
        assert not alive(pid) and not answers(url) and not leftover.exists()
    finally:
        demo.stop()
        if alive(pid):
            subprocess.run(["kill", "-9", str(pid)])
