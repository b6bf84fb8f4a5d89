"""A job search run on every deployment a person may see, at once, each within a time budget, saying how far each got.

Each deployment's search is the search page's engine (:class:`queues.search.Search`): its bounded steps are driven
in a fan-out thread, paced by the process's duty cycle, until it finishes or ``EMQ_DEPLOYMENT_SEARCH_BUDGET_S`` is
spent; a search that did not finish says its count is a floor and how many queues it searched. The whole search
takes one of the person's search slots (it is one search they asked for: its steps share the process's pacer, so
together they keep no more Redis time than one). Payload values are masked as each deployment's own Redis says, for
the reader the person is on that deployment; a deployment that does not answer is named with why, never left out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Final

from django.conf import settings

from queues import EchoMQ, EmqError, InvalidInput, Unavailable
from queues.search import Limits, Match, Search

from .deployments import Deployment, forget, use
from .fan_out import Answer, fan_out_each
from .redaction import Reader, masked_matches, masked_text_keeper, maskers_read, reader_for, search_problem
from .search.budget import SLOTS, SearchBusy, console_limits, process_pacer
from .search.requests import SearchRequest

# Matches shown per deployment (each with its payload head); the rest are counted.
SHOWN_PER_DEPLOYMENT: Final = 20
LIMITS: Final = Limits(max_queues=100, max_matches=200_000, seconds=None, detail=SHOWN_PER_DEPLOYMENT)
# The clock a request's ages (``2h``) are read against on each deployment: any queue name does.
CLOCK_QUEUE: Final = "emq"
# Searches sleep between steps (the duty cycle): they get threads of their own, so the totals never wait behind them.
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="emq-fan-out-search")


@dataclass(frozen=True)
class DeploymentSearch:
    """What one deployment's search found within its budget."""

    matched: int
    queues_total: int  # the queues the request names on this deployment
    queues_searched: int  # of them, those searched to their end
    matches: list[Match] = field(default_factory=list)  # the first SHOWN_PER_DEPLOYMENT, masked for the reader
    # Why ``matched`` is only a floor (the budget spent, queues not searched or unreadable); none when it is exact.
    short_of: tuple[str, ...] = ()
    refused: str = ""  # why nothing was searched here ("" when it was)

    @property
    def complete(self) -> bool:
        return not self.short_of and not self.refused

    def describe(self) -> str:
        """The count in words: exact ("12 matches in 3 queues") or a floor, saying why and how far it got."""
        if self.refused:
            return f"not searched: {self.refused}"
        if self.complete:
            return f"{_matches(self.matched)} in {_queues(self.queues_total)}"
        return (f"at least {_matches(self.matched)}: {'; '.join(self.short_of)} "
                f"(searched {self.queues_searched} of {_queues(self.queues_total)})")


def _matches(count: int) -> str:
    return f"{count} match" if count == 1 else f"{count} matches"


def _queues(count: int) -> str:
    return f"{count} queue" if count == 1 else f"{count} queues"


@dataclass(frozen=True)
class EverySearch:
    """A search over every deployment: each one's answer, and the sentences naming those that did not answer
    (``missing``) and those whose count is a floor or that refused it (``partial``)."""

    request: SearchRequest
    budget_s: float
    answers: list[Answer[DeploymentSearch]]
    missing: list[str]
    partial: list[str]


def readers_on(user: Any, deployments: Sequence[Deployment]) -> dict[str, Reader]:
    """The reader ``user`` is on each deployment (who may unmask depends on the deployment's act grants)."""
    readers = {}
    for deployment in deployments:
        token = use(deployment)
        try:
            readers[deployment.name] = reader_for(user)
        finally:
            forget(token)
    return readers


def deployment_search(form: Mapping[str, str], reader: Reader, *, budget_s: float) -> Callable[[EchoMQ], DeploymentSearch]:
    """The read that searches one deployment: its ages read against its clock, its masks from its Redis, its steps
    run until the search finishes or ``budget_s`` is spent (one step at least, so a count always comes back)."""

    def run(mq: EchoMQ) -> DeploymentSearch:
        deadline = time.monotonic() + budget_s
        try:
            request = SearchRequest.parse(form, now_ms=mq.server_time_ms(CLOCK_QUEUE))
        except InvalidInput as error:
            return DeploymentSearch(0, 0, 0, refused=str(error))
        # The queue list read last, when the registry cannot be read now (its master down): said, as a floor.
        stale = ""
        if request.queue:
            names = [request.queue]
        else:
            known = mq.known_queues()
            names, stale = request.queues(known.names), known.stale
        if not names:
            return DeploymentSearch(0, 0, 0, short_of=(stale,) if stale else ())
        maskers = maskers_read(mq, reader, names[:LIMITS.max_queues])
        problem = search_problem(request.query, maskers)
        if problem:
            return DeploymentSearch(0, len(names), 0, refused=problem)
        keep = masked_text_keeper(request.query, maskers)
        bounds = console_limits(replace(LIMITS, step_entries=settings.EMQ_SEARCH_STEP_ENTRIES), checked=keep is not None)
        engine = Search(request.query, names, bounds, pacer=process_pacer(), keep=keep)
        shown: list[Match] = []
        short_of = [stale] if stale else []
        steps = 0

        def spent() -> bool:
            return steps > 0 and time.monotonic() >= deadline

        try:
            for step in engine.steps(mq, should_stop=spent):
                steps += 1
                shown.extend(step.matches[:SHOWN_PER_DEPLOYMENT - len(shown)])
        except Unavailable:
            raise
        except EmqError as error:  # the one queue searched cannot be (its key of another type)
            short_of.append(f"{request.queue} could not be searched: {error}")
        if not engine.finished:
            engine.stop(f"the search did not finish within {budget_s:g} s")
        return DeploymentSearch(engine.matched, len(names), sum(p.done and not p.error for p in engine.progress),
                                masked_matches(shown, maskers), tuple(short_of + _short_of(engine)))

    return run


def _short_of(engine: Search) -> list[str]:
    notes = [engine.stopped] if engine.stopped else []
    if engine.skipped_queues:
        notes.append(f"{engine.skipped_queues} more queues not searched (at most {engine.limits.max_queues})")
    failed = [p for p in engine.progress if p.error]
    if failed:
        notes.append(f"{len(failed)} queues could not be read ({failed[0].queue}: {failed[0].error})"[:300])
    unreadable = sum(p.unreadable for p in engine.progress)
    if unreadable:
        notes.append(f"{unreadable} payloads could not be read (over 1 MiB; for a field filter, not JSON or over "
                     "64 KiB)")
    return notes


def search_every_deployment(deployments: Sequence[Deployment], form: Mapping[str, str], *, readers: Mapping[str, Reader],
                            user_key: object) -> EverySearch:
    """Runs the search ``form`` describes on ``deployments`` at once, each within EMQ_DEPLOYMENT_SEARCH_BUDGET_S.

    Raises InvalidInput for a request that is not one (nothing runs), and SearchBusy when the person or the process
    runs as many searches as it may (nothing runs).
    """
    request = SearchRequest.parse(form, now_ms=int(time.time() * 1000))
    budget_s = float(settings.EMQ_DEPLOYMENT_SEARCH_BUDGET_S)
    # A deployment that stalls is named once its search's budget and one read's more have passed.
    wait_s = budget_s + float(settings.EMQ_DEPLOYMENT_BUDGET_S)
    try:
        SLOTS.take(user_key)
    except SearchBusy as busy:
        raise SearchBusy(f"not searched now: {busy}; try again when one of them ends") from None
    try:
        answers = fan_out_each(deployments, lambda d: deployment_search(form, readers[d.name], budget_s=budget_s),
                               budget_s=wait_s, pool=_pool)
    finally:
        SLOTS.give(user_key)
    missing = [answer.error for answer in answers if not answer.answered]
    partial = [f"{answer.deployment.name}: {answer.value.describe()}"[:500] for answer in answers
               if answer.value is not None and not answer.value.complete]
    return EverySearch(request, budget_s, answers, missing, partial)


__all__ = ["DeploymentSearch", "EverySearch", "SHOWN_PER_DEPLOYMENT", "readers_on", "search_every_deployment",
           "SearchBusy"]
