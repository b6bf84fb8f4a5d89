"""The emq command: one line per result, and exit codes 0/2/3/4/1."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from queues import EchoMQ, QueueKeys
from queues.cli import main
from tests.support.waiting import wait_until


def emq(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["--url", url, *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_enqueue_prints_the_id_and_a_duplicate_is_idempotent(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert emq(redis_url, capsys, "enqueue", "q", '{"a": 1}', "--id", "j1")[:2] == (0, ["j1"])

    code, out, err = emq(redis_url, capsys, "enqueue", "q", '{"a": 2}', "--id", "j1")

    assert (code, out) == (0, ["j1"]) and "already exists" in err


def test_the_full_lifecycle_through_the_cli(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    emq(redis_url, capsys, "enqueue", "q", '{"a": 1}', "--id", "j1")

    code, out, _ = emq(redis_url, capsys, "claim", "q", "--lease-ms", "60000")
    claimed = json.loads(out[0])
    assert code == 0 and (claimed["id"], claimed["payload"]) == ("j1", '{"a": 1}')
    assert emq(redis_url, capsys, "extend", "q", "j1", "--token", claimed["token"])[0] == 0
    assert emq(redis_url, capsys, "complete", "q", "j1", "--token", claimed["token"])[:2] == (
        0, ["completed: job j1 is now done"])

    code, out, _ = emq(redis_url, capsys, "stats", "q", "--json")
    assert json.loads(out[0])["done"] == 1
    code, out, _ = emq(redis_url, capsys, "jobs", "q", "done", "--json")
    assert [json.loads(line)["id"] for line in out] == ["j1"]
    code, out, _ = emq(redis_url, capsys, "events", "q", "--json")
    assert [json.loads(line)["move"] for line in out] == ["enqueue", "claim", "extend", "complete"]
    assert emq(redis_url, capsys, "check", "q")[0] == 0
    assert emq(redis_url, capsys, "queues")[1] == ["q"]


@pytest.mark.parametrize("args", [
    ["enqueue", "q{x}", "{}"], ["enqueue", "q", "not json"], ["complete", "q", "j1", "--token", "abc"],
    ["jobs", "q", "sleeping"], ["claim", "q", "--lease-ms", "0"],
])
def test_bad_input_exits_2_with_a_message(redis_url: str, capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, _, err = emq(redis_url, capsys, *args)
    assert code == 2 and err


def test_nothing_to_claim_exits_3(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert emq(redis_url, capsys, "claim", "q")[0] == 3


def test_a_stale_token_or_a_moved_job_exits_4(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    emq(redis_url, capsys, "enqueue", "q", "{}", "--id", "j1")
    token = json.loads(emq(redis_url, capsys, "claim", "q")[1][0])["token"]
    emq(redis_url, capsys, "complete", "q", "j1", "--token", token)

    assert emq(redis_url, capsys, "complete", "q", "j1", "--token", token)[0] == 4
    code, _, err = emq(redis_url, capsys, "retry", "q", "j1")
    assert code == 4 and "refused: job j1 is now done (attempts 1)" in err


def test_an_unreachable_redis_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert emq("redis://127.0.0.1:1/0", capsys, "stats", "q")[0] == 1


def test_check_exits_1_when_it_finds_torn_jobs(redis_url: str, capsys: pytest.CaptureFixture[str], mq: EchoMQ) -> None:
    mq.redis.zadd("emq:{q}:pending", {"ghost": 1})

    code, out, _ = emq(redis_url, capsys, "check", "q")

    assert code == 1 and out[0] == "ghost: missing_hash (pending)"


def test_it_runs_as_python_dash_m_queues(redis_url: str) -> None:
    done = subprocess.run([sys.executable, "-m", "queues", "--url", redis_url, "enqueue", "q", "{}", "--id", "x"],
                          capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (0, "x\n")


def test_script_prints_the_source_sent_to_redis(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["script", "claim"]) == 0
    source = capsys.readouterr().out
    assert "\n--@include" not in source and "local function now_ms()" in source


def test_worker_runs_a_module_callable_handler_until_sigterm(redis_url: str, mq: EchoMQ, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import signal

    (tmp_path / "cli_handlers.py").write_text("def ok(job):\n    return None\n")
    ids = mq.enqueue_many("q", ["{}"] * 20)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    worker = subprocess.Popen([sys.executable, "-m", "queues", "--url", redis_url, "worker", "q", "--handler",
                               "cli_handlers:ok", "--concurrency", "4", "--prefetch", "4"], env=env)
    try:
        wait_until(lambda: mq.stats("q").counts["done"] == len(ids), 20, "the CLI's worker to finish every job")
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(20) == 0


def test_worker_with_a_bad_handler_exits_2(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = emq(redis_url, capsys, "worker", "q", "--handler", "no_such_module_here:run")
    assert code == 2 and "no module named" in err


def test_worker_with_a_negative_prefetch_exits_2(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = emq(redis_url, capsys, "worker", "q", "--handler", "queues.worker:error_text", "--prefetch", "-1")
    assert code == 2 and "prefetch must be between 0 and 10000" in err


def test_worker_passes_wait_replicas_on_and_refuses_a_bad_one(redis_url: str,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = emq(redis_url, capsys, "worker", "q", "--handler", "queues.worker:error_text",
                       "--wait-replicas", "101")
    assert code == 2 and "wait_replicas must be between 0 and 100" in err


def test_events_show_escape_sequences_and_bidi_controls_as_text(redis_url: str,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    evil = EchoMQ.from_url(redis_url, actor="w\x1b]0;pwned\x07\x1b[2J")
    evil.enqueue("q", "{}", job_id="x\u202e(tidua)")
    evil.close()

    code, out, _ = emq(redis_url, capsys, "events", "q")
    line = out[0]

    assert code == 0 and "\x1b" not in line and "\u202e" not in line and "\x07" not in line
    assert "x\\u202e(tidua)" in line and "w\\x1b]0;pwned\\x07\\x1b[2J" in line


def test_show_and_jobs_escape_what_another_runtime_wrote(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    mq = EchoMQ.from_url(redis_url, actor="test")
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("a"), mapping={"state": "pending\u2066", "attempts": "0",
                                          "payload": b"\xff\x1b[31mred", "last_error": "bad\u202etxt"})
    mq.redis.zadd(keys.pending, {"a": 1})
    mq.close()

    shown = emq(redis_url, capsys, "show", "q", "a")[1][0]
    listed = emq(redis_url, capsys, "jobs", "q", "pending")[1][0]
    as_json = emq(redis_url, capsys, "jobs", "q", "pending", "--json")[1][0]

    for line in (shown, listed, as_json):
        assert not any(ch in line for ch in "\x1b\u2066\u202e")
    assert "pending\\u2066" in shown and "\\xff\\x1b[31mred" in shown
    assert "bad\\u202etxt" in listed
    assert json.loads(as_json)["last_error"] == "bad\u202etxt"  # JSON keeps the exact text, escaped


def test_queues_leaves_out_registry_entries_that_are_not_names_and_says_so(redis_url: str, mq: EchoMQ,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    mq.enqueue("mail", "{}")
    mq.redis.sadd("emq:queues", b"bad name", b"caf\xe9", "q\u202e".encode())

    code = main(["--url", redis_url, "queues"])

    out, err = capsys.readouterr()
    assert code == 0 and out == "mail\nq\\u202e\n"
    assert sorted(err.splitlines()) == [f"emq: the registry also holds {shown}, which is not a queue name (left out)"
                                        for shown in ("bad name", r"caf\xe9")]


def test_queues_over_a_registry_of_another_type_exits_4_in_words(redis_url: str, mq: EchoMQ,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    mq.redis.set("emq:queues", "x")

    code = main(["--url", redis_url, "queues"])

    assert code == 1 and "emq:queues holds a string" in capsys.readouterr().err


def test_a_refusal_naming_odd_text_is_escaped_on_stderr(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    mq = EchoMQ.from_url(redis_url, actor="test")
    keys = QueueKeys("q")
    mq.redis.hset(keys.job("a"), mapping={"state": "\x1b[2Jdone", "attempts": "1", "payload": "{}"})
    mq.close()

    code, _, err = emq(redis_url, capsys, "retry", "q", "a")

    assert code == 4 and "\x1b" not in err and "\\x1b[2Jdone" in err


def test_events_written_by_another_runtime_with_odd_bytes_are_listed(redis_url: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    mq = EchoMQ.from_url(redis_url, actor="test")
    mq.redis.xadd(QueueKeys("q").events, {"move": "claim", "id": b"\xff\xfe", "ts": "\u00b2", "actor": "x"})
    mq.close()

    code, out, _ = emq(redis_url, capsys, "events", "q")
    json_code, json_out, _ = emq(redis_url, capsys, "events", "q", "--json")

    assert code == 0 and "\ufffd\ufffd" in out[0]
    assert json_code == 0 and json.loads(json_out[0])["ts_ms"] == 0
