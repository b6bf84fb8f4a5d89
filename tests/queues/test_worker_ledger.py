"""The worker's ledger of held jobs, without Redis: what each booking does to the jobs it holds."""

from __future__ import annotations

from queues.errors import NothingToClaim, NotReplicated, OutOfMemory, Paused, Refused, Unavailable
from queues.moves import ClaimedJob, FinishedAndClaimed
from queues.worker.ledger import Held, Ledger


def _ledger() -> Ledger:
    return Ledger(queue="mail", actor="w1", lease_ms=30_000, backoff_ms=1000, poll_ms=200)


def _job(job_id: str, deadline: int = 1000) -> ClaimedJob:
    return ClaimedJob("mail", job_id, 1, "ab12", b"payload", deadline)


def _refused(job_id: str) -> Refused:
    return Refused("complete", job_id, "token", "active", "2")


def _claimed(ledger: Ledger, *ids: str) -> list[Held]:
    claimed = ledger.book_claim([_job(job_id) for job_id in ids])
    assert claimed.release == [] and claimed.wait == 0
    for h in claimed.start:
        assert ledger.book_started(h) == "start"
    return claimed.start


def _finished(ledger: Ledger, *held: Held, error: BaseException | None = None) -> None:
    for h in held:
        assert ledger.book_outcome(h, cancelled=False, error=error, error_text=str(error or ""))


def test_a_claim_books_each_job_once_with_its_lease_deadline() -> None:
    ledger = _ledger()
    held = _claimed(ledger, "a", "b")

    assert [(h.job.id, h.lease_deadline_ms) for h in held] == [("a", 1000), ("b", 1000)]
    assert ledger.holding() == 2 and ledger.held_ids() == ["a", "b"] and ledger.stats.claimed == 2


def test_jobs_claimed_while_stopping_are_to_be_handed_back_and_never_started() -> None:
    ledger = _ledger()
    ledger.stopping.set()
    claimed = ledger.book_claim([_job("a"), _job("b")])

    assert claimed.start == [] and [h.job.id for h in claimed.release] == ["a", "b"]
    assert all(h.handed_back for h in claimed.release)
    assert [call.script for call in ledger.release_calls(claimed.release)] == ["release", "release"]
    ledger.book_released(claimed.release, [1, _refused("b")])
    assert ledger.holding() == 0 and ledger.stats.released == 1


def test_a_job_whose_start_comes_after_the_stop_is_handed_back_and_one_lost_is_not_started() -> None:
    ledger = _ledger()
    waiting, lost = ledger.book_claim([_job("a"), _job("b")]).start
    ledger.lose(lost, _refused("b"))
    ledger.stopping.set()

    assert ledger.book_started(waiting) == "release" and waiting.handed_back and not waiting.started
    assert ledger.book_started(lost) == "gone"
    assert ledger.not_started() == []


def test_not_started_lists_the_prefetched_jobs_only() -> None:
    ledger = _ledger()
    claimed = ledger.book_claim([_job("running"), _job("prefetched")])
    assert ledger.book_started(claimed.start[0]) == "start"

    assert [h.job.id for h in ledger.not_started()] == ["prefetched"]


def test_a_round_that_claims_sends_its_reports_and_the_claim_in_one_finish_claim() -> None:
    ledger = _ledger()
    a, b, c = _claimed(ledger, "a", "b", "c")
    _finished(ledger, a, c)
    _finished(ledger, b, error=ValueError("boom"))
    rnd = ledger.round(ledger.take_reports(), claim=3)

    [call] = rnd.calls
    assert call.script == "finish_claim" and call.args[3] == 3
    assert call.args[5::5] == ["a", "c", "b"] and call.args[8::5] == ["complete", "complete", "fail"]
    assert call.args[9::5] == [b"", b"", b"boom"]
    outcome = ledger.book_round(rnd, [FinishedAndClaimed([5, _refused("c"), "pending"], [_job("d")])])

    assert (ledger.stats.completed, ledger.stats.failed, ledger.stats.refused_reports) == (1, 1, 1)
    assert outcome.resend_after == 0 and outcome.claimed is not None
    assert [h.job.id for h in outcome.claimed.start] == ["d"] and ledger.held_ids() == ["d"]


def test_a_round_that_claims_nothing_sends_the_completions_in_one_call_and_each_failure_alone() -> None:
    ledger = _ledger()
    a, b, c = _claimed(ledger, "a", "b", "c")
    _finished(ledger, a, c)
    _finished(ledger, b, error=ValueError("boom"))
    rnd = ledger.round(ledger.take_reports(), claim=0)

    assert [call.script for call in rnd.calls] == ["complete_many", "fail"]
    assert rnd.calls[0].args[1::3] == ["a", "c"] and rnd.calls[1].args[3] == b"boom"
    outcome = ledger.book_round(rnd, [[5, _refused("c")], "pending"])

    assert (ledger.stats.completed, ledger.stats.failed, ledger.stats.refused_reports) == (1, 1, 1)
    assert outcome.claimed is None and ledger.holding() == 0


def test_a_finish_claim_on_a_paused_queue_books_the_reports_and_idles() -> None:
    ledger = _ledger()
    (a,) = _claimed(ledger, "a")
    _finished(ledger, a)
    rnd = ledger.round(ledger.take_reports(), claim=1)
    outcome = ledger.book_round(rnd, [FinishedAndClaimed([5], Paused("mail", 1, "op", "deploy"))])

    assert ledger.stats.completed == 1 and ledger.holding() == 0
    assert outcome.claimed is not None and outcome.claimed.start == [] and outcome.claimed.wait == 0.2


def test_reports_redis_did_not_take_go_back_to_the_outbox_and_out_of_memory_backs_off_longer_each_time() -> None:
    ledger = _ledger()
    a, b = _claimed(ledger, "a", "b")
    _finished(ledger, a, b)
    waits = []
    for _ in range(3):
        rnd = ledger.round(ledger.take_reports(), claim=1)
        oom = OutOfMemory("full")
        outcome = ledger.book_round(rnd, [oom])
        waits.append(outcome.resend_after)
        assert outcome.claimed is not None and outcome.claimed.start == []
    # The reports and the claim each count a refusal, so the pause doubles twice per round.
    assert waits == [0.1, 0.4, 1.6] and ledger.stats.out_of_memory == 6
    assert ledger.ready() == 2 and ledger.holding() == 2

    rnd = ledger.round(ledger.take_reports(), claim=0)
    assert ledger.book_round(rnd, [[7, 7]]).resend_after == 0
    assert ledger.stats.completed == 2 and ledger.holding() == 0


def test_a_round_that_did_not_reach_redis_requeues_its_reports_and_backs_off() -> None:
    ledger = _ledger()
    (a,) = _claimed(ledger, "a")
    _finished(ledger, a)
    waits = [ledger.book_unreachable(ledger.round(ledger.take_reports(), claim=1), Unavailable("down"))
             for _ in range(2)]

    assert waits == [0.1, 0.2]
    assert ledger.ready() == 1 and ledger.stats.connection_errors == 2 and not a.sent


def test_a_move_fewer_replicas_acknowledged_counts_as_done_and_as_not_replicated() -> None:
    ledger = _ledger()
    (a,) = _claimed(ledger, "a")
    _finished(ledger, a)
    rnd = ledger.round(ledger.take_reports(), claim=1)
    ledger.book_round(rnd, [NotReplicated("finish_claim", FinishedAndClaimed([5], [_job("b")]), 0, 1, 100)])

    assert (ledger.stats.completed, ledger.stats.not_replicated, ledger.held_ids()) == (1, 1, ["b"])


def test_an_empty_claim_waits_until_the_next_job_is_due_at_most_the_poll_interval() -> None:
    ledger = _ledger()

    assert ledger.book_claim(NothingToClaim("", 1_050, 1_000)).wait == 0.05
    assert ledger.book_claim(NothingToClaim("", 9_000, 1_000)).wait == 0.2
    assert ledger.book_claim(NothingToClaim("", None, 1_000)).wait == 0.2
    assert ledger.book_claim(Unavailable("down")).wait == 0.2 and ledger.stats.connection_errors == 1


def test_a_lost_lease_drops_a_finished_report_and_leaves_a_running_job_to_its_handler() -> None:
    ledger = _ledger()
    cancelled: list[str] = []
    ledger.on_lost = lambda h: cancelled.append(h.job.id)
    finished, running = _claimed(ledger, "finished", "running")
    _finished(ledger, finished)
    ledger.lose(finished, _refused("finished"))
    ledger.lose(running, _refused("running"))

    assert ledger.take_reports() == [] and cancelled == ["finished", "running"]
    # The running handler keeps its slot until it returns; its outcome is then dropped.
    assert ledger.held_ids() == [] and ledger.holding() == 1
    assert not ledger.book_outcome(running, cancelled=False, error=None)
    assert ledger.holding() == 0 and ledger.stats.lost == 2


def test_a_refused_extend_loses_the_job_unless_its_report_went_out_meanwhile() -> None:
    ledger = _ledger()
    kept, lost, reported = _claimed(ledger, "kept", "lost", "reported")
    targets = ledger.extend_targets()
    _finished(ledger, reported)
    ledger.take_reports()
    ledger.book_extends(targets, [2000, _refused("lost"), _refused("reported")])

    assert kept.lease_deadline_ms == 2000 and lost.lost and not reported.lost
    assert ledger.stats.lost == 1 and [h.job.id for h in ledger.extend_targets()] == ["kept"]


def test_the_hand_back_takes_the_ready_outcomes_and_every_unfinished_job_at_once() -> None:
    ledger = _ledger()
    done, running = _claimed(ledger, "done", "running")
    (prefetched,) = ledger.book_claim([_job("prefetched")]).start
    _finished(ledger, done)
    reports, unfinished = ledger.take_for_hand_back()

    assert reports == [done] and unfinished == [running, prefetched]
    assert all(h.handed_back for h in unfinished)
    # The running handler returns after the hand-back: its outcome is not reported.
    assert not ledger.book_outcome(running, cancelled=False, error=None) and ledger.take_reports() == []
    ledger.book_released(unfinished, Unavailable("down"))
    assert ledger.stats.released == 0 and ledger.stats.connection_errors == 1
