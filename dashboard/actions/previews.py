"""What a destructive or large action would do now, in words, before the operator confirms it.

Each preview names the action, the queue and how many jobs it touches now,
and carries the :class:`Proposal` its confirmation is bound to. Counts are
read with one bounded script (O(log N)), never by walking the jobs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from dashboard.services import emq
from dashboard.templatetags.console import duration
from queues import STATES, InvalidInput, validate_job_id, validate_queue_name
from queues.keys import ABSENT_STATE, job_id_token, validate_new_job_id
from queues.operator_moves import BY_NAME, JOB_MOVES, job_move
from queues.reads import count_older_as_of
from queues.redaction import DEFAULT_NAMES, config as redaction_config, parse_masked_paths
from queues.search import Query, check_match_move
from queues.visible import visible

from .bulk import QUEUE_ACTIONS, Selected
from .confirmations import Proposal
from .models import AuditEntry

# More ticked jobs than this is a large action: it asks first, whatever the move.
LARGE_SELECTION: Final = 20
# How many ticked ids a confirmation lists before "and N more".
LISTED: Final = 10
AGES: Final = {3_600_000: "1 hour", 86_400_000: "1 day", 604_800_000: "7 days"}


@dataclass(frozen=True)
class Preview:
    proposal: Proposal
    count: int
    lead: str
    tail: str
    warning: str
    button: str
    keep: str
    jobs: tuple[str, ...] = ()
    # Set when there is nothing to confirm (no job matches now): said instead of asking.
    nothing: str = ""
    # The server time the count was read at: a queue-wide run acts on no job that arrived after it.
    as_of_ms: int | None = None

    @property
    def more(self) -> int:
        return max(0, len(self.proposal.parameters.get("jobs", ())) - len(self.jobs))


def _jobs(n: int) -> str:
    return f"{n} job" if n == 1 else f"{n} jobs"


def job_needs_confirmation(move: str, shown_state: str) -> bool:
    """As the table says: delete always asks; cancel asks when it would stop a running job."""
    row = BY_NAME.get(move)
    return row is not None and row.scope == "job" and row.asks_for(shown_state)


def selection_needs_confirmation(move: str, count: int) -> bool:
    row = BY_NAME.get(move)
    return (row is not None and bool(row.asks_first)) or count > LARGE_SELECTION


def job_proposal(*, move: str, queue: str, job_id: str, expect_state: str, expect_attempts: str) -> Proposal:
    return Proposal(move, validate_queue_name(queue), AuditEntry.Scope.JOB,
                    {"id": job_id_token(validate_job_id(job_id)), "state": expect_state, "attempts": expect_attempts})


def queue_proposal(*, action: str, queue: str, older_than_ms: int) -> Proposal:
    if action not in QUEUE_ACTIONS:
        raise InvalidInput(f"unknown queue action {action!r}")
    parameters = {"older_than_ms": older_than_ms} if action.startswith("purge") else {}
    return Proposal(action, validate_queue_name(queue), AuditEntry.Scope.QUEUE, parameters)


def selection_proposal(*, move: str, queue: str, selected: list[Selected]) -> Proposal:
    if not selected:
        raise InvalidInput("no jobs were ticked")
    texts = [s.text for s in selected]
    return Proposal(move, validate_queue_name(queue), AuditEntry.Scope.SELECTION, {"jobs": texts})


def job_preview(*, move: str, queue: str, job_id: str, expect_state: str, expect_attempts: str) -> Preview:
    proposal = job_proposal(move=move, queue=queue, job_id=job_id, expect_state=expect_state,
                            expect_attempts=expect_attempts)
    state = "no state" if expect_state in ("", ABSENT_STATE) else expect_state
    shown = f"({state}, attempts {expect_attempts or '0'})"
    question, warning, yes, keep = job_move(move).ask_one
    return Preview(proposal, 1, question.format(job=visible(job_id, backslashes=False), shown=shown), "?", warning,
                   yes, keep)


def clone_proposal(*, queue: str, job_id: str, expect_state: str, expect_attempts: str, new_id: str,
                   payload: bytes | None, delay_ms: int, max_attempts: str) -> Proposal:
    """A clone exactly as it would run: the payload by its digest (the confirmation is bound to those bytes)."""
    digest = "the source's" if payload is None else hashlib.sha256(payload).hexdigest()
    return Proposal("clone", validate_queue_name(queue), AuditEntry.Scope.JOB,
                    {"id": job_id_token(validate_job_id(job_id)), "state": expect_state, "attempts": expect_attempts,
                     "new_id": job_id_token(validate_new_job_id(new_id)), "payload": digest, "delay_ms": delay_ms,
                     "max_attempts": max_attempts})


def clone_preview(*, queue: str, job_id: str, expect_state: str, expect_attempts: str, new_id: str,
                  payload: bytes | None, delay_ms: int, max_attempts: str) -> Preview:
    """What the clone does, in words: the new id, when it falls due, which payload and how many attempts."""
    proposal = clone_proposal(queue=queue, job_id=job_id, expect_state=expect_state, expect_attempts=expect_attempts,
                              new_id=new_id, payload=payload, delay_ms=delay_ms, max_attempts=max_attempts)
    question, warning, yes, keep = job_move("clone").ask_one
    shown = f"({expect_state}, attempts {expect_attempts or '0'})"
    what = (f"the same payload bytes as job {visible(job_id, backslashes=False)}" if payload is None
            else f"the payload you edited ({len(payload)} bytes)")
    due = "due now" if not delay_ms else f"due in {duration(delay_ms)}"
    tries = f"max attempts {max_attempts}" if max_attempts else "the same max attempts"
    text = (f"New job {visible(new_id, backslashes=False)} is enqueued, {due}, with {what} and {tries}; its handler "
            "runs it as any job. The job cloned stays as it is.")
    return Preview(proposal, 1, question.format(job=visible(job_id, backslashes=False), shown=shown), "?", text,
                   yes, keep)


def selection_preview(*, move: str, queue: str, selected: list[Selected]) -> Preview:
    proposal = selection_proposal(move=move, queue=queue, selected=selected)
    n = len(selected)
    row = job_move(move)
    verb, warning = row.verb, row.warning or "Each moves only if it is still as the page showed it."
    return Preview(proposal, n, f"{verb} {_jobs(n)} ticked in", "?",
                   warning + " A ticked job that has moved on since is skipped.",
                   f"Yes, {verb.lower()} {_jobs(n)}", "Keep them",
                   tuple(visible(s.id, backslashes=False) for s in selected[:LISTED]))


def age_text(older_than_ms: int) -> str:
    return AGES.get(older_than_ms) or duration(older_than_ms)


def queue_preview(*, action: str, queue: str, older_than_ms: int) -> Preview:
    """Reads how many jobs the queue-wide action would touch now (one script)."""
    proposal = queue_proposal(action=action, queue=queue, older_than_ms=older_than_ms)
    mq = emq()
    if action == "recover_all":
        stats = mq.stats(proposal.queue)
        n = stats.lapsed
        noun = "lapsed lease" if n == 1 else "lapsed leases"
        return Preview(proposal, n, f"Recover {n} {noun} of", "?",
                       "Each job goes back to pending, due now; a worker that still runs one is refused when it "
                       "reports.", f"Yes, recover {_jobs(n)}", "Keep them",
                       nothing="" if n else f"No lease of {proposal.queue} has lapsed now: nothing to recover.",
                       as_of_ms=stats.now_ms)
    if action == "retry_all":
        stats = mq.stats(proposal.queue)
        n = stats.counts["failed"]
        return Preview(proposal, n, f"Retry {n} failed {'job' if n == 1 else 'jobs'} of", "?",
                       "Each goes back to pending, due now, with one more attempt.", f"Yes, retry {_jobs(n)}",
                       "Keep them", nothing="" if n else f"{proposal.queue} has no failed job now: nothing to retry.",
                       as_of_ms=stats.now_ms)
    state = QUEUE_ACTIONS[action]
    counted = mq.run(count_older_as_of(proposal.queue, state, older_than_ms))
    n = counted.count
    age = f" older than {age_text(older_than_ms)}" if older_than_ms else ", of any age"
    return Preview(proposal, n, f"Purge {n} {state} {'job' if n == 1 else 'jobs'} of", f"{age}?",
                   "This cannot be undone: purged jobs are deleted.", f"Yes, purge {_jobs(n)}", "Keep them",
                   nothing="" if n else f"{proposal.queue} has no {state} job{age}: nothing to purge.",
                   as_of_ms=counted.now_ms)


def grown(preview: Preview, confirmed: int) -> Preview:
    """The confirmation step again, saying that the count grew since the operator was asked."""
    return replace(preview, warning=f"More jobs are there now than when you were asked ({preview.count}, not "
                                    f"{confirmed}): nothing was done, confirm again. " + preview.warning)


_SEARCH_VERBS: Final = {move.name: move.verb for move in JOB_MOVES if move.over_search}
_SEARCH_WARNINGS: Final = {move.name: move.warning for move in JOB_MOVES if move.warning}


def search_proposal(*, move: str, queue: str, query: Query, at_most: int) -> Proposal:
    check_match_move(move, query.state)
    return Proposal(move, validate_queue_name(queue), AuditEntry.Scope.SEARCH,
                    {"query": query.as_dict(), "at_most": at_most})


def search_preview(*, move: str, queue: str, query: Query, count: int, counted: str) -> Preview:
    """Acting on what a search found: the query in words and how many it matched (``counted`` says when)."""
    proposal = search_proposal(move=move, queue=queue, query=query, at_most=max(count, 1))
    verb, warning = _SEARCH_VERBS[move], _SEARCH_WARNINGS.get(move, "")
    return Preview(proposal, count, f"{verb} the {_jobs(count)} {counted}: {query.describe()}, in", "?",
                   (warning + " " if warning else "") + "Each moves only if it is still as the search finds it; "
                   f"one that moved on is skipped. At most {_jobs(count)} move, even if more match by then.",
                   f"Yes, {verb.lower()} {_jobs(count)}", "Keep them",
                   nothing="" if count else f"No job matches {query.describe()} in {queue} now: nothing to do.")


def search_many_proposal(*, move: str, query: Query, counts: Mapping[str, int]) -> Proposal:
    check_match_move(move, query.state)
    return Proposal(move, "", AuditEntry.Scope.SEARCH,
                    {"query": query.as_dict(), "counts": {validate_queue_name(q): n for q, n in counts.items()}})


def search_many_preview(*, move: str, query: Query, counts: Mapping[str, int], counted: str) -> Preview:
    """Acting on what a search of many queues found: the query, the total, and each queue with its count."""
    held = {queue: count for queue, count in counts.items() if count}
    total = sum(held.values())
    proposal = search_many_proposal(move=move, query=query, counts=held)
    verb, warning = _SEARCH_VERBS[move], _SEARCH_WARNINGS.get(move, "")
    listed = ", ".join(f"{queue} {count}" for queue, count in list(held.items())[:LISTED])
    more = f" and {len(held) - LISTED} more" if len(held) > LISTED else ""
    where = f"{len(held)} queue{'' if len(held) == 1 else 's'}"
    return Preview(proposal, total, f"{verb} the {_jobs(total)} {counted}: {query.describe()}, in", f" {where} "
                   f"({listed}{more})?",
                   (warning + " " if warning else "") + "Each moves only if it is still as the search finds it; "
                   "one that moved on is skipped. Each queue moves at most as many as it matched here, even if "
                   "more match by then.",
                   f"Yes, {verb.lower()} {_jobs(total)}", "Keep them",
                   nothing="" if total else f"No job matches {query.describe()} in these queues now: nothing to do.")


def remove_key_proposal(*, queue: str, which: str, seen_type: str) -> Proposal:
    if which not in STATES:
        raise InvalidInput(f"unknown set {which!r}: a queue's state sets are {', '.join(STATES)}")
    if seen_type in ("", "zset", "none") or not seen_type.isalpha():
        raise InvalidInput(f"the type shown must be a Redis type other than zset, not {seen_type!r}")
    return Proposal("remove_key", validate_queue_name(queue), AuditEntry.Scope.QUEUE, {"set": which, "type": seen_type})


def remove_key_preview(*, queue: str, which: str, seen_type: str) -> Preview:
    """Removing a state set of another type: what goes (the key, whatever it holds), read from the page's refusal."""
    proposal = remove_key_proposal(queue=queue, which=which, seen_type=seen_type)
    return Preview(proposal, 1, f"Remove the {which} set (it holds a {seen_type}, not a sorted set) of", "?",
                   BY_NAME["remove_key"].warning + " It is removed only if it still holds a " + seen_type + ".",
                   "Yes, remove the key", "Keep it")


def pause_proposal(*, move: str, queue: str, reason: str) -> Proposal:
    if move not in ("pause", "resume"):
        raise InvalidInput(f"unknown action {move!r}")
    return Proposal(move, validate_queue_name(queue), AuditEntry.Scope.QUEUE, {"reason": reason} if move == "pause" else {})


def pause_preview(*, move: str, queue: str, reason: str) -> Preview:
    """What pausing or resuming does now: how many jobs are due, and how many run."""
    proposal = pause_proposal(move=move, queue=queue, reason=reason)
    stats = emq().stats(proposal.queue)
    active = stats.counts["active"]
    if move == "pause":
        if stats.paused:
            return Preview(proposal, 0, "Pause", "?", "", "", "Keep it",
                           nothing=f"{proposal.queue} is paused already (by {stats.paused_by or 'someone'}).")
        return Preview(proposal, stats.due, "Pause queue", f"? Workers claim none of its {_jobs(stats.due)} due now "
                       "until it is resumed.", f"The {_jobs(active)} running now finish; new jobs wait in pending.",
                       "Yes, pause it", "Keep it running")
    if not stats.paused:
        return Preview(proposal, 0, "Resume", "?", "", "", "Keep it", nothing=f"{proposal.queue} is not paused.")
    return Preview(proposal, stats.due, "Resume queue", f"? Workers start on its {_jobs(stats.due)} due now.",
                   f"It was paused by {stats.paused_by or 'someone'}"
                   + (f": {stats.paused_reason}" if stats.paused_reason else "."),
                   "Yes, resume it", "Keep it paused")


def redaction_proposal(*, queue: str, paths: str, mask_all: bool) -> Proposal:
    """Setting a queue's masked payload paths (one a line; checked here, in words) and whether for everyone."""
    parsed = [p.text for p in parse_masked_paths(paths)]
    return Proposal("redaction_set", validate_queue_name(queue), AuditEntry.Scope.QUEUE,
                    {"paths": parsed, "mask_all": bool(mask_all)})


def redaction_preview(*, queue: str, paths: str, mask_all: bool) -> Preview:
    """What setting the masked paths changes: who sees which values from now on, beside what is set now."""
    proposal = redaction_proposal(queue=queue, paths=paths, mask_all=mask_all)
    wanted: list[str] = list(proposal.parameters["paths"])
    now = emq().run(redaction_config(proposal.queue))
    if [p.text for p in now.paths] == wanted and now.mask_all == mask_all and not now.odd:
        return Preview(proposal, 0, "Set the masked paths of", "?", "", "", "Keep them",
                       nothing=f"{proposal.queue} masks exactly these paths already.")
    who = "everyone, operators too," if mask_all else "viewers (operators see them)"
    own = f"the values at {', '.join(wanted)} and at " if wanted else "the values at "
    return Preview(proposal, 1, "Mask payload values of",
                   f"? From now on {who} are shown {own}the default names ({', '.join(sorted(DEFAULT_NAMES))}) "
                   "masked, on every page, search, download and API answer.",
                   ("Text that is not JSON is withheld from them too." if wanted or mask_all else
                    "Only the default names stay masked.") + (f" Now: {now.odd}" if now.odd else ""),
                   "Yes, set them", "Keep them as they are")
