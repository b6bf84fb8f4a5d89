"""emq as a Unix tool: a closed pipe ends it quietly, times in ISO 8601 UTC, a missing job's own exit code,
`show` with the last error and the history, moves recorded under the person's name, words for no failures."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from queues import EchoMQ
from tests.support.jobs import failed_job

ROOT = Path(__file__).resolve().parents[2]
ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def emq(url: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "queues", "--url", url, *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_piped_into_head_it_ends_quietly_with_exit_0(redis_url: str, mq: EchoMQ) -> None:
    # Far more than a pipe holds (64 KiB): emq is still writing when head has gone.
    mq.enqueue_many("q", [json.dumps({"n": n, "pad": "x" * 200}) for n in range(3000)])
    line = (f"{sys.executable} -m queues --url {redis_url} search q --state pending --payload pad | head -n 2; "
            "echo \"emq exit ${PIPESTATUS[0]}\" >&2")

    done = subprocess.run(["bash", "-c", line], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})

    assert len(done.stdout.splitlines()) == 2
    assert done.stderr.strip().splitlines()[-1] == "emq exit 0"
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr and "Exception" not in done.stderr


def test_times_print_as_iso_8601_utc_and_as_epoch_ms_under_json(redis_url: str, mq: EchoMQ) -> None:
    failed_job(mq, "q", "j1", error="ValueError: bad")

    plain = emq(redis_url, "jobs", "q", "failed").stdout.split("\t")
    as_json = json.loads(emq(redis_url, "jobs", "q", "failed", "--json").stdout)
    groups = emq(redis_url, "failures", "q").stdout

    assert ISO_UTC.fullmatch(plain[1]) and isinstance(as_json["score"], int) and as_json["score"] > 10 ** 12
    assert len(ISO_UTC.findall(groups)) == 2 and "first 1" not in groups


def test_show_prints_the_last_error_and_the_history_oldest_first(redis_url: str, mq: EchoMQ) -> None:
    failed_job(mq, "q", "j1", error="ValueError: no such user 42")

    done = emq(redis_url, "show", "q", "j1")
    as_json = json.loads(emq(redis_url, "show", "q", "j1", "--json").stdout)

    lines = done.stdout.splitlines()
    assert done.returncode == 0 and "last error: ValueError: no such user 42" in lines
    history = [line.split("\t") for line in lines if ISO_UTC.match(line)]
    assert [h[1] for h in history] == ["enqueue", "claim", "fail"]
    assert history[-1][2] == "active->failed" and history[-1][-1] == "ValueError: no such user 42"
    assert [e["move"] for e in as_json["history"]] == ["enqueue", "claim", "fail"]


@pytest.mark.parametrize("args", [["show", "q", "nope"], ["retry", "q", "nope"], ["delete", "q", "nope"]])
def test_a_missing_job_exits_7_not_as_a_refusal(redis_url: str, mq: EchoMQ, args: list[str]) -> None:
    mq.enqueue("q", "{}", job_id="there")

    done = emq(redis_url, *args)

    assert done.returncode == 7 and "nope" in done.stderr and "does not exist" in done.stderr


def test_pause_records_the_person_by_default_and_the_actor_given(redis_url: str, mq: EchoMQ) -> None:
    mq.enqueue("q", "{}")

    emq(redis_url, "pause", "q", "--reason", "deploy", env={"USER": "alice", "LOGNAME": "alice"})
    by_default = mq.stats("q").paused_by
    emq(redis_url, "resume", "q")
    emq(redis_url, "--actor", "bob (on call)", "pause", "q")

    assert by_default == f"alice@{socket.gethostname()}"
    assert mq.stats("q").paused_by == "bob (on call)"


def test_failures_of_a_queue_without_any_say_so(redis_url: str, mq: EchoMQ) -> None:
    mq.enqueue("q", "{}")

    done = emq(redis_url, "failures", "q")

    assert done.returncode == 0 and done.stdout == "" and done.stderr.strip() == "emq: no failed jobs in q"
