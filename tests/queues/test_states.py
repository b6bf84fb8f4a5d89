"""states: where some given jobs are now, in one bounded read (a page's rows that moved on)."""

from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput, reads


def test_it_reads_each_jobs_state_and_attempts_and_says_which_are_gone(any_mq: EchoMQ) -> None:
    any_mq.enqueue("q", "x", job_id="finished")
    [job] = any_mq.claim("q")
    any_mq.complete("q", job.id, job.token)
    any_mq.enqueue("q", "x", job_id="waiting")

    found = any_mq.run(reads.states("q", ["finished", "waiting", "never-was"]))

    assert [(s.id, s.state, s.attempts, s.exists) for s in found] == [
        ("finished", "done", "1", True), ("waiting", "pending", "0", True), ("never-was", "", "", False)]


def test_no_ids_is_an_empty_answer_and_too_many_is_refused(mq: EchoMQ) -> None:
    assert mq.run(reads.states("q", [])) == []
    with pytest.raises(InvalidInput):
        reads.states("q", [f"j{n}" for n in range(501)])
