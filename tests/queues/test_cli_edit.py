"""emq edit, emq restore and emq versions: the same scripts as the console, the schema checked first."""

from __future__ import annotations

from pathlib import Path

import pytest

from queues import EchoMQ
from queues.cli import main
from queues.payload_versions import schema_set
from tests.support.jobs import failed_job
from tests.support.keyspace import keyspace_dump


def emq(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = main(["--url", url, "--actor", "ops", *args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_edit_retry_versions_and_restore_through_the_cli(mq: EchoMQ, redis_url: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    original = b'{"to": "a@exmaple.com"}\r\n\x00\xff'
    failed_job(mq, "mail", "j1", original)
    fixed = tmp_path / "fixed.json"
    fixed.write_bytes(b'{"to": "a@example.com"}')

    code, out, _ = emq(redis_url, capsys, "edit", "mail", "j1", "--payload-file", str(fixed), "--retry",
                       "--expect-state", "failed", "--expect-attempts", "1")

    assert (code, out) == (0, ["edited: job j1 is now pending (attempts 1); the payload it replaced is kept as "
                               "version 1"])
    code, out, _ = emq(redis_url, capsys, "versions", "mail", "j1")
    assert code == 0 and out[0].startswith("1\t") and out[0].endswith(f"\tedit\t{len(original)} bytes\tops")
    assert emq(redis_url, capsys, "restore", "mail", "j1", "--version", "1", "--expect-state", "pending")[0] == 0
    assert mq.payload("mail", "j1") == original
    code = main(["--url", redis_url, "versions", "mail", "j1", "--show", "2"])
    assert code == 0 and capsys.readouterr().out == '{"to": "a@example.com"}'


def test_the_cli_refuses_an_active_job_and_a_payload_the_schema_refuses(mq: EchoMQ, redis_url: str,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    failed_job(mq, "mail", "j1", '{"to": "a@example.com"}')
    mq.run(schema_set("mail", '{"type": "object", "required": ["to"]}'))
    mq.enqueue("mail", "x", job_id="a1")
    mq.claim("mail")
    before = keyspace_dump(mq.redis)

    code, _, err = emq(redis_url, capsys, "edit", "mail", "j1", "--payload", '{"too": 1}')
    assert code == 2 and "does not match the JSON Schema of mail" in err and "'to' is a required property" in err
    code, _, err = emq(redis_url, capsys, "edit", "mail", "a1", "--payload", '{"to": "b"}', "--expect-state", "active")
    assert code == 4 and "its worker may be running it" in err
    assert keyspace_dump(mq.redis) == before
