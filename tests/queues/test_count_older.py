"""count_older: how many jobs a purge of that age would select now, read in one O(log N) script."""

from __future__ import annotations

import pytest

from queues import EchoMQ, InvalidInput


def test_it_counts_the_jobs_that_entered_the_state_at_least_that_long_ago(any_mq: EchoMQ) -> None:
    ids = any_mq.enqueue_many("q", ["x"] * 3)
    for job in any_mq.claim("q", count=3):
        any_mq.complete("q", job.id, job.token)

    assert any_mq.count_older("q", "done") == 3
    assert any_mq.count_older("q", "done", older_than_ms=3_600_000) == 0
    assert any_mq.count_older("q", "failed") == 0
    assert any_mq.purge("q", "done", older_than_ms=0).moved == len(ids)


def test_a_bad_state_or_age_is_refused(mq: EchoMQ) -> None:
    with pytest.raises(InvalidInput):
        mq.count_older("q", "limbo")
    with pytest.raises(InvalidInput):
        mq.count_older("q", "done", older_than_ms=-1)
