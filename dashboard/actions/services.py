"""Operator actions: check who may act, make the move with the queues library, record it.

Views parse the request and call one function here. Single-job actions run
at once (one script); bulk actions are checked here and handed to the runner.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import PermissionDenied
from django.utils import timezone

from dashboard.search.budget import SLOTS, console_limits, process_pacer
from dashboard.services import emq
from queues import InvalidInput, Refused, Unavailable, moves as queue_moves
from queues.deploys import deploy_mark
from queues.failures import groups
from queues.keys import ABSENT_STATE, job_id_token
from queues.operator_moves import BY_NAME
from queues.payload_versions import payload_problems, schema, schema_set
from queues.redaction import config_set as redaction_set, parse_masked_paths
from queues.search import Limits, Query, Search
from queues.visible import visible

from . import access, runner
from .audit import record_refused as record_refused  # the views record refusals through here
from .bulk import DEFAULT_LIMIT, QUEUE_ACTIONS, Selected, queue_steps, search_steps, search_steps_many, selection_steps
from .models import AuditEntry, bounded


def actor_for(user: Any) -> str:
    """How the queue's event stream names the mover: a job's history then says which operator it was."""
    return f"console:{user.get_username()}"


def record_forbidden(*, user: Any, data: Any, reason: str, run_id: int | None = None) -> AuditEntry | None:
    """Writes a refusal by role into the log: who tried which action on which queue, and why not."""
    return record_refused(user=user, data=data, result=f"forbidden: {reason}", run_id=run_id)


def check_access(*, user: Any, action: str, queue: str) -> None:
    """Raises PermissionDenied, saying why, unless ``user`` may do ``action`` (a move, an audit action) on ``queue``."""
    reason = access.refusal(user, action, queue)
    if reason is not None:
        raise PermissionDenied(reason)


def job_act(*, user: Any, move: str, queue: str, job_id: str, expect_state: str, expect_attempts: str) -> AuditEntry:
    """One compare-and-move on one job, as the page showed it; the audit row carries the outcome.

    Raises PermissionDenied or InvalidInput (nothing done, nothing recorded).
    """
    check_access(user=user, action=move, queue=queue)
    row = BY_NAME.get(move)
    if row is None or row.scope != "job":
        raise InvalidInput(f"unknown action {move!r}")
    if not row.on_button:
        raise InvalidInput(f"{move} takes more than a button sends: use its form on the job page")
    if not expect_state:
        raise InvalidInput(f"the state the page showed is required ({ABSENT_STATE} for a job without one)")
    call = queue_moves.operator_move(move, queue, job_id, expect_state=expect_state, expect_attempts=expect_attempts,
                                     actor=actor_for(user))
    # The row keeps the id as a link names it (an id that is not UTF-8 as {HEX}), and its text escaped.
    seen = {"id": job_id_token(job_id), "state": expect_state, "attempts": expect_attempts}
    try:
        result = emq().run(call)
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    else:
        outcome, text = AuditEntry.Outcome.MOVED, result.describe()
    text = visible(text, backslashes=False)
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=move, scope=AuditEntry.Scope.JOB, jobs=[seen],
        outcome=outcome, result=text, moved=int(outcome == AuditEntry.Outcome.MOVED), finished_at=now, updated_at=now)


def key_remove(*, user: Any, queue: str, which: str, seen_type: str) -> AuditEntry:
    """Deletes the ``which`` state set of ``queue`` if it still holds ``seen_type`` (another type than a sorted
    set: another writer's), as one script that checks the type first; the audit row says what happened.

    Raises PermissionDenied or InvalidInput (nothing done, nothing recorded).
    """
    check_access(user=user, action="remove_key", queue=queue)
    call = queue_moves.remove_key(queue, which, seen_type=seen_type, actor=actor_for(user))
    try:
        result = emq().run(call)
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    else:
        outcome, text = AuditEntry.Outcome.MOVED, result.describe()
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action="remove_key", scope=AuditEntry.Scope.QUEUE,
        jobs=[], parameters={"set": which, "type": seen_type}, outcome=outcome, result=visible(text, backslashes=False),
        finished_at=now, updated_at=now)


def _schema_refusal(queue: str, payload: bytes) -> str:
    """Why ``payload`` may not be written into ``queue`` (its JSON Schema, when it has one), or ''."""
    found = emq().run(schema(queue))
    problems = payload_problems(found.text, payload) if found.is_set else []
    if not problems:
        return ""
    return (f"refused: the payload does not match the JSON Schema of {queue}, so nothing was written: "
            + "; ".join(problems))


def job_edit(*, user: Any, queue: str, job_id: str, expect_state: str, expect_attempts: str, payload: bytes,
             max_attempts: str = "", retry: bool = False) -> AuditEntry:
    """Changes a pending or failed job's payload (and max attempts), retrying it when asked, as the page
    showed it: checked against the queue's JSON Schema first (a mismatch is refused in words, nothing
    written), then one compare-and-move script that keeps the old payload as a version.

    The audit row holds the payload's length, never its bytes. Raises PermissionDenied or InvalidInput.
    """
    check_access(user=user, action="edit", queue=queue)
    seen = {"id": job_id_token(job_id), "state": expect_state, "attempts": expect_attempts}
    parameters: dict[str, object] = {"payload_bytes": len(payload), "retry": retry}
    if max_attempts:
        parameters["max_attempts"] = max_attempts
    call = queue_moves.operator_move("edit", queue, job_id, expect_state=expect_state, expect_attempts=expect_attempts,
                                     actor=actor_for(user), arguments={"payload": payload, "max_attempts": max_attempts,
                                                                       "retry": retry})
    try:
        problems = _schema_refusal(queue, payload)
        if problems:
            outcome, text = AuditEntry.Outcome.REFUSED, problems
        else:
            result = emq().run(call)
            outcome, text = AuditEntry.Outcome.MOVED, result.describe()
            if result.version:
                parameters["kept_version"] = int(result.version)
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    return _job_entry(user, "edit", queue, seen, parameters, outcome, text)


def job_restore(*, user: Any, queue: str, job_id: str, expect_state: str, expect_attempts: str,
                version: int) -> AuditEntry:
    """Restores a kept version of a pending or failed job's payload, byte for byte (one compare-and-move
    script; the payload it replaces is kept in turn). Raises PermissionDenied or InvalidInput."""
    check_access(user=user, action="restore", queue=queue)
    seen = {"id": job_id_token(job_id), "state": expect_state, "attempts": expect_attempts}
    parameters: dict[str, object] = {"version": version}
    call = queue_moves.operator_move("restore", queue, job_id, expect_state=expect_state,
                                     expect_attempts=expect_attempts, actor=actor_for(user),
                                     arguments={"version": version})
    try:
        result = emq().run(call)
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    else:
        outcome = AuditEntry.Outcome.MOVED
        text = result.describe().replace("restored:", f"restored version {version}:", 1)
        parameters["kept_version"] = int(result.version)
    return _job_entry(user, "restore", queue, seen, parameters, outcome, text)


def job_clone(*, user: Any, queue: str, job_id: str, expect_state: str, expect_attempts: str, new_id: str,
              payload: bytes | None, delay_ms: int = 0, max_attempts: str = "") -> AuditEntry:
    """A new job ``new_id`` in ``queue`` made from the job as the page showed it, with its payload (``payload``
    None) or an edited one, checked against the queue's JSON Schema first as an edit is; one script that writes
    nothing when the source moved on or the id is taken. The audit row names the new id and the payload's
    length, never its bytes. Raises PermissionDenied or InvalidInput (nothing done, nothing recorded)."""
    check_access(user=user, action="clone", queue=queue)
    seen = {"id": job_id_token(job_id), "state": expect_state, "attempts": expect_attempts}
    arguments: dict[str, object] = {"new_id": new_id, "delay_ms": delay_ms, "max_attempts": max_attempts}
    if payload is not None:
        arguments["new_payload"] = payload
    call = queue_moves.operator_move("clone", queue, job_id, expect_state=expect_state,
                                     expect_attempts=expect_attempts, actor=actor_for(user), arguments=arguments)
    parameters: dict[str, object] = {"new_id": job_id_token(new_id), "delay_ms": delay_ms,
                                     "payload": "the source's" if payload is None else f"edited, {len(payload)} bytes"}
    if max_attempts:
        parameters["max_attempts"] = max_attempts
    try:
        problems = _schema_refusal(queue, payload) if payload is not None else ""
        if problems:
            outcome, text = AuditEntry.Outcome.REFUSED, problems
        else:
            result = emq().run(call)
            outcome, text = AuditEntry.Outcome.MOVED, result.describe()
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    return _job_entry(user, "clone", queue, seen, parameters, outcome, visible(text, backslashes=False))


def queue_schema_set(*, user: Any, queue: str, text: str) -> AuditEntry:
    """Sets (or with an empty text removes) the JSON Schema edits of ``queue`` are checked against, as an
    audit row that keeps the schema's digest and length. Raises PermissionDenied or InvalidInput (not a
    JSON Schema, said in words; nothing written)."""
    check_access(user=user, action=AuditEntry.Action.SCHEMA_SET, queue=queue)
    call = schema_set(queue, text, actor=actor_for(user))
    text = text.strip()
    parameters = {"schema_bytes": len(text.encode()), "sha256": hashlib.sha256(text.encode()).hexdigest()}
    try:
        change = emq().run(call)
    except Refused as refusal:
        outcome, result = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, result = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    else:
        outcome = AuditEntry.Outcome.MOVED
        result = (f"removed the JSON Schema of {queue}: edits are no longer checked" if not text else
                  f"{'replaced' if change.previous else 'set'} the JSON Schema of {queue} ({len(text.encode())} "
                  "bytes): every edit of its payloads is checked against it")
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=AuditEntry.Action.SCHEMA_SET,
        scope=AuditEntry.Scope.QUEUE, jobs=[], parameters=parameters, outcome=outcome, result=result,
        finished_at=now, updated_at=now)


def queue_redaction_set(*, user: Any, queue: str, paths: str, mask_all: bool) -> AuditEntry:
    """Sets a queue's masked payload paths (one a line) and whether they are masked for everyone (none and
    False: the queue's own redaction is removed), as an audit row that names them. Raises PermissionDenied or
    InvalidInput (a path that does not read, said in words; nothing written)."""
    check_access(user=user, action="redaction_set", queue=queue)
    call = redaction_set(queue, paths, mask_all=mask_all, actor=actor_for(user))
    parsed = [p.text for p in parse_masked_paths(paths)]
    parameters: dict[str, object] = {"paths": parsed, "mask_all": mask_all}
    try:
        emq().run(call)
    except Refused as refusal:
        outcome, result = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, result = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    else:
        outcome = AuditEntry.Outcome.MOVED
        who = "everyone" if mask_all else "viewers"
        result = (f"{queue} masks {len(parsed)} path{'s' if len(parsed) != 1 else ''} of its own for {who}: "
                  f"{', '.join(parsed)}" if parsed else
                  f"{queue} masks the default names for {who}" if mask_all else
                  f"removed the masked paths of {queue}: only the default names are masked, for viewers")
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=AuditEntry.Action.REDACTION_SET,
        scope=AuditEntry.Scope.QUEUE, jobs=[], parameters=parameters, outcome=outcome, result=bounded(result),
        finished_at=now, updated_at=now)


def _job_entry(user: Any, action: str, queue: str, seen: dict[str, str], parameters: dict[str, object],
               outcome: str, text: str) -> AuditEntry:
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=action, scope=AuditEntry.Scope.JOB, jobs=[seen],
        parameters=parameters, outcome=outcome, result=bounded(text),
        moved=int(outcome == AuditEntry.Outcome.MOVED), finished_at=now, updated_at=now)


def queue_act(*, user: Any, action: str, queue: str, older_than_ms: int = 0,
              limit: int = DEFAULT_LIMIT, at_most: int | None = None, as_of_ms: int | None = None) -> AuditEntry:
    """Starts a queue-wide action in the background; returns its (running) audit row.

    ``at_most`` and ``as_of_ms`` are what its confirmation counted and when: the run acts on no more.
    """
    check_access(user=user, action=action, queue=queue)
    steps = queue_steps(emq(), action, queue, older_than_ms=older_than_ms, limit=limit, actor=actor_for(user),
                        at_most=at_most, as_of_ms=as_of_ms)
    parameters: dict[str, object] = {"from_state": QUEUE_ACTIONS[action], "limit": limit}
    if action.startswith("purge"):
        parameters["older_than_ms"] = older_than_ms
    if at_most is not None:
        parameters["at_most"] = at_most
    if as_of_ms is not None:
        parameters["as_of_ms"] = as_of_ms
    return _start(user, action, queue, AuditEntry.Scope.QUEUE, [], parameters, steps)


def queue_pause_or_resume(*, user: Any, move: str, queue: str, reason: str = "") -> AuditEntry:
    """Pauses or resumes claims from ``queue`` (one script); the audit row says what happened, and why."""
    check_access(user=user, action=move, queue=queue)
    if move == "pause":
        call = queue_moves.pause(queue, reason=reason, actor=actor_for(user))
    elif move == "resume":
        call = queue_moves.resume(queue, actor=actor_for(user))
    else:
        raise InvalidInput(f"unknown action {move!r}")
    parameters = {"reason": reason} if move == "pause" else {}
    try:
        result = emq().run(call)
    except Refused as refusal:
        outcome, text = AuditEntry.Outcome.REFUSED, refusal.describe()
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether it ran: {error}"
    else:
        outcome = AuditEntry.Outcome.MOVED if result.changed else AuditEntry.Outcome.REFUSED
        text = result.describe()
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=move, scope=AuditEntry.Scope.QUEUE, jobs=[],
        parameters=parameters, outcome=outcome, result=text, finished_at=now, updated_at=now)


def selection_act(*, user: Any, move: str, queue: str, selected: list[Selected]) -> AuditEntry:
    """Starts a compare-and-move on exactly the ticked jobs in the background."""
    check_access(user=user, action=move, queue=queue)
    steps = selection_steps(emq(), move, queue, selected, actor=actor_for(user))
    jobs = [{"id": s.id, "state": s.state, "attempts": s.attempts} for s in selected]
    return _start(user, move, queue, AuditEntry.Scope.SELECTION, jobs, {}, steps)


SEARCH_COUNT_S = 5.0


def search_count(*, user: Any, queue: str, query: Query) -> tuple[int, str]:
    """How many jobs of ``queue`` the query matches now, and how that was found (the confirmation says it): a
    failure group alone is read (the moves keep its count); anything else is counted, at most
    :data:`SEARCH_COUNT_S` of searching, within the user's and the process's search slots."""
    if query.group and replace(query, group="").is_empty:
        read = emq().run(groups(queue, group=query.group))
        if not read.groups:
            return 0, "in this failure group"
        return read.groups[0].count, f"in the failure group “{read.groups[0].signature}”"
    engine = Search(query, [queue], console_limits(Limits(max_queues=1, max_matches=None, seconds=SEARCH_COUNT_S,
                                                          detail=0)), pacer=process_pacer())
    with SLOTS.held(user.pk):
        for _ in engine.steps(emq()):
            pass
    if engine.stopped:
        return engine.matched, f"found in {SEARCH_COUNT_S:.0f} s of counting (more may match)"
    return engine.matched, "matching now"


def search_act(*, user: Any, move: str, queue: str, query: Query, at_most: int) -> AuditEntry:
    """Starts a compare-and-move on what a search of ``queue`` finds, at most ``at_most`` jobs (as confirmed)."""
    check_access(user=user, action=move, queue=queue)
    steps = search_steps(emq(), move, query, queue, at_most=at_most, actor=actor_for(user))
    parameters = {"query": query.as_dict(), "describe": query.describe(), "at_most": at_most}
    return _start(user, move, queue, AuditEntry.Scope.SEARCH, [], parameters, steps)


def search_act_many(*, user: Any, move: str, query: Query, counts: Mapping[str, int]) -> AuditEntry:
    """Starts one run over the queues a search of many matched in, each on at most its ``counts`` entry.

    One audit row holds the query and every queue's count (its queue field
    is empty: the row names many); the user must be allowed every queue.
    """
    for queue in counts:
        check_access(user=user, action=move, queue=queue)
    steps = search_steps_many(emq(), move, query, counts, actor=actor_for(user))
    parameters = {"query": query.as_dict(), "describe": query.describe(), "counts": dict(counts),
                  "at_most": sum(counts.values())}
    return _start(user, move, "", AuditEntry.Scope.SEARCH, [], parameters, steps)


def _start(user: Any, action: str, queue: str, scope: str, jobs: list[dict[str, str]], parameters: dict[str, object],
           steps: Any) -> AuditEntry:
    entry = AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=action, scope=scope, jobs=jobs,
        parameters=parameters, outcome=AuditEntry.Outcome.RUNNING, updated_at=timezone.now())
    runner.start(entry, steps)
    return entry


def run_cancel(*, user: Any, entry_id: int) -> AuditEntry:
    """Asks a running bulk action to stop after its current step (any console process may be running it)."""
    entry = AuditEntry.objects.get(pk=entry_id)
    if entry.scope == AuditEntry.Scope.JOB:
        raise InvalidInput("a single-job action cannot be cancelled")
    reason = access.entry_refusal(user, entry.action, entry.queues)
    if reason is not None:
        raise PermissionDenied(reason)
    if not entry.is_running:
        # Ended, or marked abandoned by the sweep (its process died): said, rather than a cancel that does nothing.
        raise InvalidInput(f"run {entry_id} is not running ({entry.get_outcome_display()}"
                           + (f": {entry.result}" if entry.result else "") + "): there is nothing to cancel")
    AuditEntry.objects.filter(pk=entry_id, cancel_requested_by="").update(cancel_requested_by=user.get_username())
    runner.request_stop(entry_id)
    entry.refresh_from_db()
    return entry


def deploy_mark_act(*, user: Any, label: str, queue: str = "", at_ms: int | None = None) -> AuditEntry:
    """Marks a deploy of ``label`` (on every chart; one per label a minute), as an audit row. ``queue``: the page
    it was marked from (the mark itself is every queue's). Raises PermissionDenied for a viewer (not recorded
    here: the caller records refusals by role), InvalidInput for a bad label."""
    # The mark is every queue's: a grant on some queues does not allow it; an operator held to some queues
    # marks from their pages only.
    reason = access.refusal(user, AuditEntry.Action.MARK_DEPLOY) or (access.grant_refusal(user, queue) if queue else None)
    if reason is not None:
        raise PermissionDenied(reason)
    try:
        marked = emq().run(deploy_mark(label, at_ms=at_ms))
    except Unavailable as error:
        outcome, text = AuditEntry.Outcome.ERROR, f"not known whether the mark was written: {error}"
    else:
        outcome = AuditEntry.Outcome.MOVED if marked.new else AuditEntry.Outcome.FINISHED
        when = datetime.fromtimestamp(marked.at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        text = (f"marked the deploy of {label} at {when}" if marked.new
                else f"the deploy of {label} was marked in that minute already (at {when}): one mark")
    now = timezone.now()
    return AuditEntry.objects.create(
        user=user, username=user.get_username(), queue=queue, action=AuditEntry.Action.MARK_DEPLOY,
        scope=AuditEntry.Scope.QUEUE, jobs=[], parameters={"label": label}, outcome=outcome, result=text,
        finished_at=now, updated_at=now)
