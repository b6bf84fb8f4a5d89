"""emq clone: the console's script, a new id made up when none is given, an edited payload checked first."""

from __future__ import annotations

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


def test_clone_through_the_cli_with_the_same_payload_or_an_edited_one(mq: EchoMQ, redis_url: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    failed_job(mq, "mail", "j1", b'{"to": "a"}\x00\xff')

    code, out, _ = emq(redis_url, capsys, "clone", "mail", "j1", "--new-id", "j2", "--expect-state", "failed",
                       "--expect-attempts", "1")

    assert code == 0 and out[0].startswith("cloned: job j1 (failed, attempts 1) as new job j2, pending, due ")
    assert mq.payload("mail", "j2") == b'{"to": "a"}\x00\xff'
    code, out, _ = emq(redis_url, capsys, "clone", "mail", "j1", "--expect-state", "failed", "--payload", '{"to": "b"}',
                       "--delay-ms", "60000", "--max-attempts", "4")
    assert code == 0
    new_id = out[0].split("as new job ")[1].split(",")[0]
    job = mq.job("mail", new_id)
    assert (job.state, job.text("max_attempts"), mq.payload("mail", new_id)) == ("pending", "4", b'{"to": "b"}')
    assert [e.actor for e in mq.job_events("mail", new_id)] == ["ops"]


def test_the_cli_refuses_a_taken_id_and_an_edited_payload_the_schema_refuses(mq: EchoMQ, redis_url: str,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    failed_job(mq, "mail", "j1", '{"to": "a"}')
    mq.run(schema_set("mail", '{"type": "object", "required": ["to"]}'))
    before = keyspace_dump(mq.redis)

    code, _, err = emq(redis_url, capsys, "clone", "mail", "j1", "--expect-state", "failed", "--new-id", "j1x",
                       "--payload", '{"too": 1}')
    assert code == 2 and "does not match the JSON Schema of mail" in err and "'to' is a required property" in err
    code, _, err = emq(redis_url, capsys, "clone", "mail", "j1", "--expect-state", "failed", "--new-id", "j1")
    assert code == 2 and "must differ" in err
    mq.enqueue("mail", "{}", job_id="taken", delay_ms=60_000)
    before = keyspace_dump(mq.redis)
    code, _, err = emq(redis_url, capsys, "clone", "mail", "j1", "--expect-state", "failed", "--new-id", "taken")
    assert code == 4 and "the new job id is taken" in err
    assert keyspace_dump(mq.redis) == before
