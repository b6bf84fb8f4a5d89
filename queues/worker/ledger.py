"""The jobs a worker holds, from their claim until Redis has had the last word on each.

Both engines (the pipelined exchange and the one-thread loop) and the
heartbeat book through one :class:`Ledger`: a claim is booked in one place, a
handler's outcome in one, a report's answer in one, a release in one. The
ledger builds the calls (:mod:`queues.moves`) and reads their results; it
sends nothing itself, so it is tested without Redis. Its methods take its lock,
because the one-thread engine books from its handler's thread while the
heartbeat and a shutdown book from the event loop.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import moves
from ..errors import NothingToClaim, NotReplicated, OutOfMemory, Refused, Unavailable
from ..moves import Call, ClaimedJob

log = logging.getLogger("queues.worker")

MAX_BACKOFF_S = 5.0
FIRST_BACKOFF_S = 0.1
# How soon reports that Redis did not take are sent again (when not for want of memory).
RESEND_S = 0.05


@dataclass
class WorkerStats:
    claimed: int = 0
    completed: int = 0
    failed: int = 0
    lost: int = 0
    released: int = 0
    refused_reports: int = 0
    connection_errors: int = 0
    out_of_memory: int = 0
    # Moves that ran but fewer replicas than asked acknowledged (only with wait_replicas): a failover
    # now could undo them. Their completions and failures are counted above too.
    not_replicated: int = 0


@dataclass(eq=False)
class Held:
    """A job this worker holds a lease on, from its claim until its outcome or release is acknowledged."""

    job: ClaimedJob
    lease_deadline_ms: int
    started: bool = False
    finished: bool = False
    # The engine's handle on the running handler (a task or a future), to cancel it when the lease is lost.
    running: Any = None
    outcome: str = ""
    # A failure's error text and its fail call (sent alone when the round claims nothing).
    error: str = ""
    report: Call[Any] | None = None
    sent: bool = False
    lost: bool = False
    handed_back: bool = False

    @property
    def gone(self) -> bool:
        """Lost or handed back: nothing more is reported for it."""
        return self.lost or self.handed_back


@dataclass(frozen=True, slots=True)
class Claimed:
    """What a claim's result means for the engine."""

    start: list[Held]
    # Claimed while the worker was stopping: never started, handed back at once.
    release: list[Held]
    # Seconds before the next claim may go out.
    wait: float


@dataclass(slots=True)
class Round:
    """One round trip's calls: the reports (grouped per call) and, when ``claim`` > 0, a claim of that many jobs."""

    reports: list[Held]
    groups: list[list[Held]]
    calls: list[Call[Any]]
    claim: int


@dataclass(frozen=True, slots=True)
class RoundOutcome:
    # Seconds to wait before sending again the reports Redis did not take (0 when it took them all).
    resend_after: float
    claimed: Claimed | None


@dataclass
class Ledger:
    queue: str
    actor: str
    lease_ms: int
    backoff_ms: int
    poll_ms: int
    stats: WorkerStats = field(default_factory=WorkerStats)
    # Set once the worker is stopping (on the signal itself, before the loop wakes): no handler starts after it.
    stopping: threading.Event = field(default_factory=threading.Event)
    # Called (under the lock) when the lease of a job whose handler runs is lost: the engine cancels it.
    on_lost: Callable[[Held], None] = lambda held: None

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self._held: dict[str, Held] = {}
        self._outbox: list[Held] = []
        self._backoff = FIRST_BACKOFF_S
        self._oom_backoff = FIRST_BACKOFF_S
        # The last claim Redis refused (kind, text) that the heartbeat has not noted in the registry yet.
        self._refusal: tuple[str, str] | None = None

    # What is held ----------------------------------------------------------------

    def holding(self) -> int:
        return len(self._held)

    def held_ids(self) -> list[str]:
        with self._lock:
            return [h.job.id for h in self._held.values() if not h.gone]

    def ready(self) -> int:
        """Outcomes waiting to be reported."""
        with self._lock:
            return sum(1 for h in self._outbox if not h.gone)

    def not_started(self) -> list[Held]:
        """Held jobs no handler has started (prefetched, or claimed as the worker stopped)."""
        with self._lock:
            return [h for h in self._held.values() if not (h.started or h.gone)]

    # Claims ---------------------------------------------------------------------

    def claim_call(self, count: int) -> Call[list[ClaimedJob]]:
        return moves.claim(self.queue, lease_ms=self.lease_ms, worker=self.actor, count=count)

    def book_claim(self, result: Any) -> Claimed:
        """Books a claim's result: the jobs to start, those to hand back at once, and when to claim next."""
        with self._lock:
            if isinstance(result, NotReplicated):
                self.stats.not_replicated += 1
                log.warning("%s", result)
                result = result.result
            if isinstance(result, NothingToClaim):
                self._oom_backoff = FIRST_BACKOFF_S
                return Claimed([], [], self._idle_seconds(result))
            if isinstance(result, OutOfMemory):
                self._refusal = ("oom", str(result))
                return Claimed([], [], self.out_of_memory())
            if isinstance(result, Exception):
                self.stats.connection_errors += isinstance(result, Unavailable)
                if not isinstance(result, Unavailable):
                    self._refusal = ("script_error", str(result))
                log.warning("claim failed: %s", result)
                return Claimed([], [], self.poll_ms / 1000)
            self._oom_backoff = FIRST_BACKOFF_S
            start: list[Held] = []
            release: list[Held] = []
            for job in result:
                self.stats.claimed += 1
                h = Held(job, job.lease_deadline_ms)
                self._held[job.id] = h
                if self.stopping.is_set():
                    h.handed_back = True
                    release.append(h)
                else:
                    start.append(h)
            return Claimed(start, release, 0.0)

    def _idle_seconds(self, empty: NothingToClaim) -> float:
        """Until the next claimable job is due by the server's own clock (EMPTY carries both times), at most
        ``poll_ms``: a job may be enqueued meanwhile. Zero when the claim ran out of budget moving
        unclaimable jobs out of the way: the next call makes progress again."""
        wait = empty.wait_ms
        longest = self.poll_ms / 1000
        return longest if wait is None else min(wait / 1000, longest)

    # Handlers ---------------------------------------------------------------------

    def book_started(self, h: Held) -> Literal["start", "release", "gone"]:
        """"start" when the handler may start now; "release" when the worker is stopping (the job is marked
        handed back and the caller releases it at once); "gone" when it was lost or handed back already."""
        with self._lock:
            if h.gone:
                return "gone"
            if self.stopping.is_set():
                h.handed_back = True
                return "release"
            h.started = True
            return "start"

    def book_outcome(self, h: Held, *, cancelled: bool, error: BaseException | None, error_text: str = "") -> bool:
        """Puts a finished handler's outcome in the outbox, unless its job was lost or handed back meanwhile;
        True when there is something to report."""
        with self._lock:
            h.finished = True
            if h.gone:
                if self._held.get(h.job.id) is h and not h.sent:
                    del self._held[h.job.id]
                return False
            if cancelled or error is not None:
                h.outcome = "fail"
                h.error = "handler cancelled" if cancelled else error_text
                h.report = moves.fail(self.queue, h.job.id, h.job.token, error=h.error, backoff_ms=self.backoff_ms,
                                      actor=self.actor)
            else:
                h.outcome = "complete"
            self._outbox.append(h)
            return True

    def lose(self, h: Held, refusal: Exception) -> None:
        """The lease is gone (an operator cancelled the job, or it lapsed and was recovered): nothing is reported."""
        with self._lock:
            h.lost = True
            self.stats.lost += 1
            log.warning("lost the lease on job %s: %s", h.job.id, refusal)
            if h.started and not h.finished:
                self.on_lost(h)
                return
            # Finished (its report is dropped) or never started (the engine skips it).
            self._held.pop(h.job.id, None)
            self._outbox = [other for other in self._outbox if other is not h]
            self.on_lost(h)

    # Reports ------------------------------------------------------------------------

    def take_reports(self) -> list[Held]:
        with self._lock:
            reports = [h for h in self._outbox if not h.gone]
            self._outbox = []
            for h in reports:
                h.sent = True
            return reports

    def requeue(self, reports: list[Held]) -> None:
        with self._lock:
            for h in reports:
                h.sent = False
            self._outbox = reports + self._outbox

    def round(self, reports: list[Held], claim: int) -> Round:
        """Reports and a claim of ``claim`` jobs in one ``finish_claim`` (up to 1000 reports): one script per
        round. Otherwise one ``complete_many`` per 1000 completions, one ``fail`` per failure, and a claim
        when ``claim`` > 0."""
        if claim > 0 and 0 < len(reports) <= moves.MAX_BATCH:
            call = moves.finish_claim(self.queue, [moves.Report(h.job.id, h.job.token, h.outcome, h.error)
                                                   for h in reports],
                                      lease_ms=self.lease_ms, count=claim, backoff_ms=self.backoff_ms,
                                      actor=self.actor)
            return Round(reports, [reports], [call], claim)
        done = [h for h in reports if h.outcome == "complete"]
        groups = [done[i:i + moves.MAX_BATCH] for i in range(0, len(done), moves.MAX_BATCH)]
        calls: list[Call[Any]] = [moves.complete_many(self.queue, [(h.job.id, h.job.token) for h in group],
                                                      actor=self.actor) for group in groups]
        for h in reports:
            if h.outcome != "complete":
                assert h.report is not None
                groups.append([h])
                calls.append(h.report)
        if claim > 0:
            calls.append(self.claim_call(claim))
        return Round(reports, groups, calls, claim)

    def book_round(self, rnd: Round, results: list[Any]) -> RoundOutcome:
        """Books every answer of a round that reached Redis; the reports it did not take go back to the outbox."""
        with self._lock:
            self._backoff = FIRST_BACKOFF_S
            retry: list[Held] = []
            oom = False
            # The claim's result: the last call's, or the claim half of a finish_claim.
            claim_result = results[-1] if rnd.claim > 0 else None
            for group, result in zip(rnd.groups, results):
                if isinstance(result, NotReplicated):
                    self.stats.not_replicated += len(group)
                    log.warning("%s", result)
                    result = result.result
                if isinstance(result, moves.FinishedAndClaimed):
                    claim_result = result.claimed
                    result = result.finished
                answers = result if isinstance(result, list) else [result] * len(group)
                for h, answer in zip(group, answers):
                    oom = oom or isinstance(answer, OutOfMemory)
                    if not self._settle(h, answer):
                        retry.append(h)
            if retry:
                self.requeue(retry)
            resend_after = (self.out_of_memory() if oom else RESEND_S) if retry else 0.0
            claimed = self.book_claim(claim_result) if rnd.claim > 0 else None
            return RoundOutcome(resend_after, claimed)

    def _settle(self, h: Held, result: Any) -> bool:
        """Books a report's answer; False when it must be sent again (Redis was not reached, or refused it for
        want of memory before running it)."""
        if isinstance(result, (Unavailable, OutOfMemory)):
            return False
        self._held.pop(h.job.id, None)
        if isinstance(result, Refused):
            self.stats.refused_reports += 1
            log.warning("%s of job %s not recorded: %s", h.outcome, h.job.id, result)
        elif isinstance(result, Exception):
            self.stats.refused_reports += 1
            log.error("%s of job %s not recorded: %s", h.outcome, h.job.id, result)
        elif h.outcome == "complete":
            self.stats.completed += 1
        else:
            self.stats.failed += 1
        return True

    def book_unreachable(self, rnd: Round, error: Unavailable) -> float:
        """A round that did not reach Redis: its reports go back to the outbox; returns the pause (seconds)."""
        self.requeue(rnd.reports)
        return self.unreachable(error)

    # Leases -------------------------------------------------------------------------

    def extend_targets(self) -> list[Held]:
        """The leases the heartbeat extends: every held job not yet reported, lost or handed back."""
        with self._lock:
            return [h for h in self._held.values() if not (h.gone or h.sent)]

    def extend_calls(self, targets: list[Held]) -> list[Call[int]]:
        return [moves.extend(self.queue, h.job.id, h.job.token, lease_ms=self.lease_ms, actor=self.actor)
                for h in targets]

    def book_extends(self, targets: list[Held], results: list[Any]) -> None:
        with self._lock:
            for h, result in zip(targets, results):
                if isinstance(result, Refused):
                    # A report sent meanwhile moves the job on; only its own answer counts.
                    if not (h.sent or h.gone):
                        self.lose(h, result)
                elif isinstance(result, Exception):
                    log.warning("extend of job %s failed: %s", h.job.id, result)
                else:
                    h.lease_deadline_ms = result

    # Hand-back ------------------------------------------------------------------------

    def hand_back(self, targets: list[Held]) -> list[Call[int]]:
        """Marks ``targets`` handed back (no outcome of theirs is reported now) and returns their releases."""
        with self._lock:
            for h in targets:
                h.handed_back = True
            return self.release_calls(targets)

    def release_calls(self, targets: list[Held]) -> list[Call[int]]:
        return [moves.release(self.queue, h.job.id, h.job.token, actor=self.actor) for h in targets]

    def take_for_hand_back(self) -> tuple[list[Held], list[Held]]:
        """When the grace period ends: the outcomes ready to report, and every held job without one
        (running, or never started), marked handed back in the same step so that no outcome of theirs
        is booked after it."""
        with self._lock:
            reports = self.take_reports()
            unfinished = [h for h in self._held.values() if not (h.outcome or h.gone)]
            self.hand_back(unfinished)
            return reports, unfinished

    def book_released(self, targets: list[Held], results: list[Any] | Unavailable) -> None:
        """Books the releases' answers; when they could not be sent, the leases lapse and a sweep recovers them."""
        with self._lock:
            if isinstance(results, Unavailable):
                self.stats.connection_errors += 1
                log.warning("could not hand back %d jobs (%s): their leases will lapse and a sweep will recover "
                            "them", len(targets), results)
                results = [results] * len(targets)
            for h, result in zip(targets, results):
                self._held.pop(h.job.id, None)
                if isinstance(result, NotReplicated):
                    self.stats.not_replicated += 1
                    result = result.result
                if isinstance(result, Exception):
                    log.warning("release of job %s refused: %s", h.job.id, result)
                else:
                    self.stats.released += 1

    # Pacing ---------------------------------------------------------------------------

    def unreachable(self, error: Unavailable) -> float:
        """Counts a round that did not reach Redis; returns how long to wait before the next (seconds)."""
        with self._lock:
            self.stats.connection_errors += 1
            log.warning("redis unavailable (%s); retrying in %.1f s", error, self._backoff)
            wait, self._backoff = self._backoff, min(self._backoff * 2, MAX_BACKOFF_S)
            return wait

    def take_refusal(self) -> tuple[str, str] | None:
        """The claim refusal to note in the registry (kind ``oom`` or ``script_error``, text), once."""
        with self._lock:
            refusal, self._refusal = self._refusal, None
            return refusal

    def out_of_memory(self) -> float:
        """Counts a round Redis refused for want of memory; returns how long to back off (seconds).

        Nothing ran: the finished jobs wait in the outbox (their leases kept by the heartbeat, whose
        extend Redis still runs) and no new job is claimed until a move gets through again.
        """
        with self._lock:
            self.stats.out_of_memory += 1
            if self._oom_backoff == FIRST_BACKOFF_S:
                log.warning("redis is out of memory: holding %d outcomes and claiming nothing until it has room",
                            len(self._outbox))
            wait, self._oom_backoff = self._oom_backoff, min(self._oom_backoff * 2, MAX_BACKOFF_S)
            return wait


__all__ = ["Claimed", "Held", "Ledger", "Round", "RoundOutcome", "WorkerStats"]
