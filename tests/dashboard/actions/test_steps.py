"""The bulk steps themselves, on a standalone server and on a 3-master cluster."""

from __future__ import annotations

import time

import pytest

from dashboard.actions.bulk import MAX_SELECTION, Selected, drive, queue_steps, selection_steps
from queues import EchoMQ, InvalidInput
from tests.support.jobs import failed_jobs


def test_retry_all_moves_every_failed_job_in_calls_of_at_most_the_limit(any_mq: EchoMQ) -> None:
    failed_jobs(any_mq, "steps", 250)
    sizes: list[int] = []

    end = drive(queue_steps(any_mq, "retry_all", "steps", limit=100),
                on_progress=lambda tally: sizes.append(tally.moved))

    assert end.tally.moved == 250 and not end.cancelled
    assert [b - a for a, b in zip([0] + sizes, sizes)] == [100, 100, 50]
    assert any_mq.stats("steps").counts["failed"] == 0


def test_retry_all_leaves_jobs_that_failed_after_it_started(any_mq: EchoMQ) -> None:
    failed_jobs(any_mq, "steps", 3)
    steps = queue_steps(any_mq, "retry_all", "steps", limit=1)
    time.sleep(0.005)  # the cutoff is the server's millisecond: a failure in that same millisecond counts
    failed_jobs(any_mq, "steps", 2)

    assert drive(steps).tally.moved == 3
    assert any_mq.stats("steps").counts["failed"] == 2


def test_a_selection_moves_the_ticked_jobs_and_skips_or_misses_the_rest(any_mq: EchoMQ) -> None:
    a, b, c = failed_jobs(any_mq, "steps", 3)
    any_mq.retry("steps", b)
    any_mq.delete("steps", c, expect_state="failed")

    tally = drive(selection_steps(any_mq, "retry", "steps", [Selected(a, "failed", "1"), Selected(b, "failed", "1"),
                                                             Selected(c, "failed", "1")])).tally

    assert (tally.moved, tally.skipped, tally.missing) == (1, 1, 1)


def test_bad_selections_are_refused_before_any_move(mq: EchoMQ) -> None:
    [a] = failed_jobs(mq, "steps", 1)

    with pytest.raises(InvalidInput, match="unknown move"):
        selection_steps(mq, "explode", "steps", [Selected(a, "failed", "1")])
    with pytest.raises(InvalidInput, match="no jobs were ticked"):
        selection_steps(mq, "retry", "steps", [])
    with pytest.raises(InvalidInput, match="at most"):
        selection_steps(mq, "retry", "steps", [Selected(a, "failed", "1")] * (MAX_SELECTION + 1))
    with pytest.raises(InvalidInput, match="state must be one of"):
        selection_steps(mq, "retry", "steps", [Selected(a, "failed", "1"), Selected(a, "limbo", "1")])
    with pytest.raises(InvalidInput, match="limit"):
        queue_steps(mq, "retry_all", "steps", limit=5000)
    assert mq.job("steps", a).state == "failed"
