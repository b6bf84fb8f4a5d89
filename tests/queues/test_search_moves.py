"""Acting on what a search finds: each job moves only as it was found; one that moved on is skipped, never touched."""

from __future__ import annotations

from typing import Any

import pytest

from queues import EchoMQ, InvalidInput
from queues.integrity import check_queue
from queues.search import Limits, MoveTally, Query, Search, move_matches
from tests.support.jobs import failed_jobs


def total(tallies: Any) -> MoveTally:
    out = MoveTally()
    for tally in tallies:
        out.add(tally)
    return out


class WorkerBetweenFindAndMove:
    """The client a bulk move runs on, with a worker that gets in first: before each chunk of moves is sent,
    the worker retries and claims ``victims`` of it (as any worker could, between the search and the move)."""

    def __init__(self, mq: EchoMQ, victims: int) -> None:
        self.mq, self.victims, self.taken = mq, victims, []  # type: ignore[var-annotated]

    def run(self, call: Any) -> Any:
        return self.mq.run(call)

    def run_many(self, calls: list[Any]) -> list[Any]:
        for call in calls[:self.victims]:
            job_id = call.args[0]
            self.mq.retry("q", job_id)
            self.taken.append(job_id)
        if self.taken:
            self.mq.claim("q", count=len(self.taken))
        return self.mq.run_many(calls)


def test_a_retry_over_a_search_moves_the_matches_only(mq: EchoMQ) -> None:
    timeouts = failed_jobs(mq, "q", 30, '{"n": 1}', error="timeout after 3012 ms")
    others = failed_jobs(mq, "q", 20, '{"n": 1}', error="card declined")

    tally = total(move_matches(mq, "retry", Search(Query("failed", error="timeout"), ["q"])))

    assert (tally.moved, tally.skipped, tally.missing) == (30, 0, 0)
    assert {mq.job("q", i).state for i in timeouts} == {"pending"}
    assert {mq.job("q", i).state for i in others} == {"failed"}


def test_a_job_that_moved_on_between_being_found_and_being_moved_is_skipped_and_untouched(mq: EchoMQ) -> None:
    failed_jobs(mq, "q", 10, '{"n": 1}', error="timeout")
    client = WorkerBetweenFindAndMove(mq, victims=3)

    tally = total(move_matches(client, "delete", Search(Query("failed", error="timeout"), ["q"])))

    assert (tally.moved, tally.skipped, tally.missing) == (7, 3, 0)
    for job_id in client.taken:
        job = mq.job("q", job_id)
        assert (job.state, job.attempts) == ("active", "2"), "the worker's job was touched"
    assert check_queue(mq, "q").ok


def test_a_bulk_move_acts_on_at_most_the_count_confirmed(mq: EchoMQ) -> None:
    failed_jobs(mq, "q", 25, '{"n": 1}', error="timeout")
    engine = Search(Query("failed", error="timeout", order="asc"), ["q"], Limits(lean_step_matches=10))

    tally = total(move_matches(mq, "retry", engine, at_most=12))

    assert tally.moved == 12 and mq.stats("q").counts["failed"] == 13
    assert engine.stopped == "acted on the 12 jobs confirmed"


def test_a_bulk_move_stopped_half_way_leaves_every_job_in_exactly_one_state(mq: EchoMQ) -> None:
    ids = failed_jobs(mq, "q", 500, '{"n": 1}', error="timeout")
    # A step of 25 entries ends at its 25th, before its first look at the clock (every 32 entries), so each
    # step finds exactly 25 jobs, moved as one chunk, even on the smallest budget: the run stops at 100 exactly.
    limits = Limits(step_entries=25, lean_step_matches=25, step_budget_us=100)
    steps = move_matches(mq, "retry", Search(Query("failed", error="timeout"), ["q"], limits), chunk=25)

    done = MoveTally()
    for tally in steps:
        done.add(tally)
        if done.moved >= 100:
            break

    counts = mq.stats("q").counts
    assert done.moved == 100 and counts == {"pending": 100, "active": 0, "done": 0, "failed": 400}
    assert check_queue(mq, "q").ok
    assert sorted(mq.job("q", i).state for i in ids).count("pending") == 100


@pytest.mark.parametrize(("move", "state"), [("retry", "pending"), ("promote", "failed"), ("recover", "active"),
                                             ("cancel", "done")])
def test_a_move_that_cannot_start_from_the_searched_state_is_refused(mq: EchoMQ, move: str, state: str) -> None:
    with pytest.raises(InvalidInput):
        next(move_matches(mq, move, Search(Query(state, error="x"), ["q"])))  # type: ignore[arg-type]
