"""Bulk moves as bounded steps, with no Django in sight (the benchmark drives them too).

A step is one script call: a batch move over at most ``limit`` jobs (200 is
about 2 ms of server time), or one pipeline of compare-and-moves for ids an
operator ticked. Steps run one after another, so Redis serves every other
client between two of them, and a run can stop between any two.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain
from typing import Final

from queues import EchoMQ, InvalidInput, MoveResult, Refused, moves as queue_moves
from queues.keys import job_id_token, parse_job_id_token, validate_job_id, validate_queue_name
from queues.operator_moves import BATCH_MOVES, BUTTON_MOVE_NAMES
from queues.search import MATCH_MOVES, Limits, Query, Search, check_match_move, move_matches
from queues.visible import visible

from ..search.budget import process_pacer

DEFAULT_LIMIT: Final = 200
SELECTION_CHUNK: Final = 100
MAX_SELECTION: Final = 1000

# Queue-wide actions: what the console calls them, and the state they start from.
QUEUE_ACTIONS: Final[dict[str, str]] = dict(BATCH_MOVES)
SELECTION_MOVES: Final = BUTTON_MOVE_NAMES
# What a bulk run may be doing (cancelling one needs the permission its action needs).
RUN_ACTIONS: Final[tuple[str, ...]] = tuple(dict.fromkeys([*QUEUE_ACTIONS, *SELECTION_MOVES, *MATCH_MOVES]))


@dataclass(frozen=True, slots=True)
class Selected:
    """A job as the page showed it when the operator ticked it."""

    id: str
    state: str
    attempts: str

    @classmethod
    def parse(cls, text: str) -> Selected:
        """Reads ``state:attempts:id`` (the id last: it may hold ':'; one that is not UTF-8 as ``{HEX}``, as
        ``id_token`` writes it), the state possibly ``wrongtype:TYPE`` (a job key of another type)."""
        wrongtype = text.startswith("wrongtype:")
        state, sep1, rest = text.removeprefix("wrongtype:").partition(":")
        attempts, sep2, job_id = rest.partition(":")
        if not (sep1 and sep2):
            raise InvalidInput(f"a ticked job must be written state:attempts:id, not {text!r}")
        if attempts and not (attempts.isascii() and attempts.isdigit()):
            raise InvalidInput(f"attempts of a ticked job must be digits, not {attempts!r}")
        return cls(validate_job_id(parse_job_id_token(job_id)), "wrongtype:" + state if wrongtype else state, attempts)

    @property
    def text(self) -> str:
        """As the tick box wrote it (what :meth:`parse` reads)."""
        return f"{self.state}:{self.attempts}:{job_id_token(self.id)}"


@dataclass
class Tally:
    moved: int = 0
    skipped: int = 0
    missing: int = 0
    errors: int = 0
    # Per ticked job, what happened to it (selection runs only).
    outcomes: list[dict[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.moved + self.skipped + self.missing + self.errors

    def add(self, other: Tally) -> None:
        self.moved += other.moved
        self.skipped += other.skipped
        self.missing += other.missing
        self.errors += other.errors
        self.outcomes.extend(other.outcomes)

    def describe(self) -> str:
        text = f"{self.moved} moved, {self.skipped} skipped because they had moved on, {self.missing} missing"
        return text + (f", {self.errors} errors" if self.errors else "")


def queue_steps(mq: EchoMQ, action: str, queue: str, *, older_than_ms: int = 0, limit: int = DEFAULT_LIMIT,
                actor: str | None = None, at_most: int | None = None, as_of_ms: int | None = None) -> Iterator[Tally]:
    """The steps of a queue-wide action, checked now and run as they are iterated: one batch call each.

    "retry all" only moves jobs that failed before it started (or before
    ``as_of_ms``), so a job that fails again during a long run is not retried
    twice by it. A confirmed run is bound to what its confirmation counted:
    purge and retry take only jobs whose score is at most ``as_of_ms`` (the
    server time of the count), and no action moves more than ``at_most``
    jobs, however many arrived since.
    """
    queue = validate_queue_name(queue)
    actor = mq.actor if actor is None else actor
    if action not in QUEUE_ACTIONS:
        raise InvalidInput(f"unknown queue action {action!r}")
    limit = queue_moves._int(limit, "limit", 1, queue_moves.MAX_BATCH)
    if at_most is not None:
        at_most = queue_moves._int(at_most, "at most", 0)
    if as_of_ms is not None:
        as_of_ms = queue_moves._int(as_of_ms, "as of (ms)", 0, queue_moves.MAX_INT)
    make: Callable[[int, int], queue_moves.Call[queue_moves.BatchResult]]
    if action == "recover_all":
        def make(skip: int, size: int) -> queue_moves.Call[queue_moves.BatchResult]:
            return queue_moves.recover_expired(queue, limit=size, actor=actor, skip=skip)
    elif action == "retry_all":
        cutoff = (mq.server_time_ms(queue) if as_of_ms is None else as_of_ms) + 1

        def make(skip: int, size: int) -> queue_moves.Call[queue_moves.BatchResult]:
            return queue_moves.retry_failed(queue, limit=size, actor=actor, failed_before_ms=cutoff, skip=skip)
    else:
        state = QUEUE_ACTIONS[action]
        queue_moves._int(older_than_ms, "older than (ms)", 0)

        def make(skip: int, size: int) -> queue_moves.Call[queue_moves.BatchResult]:
            return queue_moves.purge(queue, state, older_than_ms=older_than_ms, limit=size, actor=actor,
                                     skip=skip, up_to_ms=as_of_ms)
    return _batch_tallies(mq, make, limit, at_most)


def _batch_tallies(mq: EchoMQ, make: Callable[[int, int], queue_moves.Call[queue_moves.BatchResult]], limit: int,
                   at_most: int | None) -> Iterator[Tally]:
    """Batches while the move reports more; with ``at_most``, each batch no larger than what is left of it."""
    skipped, moved = 0, 0
    while at_most is None or moved < at_most:
        size = limit if at_most is None else min(limit, at_most - moved)
        batch = mq.run(make(skipped, size))
        skipped += batch.skipped
        moved += batch.moved
        yield Tally(moved=batch.moved, skipped=batch.skipped, missing=batch.missing)
        if not batch.more:
            return


def selection_steps(mq: EchoMQ, move: str, queue: str, selected: list[Selected], *, chunk: int = SELECTION_CHUNK,
                    actor: str | None = None) -> Iterator[Tally]:
    """Compare-and-move on exactly the ticked jobs, each against the state and attempts shown.

    Checked now (a bad item refuses the whole selection), run as iterated: a
    chunk is one pipeline of independent scripts, so each job moves or is
    refused on its own, and a job that moved on since the page was drawn is
    skipped, never acted on.
    """
    if move not in SELECTION_MOVES:
        raise InvalidInput(f"unknown move {move!r}")
    if not selected:
        raise InvalidInput("no jobs were ticked")
    if len(selected) > MAX_SELECTION:
        raise InvalidInput(f"at most {MAX_SELECTION} jobs can be ticked at once, not {len(selected)}")
    actor = mq.actor if actor is None else actor
    calls = [queue_moves.operator_move(move, queue, item.id, expect_state=item.state, expect_attempts=item.attempts,
                                       actor=actor) for item in selected]
    return _selection_tallies(mq, selected, calls, chunk)


def _selection_tallies(mq: EchoMQ, selected: list[Selected], calls: list[queue_moves.Call[MoveResult]],
                       chunk: int) -> Iterator[Tally]:
    for start in range(0, len(selected), chunk):
        tally = Tally()
        results = mq.run_many(calls[start:start + chunk])
        for item, result in zip(selected[start:start + chunk], results):
            tally.add(_outcome(item, result))
        yield tally


def _outcome(item: Selected, result: object) -> Tally:
    # Kept as a link names the id (one that is not UTF-8 as {HEX}), its text escaped: every value is text.
    seen = {"id": job_id_token(item.id), "state": item.state, "attempts": item.attempts}
    if isinstance(result, MoveResult):
        return Tally(moved=1, outcomes=[{**seen, "outcome": "moved", "text": _shown(result.describe())}])
    if isinstance(result, Refused) and result.reason == "missing":
        return Tally(missing=1, outcomes=[{**seen, "outcome": "missing", "text": _shown(result.describe())}])
    if isinstance(result, Refused):
        return Tally(skipped=1, outcomes=[{**seen, "outcome": "skipped", "text": _shown(result.describe())}])
    return Tally(errors=1, outcomes=[{**seen, "outcome": "error", "text": _shown(str(result))}])


def _shown(text: str) -> str:
    return visible(text, backslashes=False)


def search_steps(mq: EchoMQ, move: str, query: Query, queue: str, *, at_most: int,
                 actor: str | None = None) -> Iterator[Tally]:
    """Compare-and-move on what a search of one queue finds, as it finds it, on at most ``at_most`` jobs.

    Checked now, run as iterated: one search step, then its matches in
    chunks of pipelined moves, each job against the state and attempts it
    had when it matched.
    """
    check_match_move(move, query.state)
    at_most = queue_moves._int(at_most, "at most", 1)
    engine = Search(query, [validate_queue_name(queue)], Limits(max_queues=1, max_matches=None, seconds=None,
                                                                redis_seconds=None, detail=0),
                    pacer=process_pacer())
    actor = mq.actor if actor is None else actor
    return _search_tallies(mq, move, engine, at_most, actor)


def search_steps_many(mq: EchoMQ, move: str, query: Query, counts: Mapping[str, int], *,
                      actor: str | None = None) -> Iterator[Tally]:
    """The same over the queues of a search of many, one queue after the other, each on at most its own count.

    Each queue is held to what it matched when the operator confirmed: a
    queue where more match by then gives no extra jobs, and one queue's
    extra matches never take another's place. All is checked before the
    first step.
    """
    check_match_move(move, query.state)
    parts = [search_steps(mq, move, query, queue, at_most=count, actor=actor) for queue, count in counts.items()
             if count]
    if not parts:
        raise InvalidInput("no queue with a job to act on")
    return chain.from_iterable(parts)


def _search_tallies(mq: EchoMQ, move: str, engine: Search, at_most: int, actor: str) -> Iterator[Tally]:
    for step in move_matches(mq, move, engine, at_most=at_most, actor=actor):
        yield Tally(moved=step.moved, skipped=step.skipped, missing=step.missing, errors=step.errors)


@dataclass(frozen=True, slots=True)
class RunEnd:
    tally: Tally
    cancelled: bool
    seconds: float


def drive(steps: Iterator[Tally], *, should_stop: Callable[[], bool] = lambda: False,
          on_progress: Callable[[Tally], None] = lambda tally: None) -> RunEnd:
    """Runs the steps one at a time until they end or ``should_stop()`` says so (checked between steps)."""
    started = time.monotonic()
    tally = Tally()
    while not (cancelled := should_stop()):
        step = next(steps, None)
        if step is None:
            break
        tally.add(step)
        on_progress(tally)
    return RunEnd(tally, cancelled, time.monotonic() - started)
