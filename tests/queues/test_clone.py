"""clone: a new job made from another in one script, the source only read, refused whole when it cannot be made."""

from __future__ import annotations

from typing import Any

import pytest

from queues import EchoMQ, InvalidInput, Refused, moves
from queues.moves import SOURCE_PAYLOAD
from tests.support.jobs import done_jobs, failed_job
from tests.support.keyspace import keyspace_dump


def clone(mq: EchoMQ, job_id: str, new_id: str, *, state: str, attempts: str = "", **arguments: Any) -> moves.MoveResult:
    return mq.operator_move("clone", "mail", job_id, expect_state=state, expect_attempts=attempts,
                            arguments={"new_id": new_id, **arguments})


def test_a_failed_job_is_cloned_as_a_new_pending_job_with_its_exact_bytes(mq: EchoMQ) -> None:
    payload = bytes(range(256)) + "é\u202e".encode()
    failed_job(mq, "mail", "f1", payload)
    source_before = mq.redis.hgetall("emq:{mail}:job:f1")

    result = clone(mq, "f1", "f1-again", state="failed", attempts="1")

    assert result.describe() == "cloned: job f1 (failed, attempts 1) as new job f1-again, pending"
    assert (result.new_id, result.state, result.attempts) == ("f1-again", "failed", "1")
    # The source is only read; the new job is a fresh one, due now, with the source's max attempts.
    assert mq.redis.hgetall("emq:{mail}:job:f1") == source_before
    job = mq.job("mail", "f1-again")
    assert (job.state, job.text("attempts"), job.text("max_attempts")) == ("pending", "0", "1")
    assert mq.payload("mail", "f1-again") == payload
    assert mq.redis.zscore("emq:{mail}:pending", "f1-again") == result.due_ms
    [event] = mq.job_events("mail", "f1-again")
    assert (event.move, event.source, event.target, event.actor, event.error) == (
        "clone", "", "pending", "test", "clone of f1")
    assert job.text("created_at") == str(event.ts_ms)
    [claimed] = mq.claim("mail")
    assert (claimed.id, claimed.attempts, claimed.payload) == ("f1-again", 1, payload)


def test_a_clone_takes_an_edited_payload_a_delay_and_max_attempts(mq: EchoMQ) -> None:
    [done] = done_jobs(mq, "mail", 1, payload='{"to": "a@exmaple.com"}')

    result = clone(mq, done, "fixed", state="done", new_payload=b"", delay_ms=60_000, max_attempts=5)

    job = mq.job("mail", "fixed")
    assert (job.state, job.text("max_attempts"), mq.payload("mail", "fixed")) == ("pending", "5", b"")
    [event] = mq.job_events("mail", "fixed")
    assert result.due_ms == event.ts_ms + 60_000 == mq.redis.zscore("emq:{mail}:pending", "fixed")
    assert mq.job("mail", done).state == "done"


def test_an_active_job_is_cloned_while_its_worker_runs_it(mq: EchoMQ) -> None:
    mq.enqueue("mail", "running", job_id="a1")
    [held] = mq.claim("mail")

    clone(mq, "a1", "a2", state="active", attempts="1")

    assert mq.job("mail", "a1").state == "active"
    mq.complete("mail", "a1", held.token)
    assert mq.payload("mail", "a2") == b"running"


@pytest.mark.parametrize("case", ["id taken", "source moved on", "source gone", "attempts changed"])
def test_a_clone_that_cannot_be_made_is_refused_with_nothing_written(mq: EchoMQ, case: str) -> None:
    failed_job(mq, "mail", "s1", "x")
    mq.enqueue("mail", "other", job_id="taken", delay_ms=60_000)
    if case == "source moved on":
        mq.operator_move("retry", "mail", "s1", expect_state="failed")
    before = keyspace_dump(mq.redis)
    new_id, state, attempts, source = {"id taken": ("taken", "failed", "1", "s1"),
                                       "source moved on": ("n1", "failed", "", "s1"),
                                       "source gone": ("n1", "failed", "", "nope"),
                                       "attempts changed": ("n1", "failed", "3", "s1")}[case]

    with pytest.raises(Refused) as refused:
        clone(mq, source, new_id, state=state, attempts=attempts)

    assert keyspace_dump(mq.redis) == before
    reason = {"id taken": "exists", "source moved on": "state", "source gone": "missing",
              "attempts changed": "attempts"}[case]
    assert refused.value.reason == reason
    if case == "id taken":
        assert "the new job id is taken: a job with it already exists (pending, attempts 0)" in refused.value.describe()


def test_a_source_payload_that_is_missing_or_too_long_is_refused_unless_one_is_given(mq: EchoMQ) -> None:
    failed_job(mq, "mail", "s1", "x")
    mq.redis.hdel("emq:{mail}:job:s1", "payload")
    before = keyspace_dump(mq.redis)

    with pytest.raises(Refused) as refused:
        clone(mq, "s1", "n1", state="failed")
    assert refused.value.reason == "no_payload" and keyspace_dump(mq.redis) == before

    mq.redis.hset("emq:{mail}:job:s1", "payload", b"y" * (moves.MAX_PAYLOAD_BYTES + 1))
    before = keyspace_dump(mq.redis)
    with pytest.raises(Refused) as refused:
        clone(mq, "s1", "n1", state="failed")
    assert refused.value.reason == "payload_too_large" and keyspace_dump(mq.redis) == before

    clone(mq, "s1", "n1", state="failed", new_payload="given")
    assert mq.payload("mail", "n1") == b"given"


@pytest.mark.parametrize("arguments", [{"new_id": "s1"}, {"new_id": ""}, {"new_id": "a{b}"}, {},
                                       {"new_id": "n", "delay_ms": -1}, {"new_id": "n", "max_attempts": 0},
                                       {"new_id": "n", "new_payload": b"x" * (moves.MAX_PAYLOAD_BYTES + 1)},
                                       {"new_id": "n", "retry": True}])
def test_bad_arguments_are_refused_before_anything_is_sent(mq: EchoMQ, arguments: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        moves.operator_move("clone", "mail", "s1", expect_state="failed", arguments=arguments)


def test_the_script_itself_refuses_a_new_key_that_is_not_the_new_ids(mq: EchoMQ) -> None:
    failed_job(mq, "mail", "s1", "x")
    call = moves.operator_move("clone", "mail", "s1", expect_state="failed", arguments={"new_id": "n1"})
    before = keyspace_dump(mq.redis)

    with pytest.raises(Exception, match="KEYS\\[7\\] must be"):
        mq.run(moves.Call(call.script, [*call.keys[:6], "emq:{mail}:job:other"], call.args, call.parse))

    assert keyspace_dump(mq.redis) == before
    assert call.args[4] == b"" and SOURCE_PAYLOAD is not None
