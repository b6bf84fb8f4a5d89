"""rerun: a done or failed job runs again as a new attempt of the same job, compare-and-move."""

from __future__ import annotations

import pytest

from queues import EchoMQ, Refused, moves
from tests.support.jobs import done_jobs, failed_job
from tests.support.keyspace import keyspace_dump


def rerun(mq: EchoMQ, job_id: str, state: str, attempts: str = "") -> moves.MoveResult:
    return mq.operator_move("rerun", "mail", job_id, expect_state=state, expect_attempts=attempts)


def test_a_done_job_runs_again_as_a_new_attempt_of_the_same_job(mq: EchoMQ) -> None:
    [job_id] = done_jobs(mq, "mail", 1, payload="same bytes")
    mq.redis.hset(f"emq:{{mail}}:job:{job_id}", "max_attempts", "1")

    result = rerun(mq, job_id, "done", "1")

    assert result.describe() == f"re-run: job {job_id} is now pending (attempts 1)"
    job = mq.job("mail", job_id)
    assert (job.state, job.text("max_attempts")) == ("pending", "2")
    assert [e.move for e in mq.job_events("mail", job_id)][0] == "rerun"
    [claimed] = mq.claim("mail")
    assert (claimed.id, claimed.attempts, claimed.payload) == (job_id, 2, b"same bytes")


def test_a_failed_job_is_not_rerun_its_rerun_is_retry(mq: EchoMQ) -> None:
    failed_job(mq, "mail", "f1", "x", error="boom")
    before = keyspace_dump(mq.redis)
    with pytest.raises(Refused) as refused:
        rerun(mq, "f1", "failed", "1")
    assert refused.value.reason == "state"
    assert keyspace_dump(mq.redis) == before


def test_a_rerun_of_a_job_that_moved_on_is_refused_with_nothing_written(mq: EchoMQ) -> None:
    [job_id] = done_jobs(mq, "mail", 1)
    rerun(mq, job_id, "done", "1")
    before = keyspace_dump(mq.redis)

    with pytest.raises(Refused) as refused:
        rerun(mq, job_id, "done", "1")  # a second operator, from the same page

    assert refused.value.reason == "state"
    assert keyspace_dump(mq.redis) == before
