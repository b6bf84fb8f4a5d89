"""The census: the last stats of every registered queue, read a step at a time, sorted and totalled."""

from __future__ import annotations

from queues import EchoMQ
from queues.census import Census, filter_names
from tests.support.jobs import failed_jobs


def test_a_pass_reads_every_queue_in_steps_and_the_next_pass_starts_over(mq: EchoMQ) -> None:
    for name in ("a", "b", "c", "d", "e"):
        mq.enqueue(name, "x")
    census = Census()
    census.refresh_names(mq)

    steps = [census.step(mq, 2) for _ in range(3)]

    assert steps == [2, 2, 1]
    assert census.pass_done and census.totals().complete
    assert census.step(mq, 2) == 2 and not census.pass_done


def test_totals_follow_each_queue_read_again_and_forget_a_queue_gone_from_the_registry(mq: EchoMQ) -> None:
    mq.enqueue_many("mail", ["x"] * 3)
    failed_jobs(mq, "hooks", 2)
    census = Census()
    census.refresh_names(mq)
    census.step(mq, 10)
    assert (census.totals().pending, census.totals().failed) == (3, 2)

    mq.enqueue("mail", "y")
    census.absorb("mail", mq.stats("mail"))
    census.set_names(["mail"])

    totals = census.totals()
    assert (totals.queues, totals.read, totals.pending, totals.failed) == (1, 1, 4, 0)


def test_a_count_sort_puts_the_worst_first_ties_by_name_and_queues_not_read_yet_last(mq: EchoMQ) -> None:
    failed_jobs(mq, "b-two", 2)
    failed_jobs(mq, "c-one", 1)
    failed_jobs(mq, "a-one", 1)
    mq.enqueue("d-none", "x")
    census = Census()
    census.refresh_names(mq)
    census.step(mq, 4)
    census.set_names(["a-one", "b-two", "c-one", "d-none", "e-unread"])

    assert census.select(sort="failed") == ["b-two", "a-one", "c-one", "d-none", "e-unread"]
    assert census.select(sort="failed", descending=False) == ["d-none", "a-one", "c-one", "b-two", "e-unread"]
    assert census.select(sort="name", descending=True) == ["e-unread", "d-none", "c-one", "b-two", "a-one"]
    assert census.select("-ONE", sort="failed") == ["a-one", "c-one"]
    assert census.select("^c", sort="name") == ["c-one"]
    assert census.select(sort="no such sort") == census.select()


def test_the_filter_matches_a_substring_case_blind_or_a_prefix_after_a_caret() -> None:
    names = ["mail-eu", "Mail-us", "thumbs-mail", "hooks"]

    assert filter_names(names, "MAIL") == ["mail-eu", "Mail-us", "thumbs-mail"]
    assert filter_names(names, "^mail") == ["mail-eu", "Mail-us"]
    assert filter_names(names, "^") == names
    assert filter_names(names, "") == names


def test_a_failed_read_keeps_the_queue_out_of_the_sums_with_its_error(mq: EchoMQ) -> None:
    mq.enqueue_many("mail", ["x"] * 2)
    census = Census()
    census.refresh_names(mq)
    census.step(mq, 1)

    census.absorb("mail", RuntimeError("the node is down"))

    assert census.totals().pending == 0 and census.totals().unreadable == 1
    assert census.readings(["mail"]) == {"mail": "RuntimeError: the node is down"}
