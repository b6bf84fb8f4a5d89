"""Action views: POST only, CSRF-checked, operators only; each answers in place (htmx) or as a page."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Q
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from dashboard.deployments import current
from dashboard.http import HtmxHttpRequest
from dashboard.permissions import performs
from dashboard.search.budget import SLOTS, console_limits, process_pacer
from dashboard.search.requests import (
    SearchRequest,
    count_from_token,
    counts_from_token,
    parse_queue_counts,
    queue_counts_text,
    valid_run_token,
)
from dashboard.services import emq
from dashboard.viewing import viewers_only
from queues import InvalidInput, Unavailable
from queues.keys import job_id_token, parse_job_id_token
from queues.moves import MAX_DELAY_MS
from queues.operator_moves import BUTTON_MOVE_NAMES
from queues.search import MATCH_MOVES, Limits, Search, check_match_move

from . import access, previews, services
from .bulk import MAX_SELECTION, QUEUE_ACTIONS, RUN_ACTIONS, SELECTION_MOVES, Selected
from .confirmations import (
    MAX_AGE_S,
    ConfirmationRefused,
    Confirmed,
    Proposal,
    confirmation_issue,
    confirmation_redeem,
    typed_name_wanted,
)
from .models import AuditEntry, audit_actions
from .previews import Preview

View = Callable[..., HttpResponse]
AUDIT_PAGE_SIZE = 50


def _page_or_fragment(request: HtmxHttpRequest, fragment: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """htmx gets the fragment to put in place; a plain form post gets a page around it."""
    if request.htmx:
        return render(request, fragment, context, status=status)
    return render(request, "dashboard/actions/page.html", {**context, "fragment": fragment}, status=status)


def forbidden(request: HtmxHttpRequest, reason: str) -> HttpResponse:
    if request.method == "POST":
        run_id = request.resolver_match.kwargs.get("pk") if request.resolver_match else None
        services.record_forbidden(user=request.user, data=request.POST, reason=reason, run_id=run_id)
    return _page_or_fragment(request, "dashboard/actions/forbidden.html", {"reason": reason}, status=403)


def operators_only(view: View) -> View:
    """Anonymous: to the login page. Signed in without the right to act: a readable 403."""

    @wraps(view)
    def wrapper(request: HtmxHttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            if request.htmx:
                response = HttpResponse(status=401)
                response["HX-Redirect"] = redirect_to_login(request.headers.get("HX-Current-URL", reverse("overview"))).url
                return response
            return redirect_to_login(request.get_full_path())
        ticked = len(request.POST.getlist("job")) if request.method == "POST" else 0
        if ticked > MAX_SELECTION:
            # Refused for its size before anything else, so no row records it: nobody acts on this many at once.
            return _page_or_fragment(request, "dashboard/actions/result.html", {
                "kind": "error", "text": f"not done: at most {MAX_SELECTION} jobs can be ticked at once, not {ticked}"},
                status=400)
        reason = access.acting_refusal(request.user)
        if reason is not None:
            return forbidden(request, reason)
        try:
            return view(request, *args, **kwargs)
        except PermissionDenied as denied:
            return forbidden(request, str(denied))
        except InvalidInput as error:
            return _page_or_fragment(request, "dashboard/actions/result.html",
                                     {"kind": "error", "text": f"not done: {error}"}, status=400)
        except Unavailable as error:
            return _page_or_fragment(request, "dashboard/actions/result.html",
                                     {"kind": "error", "text": f"not done: {error}"}, status=503)

    return wrapper


# ASCII digits only: str.isdigit() and int() also take '²', '①' and '١٢٣'.
_MS = re.compile(r"[0-9]{1,14}")


def _ms(text: str, what: str) -> int:
    if not _MS.fullmatch(text.strip()):
        raise InvalidInput(f"{what} must be a whole number of milliseconds in ASCII digits (at most 14), not {text!r}")
    return int(text)


def _recorded(request: HtmxHttpRequest, entry: AuditEntry) -> HttpResponse:
    """What a one-script action did, as its audit row says it."""
    return _page_or_fragment(request, "dashboard/actions/result.html",
                             {"kind": entry.outcome, "text": entry.result, "entry": entry})


def _started(request: HtmxHttpRequest, entry: AuditEntry) -> HttpResponse:
    if request.htmx:
        return render(request, "dashboard/actions/run.html", {"entry": entry, "can_cancel": True})
    return HttpResponseRedirect(reverse("action_run", args=[entry.pk]))


def _back_url(request: HtmxHttpRequest, queue: str) -> str:
    """Where "Keep it" goes without JavaScript: the page the operator came from, or the queue."""
    for candidate in (request.htmx.current_url or "", request.headers.get("Referer", "")):
        if candidate and url_has_allowed_host_and_scheme(candidate, {request.get_host()}):
            return candidate
    return f"{reverse('queue')}?{urlencode({'q': queue})}"


def _ask(request: HtmxHttpRequest, asked: Preview, proposal: Proposal, fields: list[tuple[str, str]],
         target: str) -> HttpResponse:
    """The confirmation step: what the action does now, and a token bound to that count."""
    context = {"preview": asked, "fields": fields, "target": target, "post_url": request.path,
               "back_url": _back_url(request, proposal.queue), "max_age_minutes": MAX_AGE_S // 60,
               "typed_name": typed_name_wanted(proposal), "deployment": current(),
               "token": "" if asked.nothing else confirmation_issue(user=request.user, proposal=proposal,
                                                                   count=asked.count, as_of_ms=asked.as_of_ms)}
    return _page_or_fragment(request, "dashboard/actions/confirm.html", context)


def _confirmed(request: HtmxHttpRequest, preview: Callable[[], Preview], proposal: Proposal,
               fields: list[tuple[str, str]], target: str) -> HttpResponse | Confirmed:
    """What a valid confirmation of ``proposal`` in the POST said (it is now spent); else the answer to send.

    Without one, the answer is the confirmation step, which says what the
    action does now; with a forged, lapsed, replayed or another user's one,
    a refusal in words, written to the audit log.
    """
    token = request.POST.get("confirmation", "")
    if not token:
        return _ask(request, preview(), proposal, fields, target)
    try:
        return confirmation_redeem(user=request.user, token=token, proposal=proposal,
                                   typed=request.POST.get("typed_name", ""))
    except ConfirmationRefused as refusal:
        entry = services.record_refused(user=request.user, data=request.POST, result=f"refused: {refusal}")
        return _page_or_fragment(request, "dashboard/actions/result.html",
                                 {"kind": "refused", "text": f"refused: {refusal}", "entry": entry}, status=409)


@performs(*BUTTON_MOVE_NAMES, field="move")
@require_POST
@operators_only
def job_action(request: HtmxHttpRequest) -> HttpResponse:
    data = request.POST
    # An id that is not UTF-8 comes as {HEX} of its bytes (the id_token filter), and goes back so.
    fields = {"queue": data.get("q", ""), "job_id": parse_job_id_token(data.get("id", "")), "move": data.get("move", ""),
              "expect_state": data.get("state", ""), "expect_attempts": data.get("attempts", "")}
    if previews.job_needs_confirmation(fields["move"], fields["expect_state"]):
        services.check_access(user=request.user, action=fields["move"], queue=fields["queue"])
        hidden = [("q", fields["queue"]), ("id", job_id_token(fields["job_id"])), ("move", fields["move"]),
                  ("state", fields["expect_state"]), ("attempts", fields["expect_attempts"])]
        answer = _confirmed(request, lambda: previews.job_preview(**fields), previews.job_proposal(**fields),
                            hidden, "#action-results")
        if isinstance(answer, HttpResponse):
            return answer
    entry = services.job_act(user=request.user, **fields)
    return _recorded(request, entry)


def _to_job_page(request: HtmxHttpRequest, entry: AuditEntry) -> HttpResponse:
    """After an edit or restore that moved: the job page again, read afresh, saying what was done."""
    job = entry.jobs[0]["id"] if entry.jobs else ""
    url = f"{reverse('job')}?{urlencode({'q': entry.queue, 'id': job, 'done': entry.pk})}"
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return HttpResponseRedirect(url)


def _edited(request: HtmxHttpRequest, entry: AuditEntry) -> HttpResponse:
    if entry.outcome == AuditEntry.Outcome.MOVED:
        return _to_job_page(request, entry)
    return _recorded(request, entry)


def _payload_text(text: str, *, kept_cr: bool) -> bytes:
    # A browser sends a textarea's line breaks as CR LF: a payload that held no CR gets its LF back.
    return (text if kept_cr else text.replace("\r\n", "\n")).encode()


@performs("edit")
@require_POST
@operators_only
def edit_action(request: HtmxHttpRequest) -> HttpResponse:
    """Changes a pending or failed job's payload (and max attempts), retrying it when asked: checked against
    the queue's schema, then one compare-and-move on what the page showed; the old payload is kept."""
    data = request.POST
    shown_max = data.get("shown_max_attempts", "").strip()
    max_attempts = data.get("max_attempts", "").strip()
    entry = services.job_edit(
        user=request.user, queue=data.get("q", ""), job_id=data.get("id", ""), expect_state=data.get("state", ""),
        expect_attempts=data.get("attempts", ""), payload=_payload_text(data.get("payload", ""),
                                                                        kept_cr=data.get("cr") == "1"),
        max_attempts="" if max_attempts == shown_max else max_attempts, retry=data.get("retry") == "1")
    return _edited(request, entry)


@performs("restore")
@require_POST
@operators_only
def restore_action(request: HtmxHttpRequest) -> HttpResponse:
    """A kept version becomes the payload again, byte for byte (one compare-and-move)."""
    data = request.POST
    version = data.get("version", "")
    if not _MS.fullmatch(version) or int(version) < 1:
        raise InvalidInput(f"a version is a whole number, not {version!r}")
    entry = services.job_restore(user=request.user, queue=data.get("q", ""), job_id=data.get("id", ""),
                                 expect_state=data.get("state", ""), expect_attempts=data.get("attempts", ""),
                                 version=int(version))
    return _edited(request, entry)


def _delay_ms(text: str) -> int:
    """The form's delay, in whole seconds (empty: due now), as ms."""
    text = text.strip()
    if not text:
        return 0
    if not re.fullmatch(r"[0-9]{1,9}", text) or int(text) * 1000 > MAX_DELAY_MS:
        raise InvalidInput(f"the delay is a whole number of seconds up to {MAX_DELAY_MS // 1000}, not {text!r}")
    return int(text) * 1000


@performs("clone")
@require_POST
@operators_only
def clone_action(request: HtmxHttpRequest) -> HttpResponse:
    """A new job made from this one (a new id; its payload or an edited one; a delay): asked first, with what
    it makes in words, then one script that writes nothing when the job moved on or the id is taken."""
    data = request.POST
    shown_max = data.get("shown_max_attempts", "").strip()
    max_attempts = data.get("max_attempts", "").strip()
    edited = data.get("payload_from") == "edited"
    fields: dict[str, Any] = {
        "queue": data.get("q", ""), "job_id": parse_job_id_token(data.get("id", "")),
        "expect_state": data.get("state", ""), "expect_attempts": data.get("attempts", ""),
        "new_id": data.get("new_id", "").strip(),
        "payload": _payload_text(data.get("payload", ""), kept_cr=data.get("cr") == "1") if edited else None,
        "delay_ms": _delay_ms(data.get("delay_s", "")),
        "max_attempts": "" if max_attempts == shown_max else max_attempts}
    services.check_access(user=request.user, action="clone", queue=fields["queue"])
    hidden = [(name, data.get(name, "")) for name in ("q", "id", "state", "attempts", "new_id", "payload_from",
                                                      "delay_s", "max_attempts", "shown_max_attempts", "cr")]
    if edited:
        hidden.append(("payload", data.get("payload", "")))
    answer = _confirmed(request, lambda: previews.clone_preview(**fields), previews.clone_proposal(**fields), hidden,
                        "#clone-answer")
    if isinstance(answer, HttpResponse):
        return answer
    entry = services.job_clone(user=request.user, **fields)
    new_id = entry.parameters.get("new_id", "") if entry.outcome == AuditEntry.Outcome.MOVED else ""
    return _page_or_fragment(request, "dashboard/actions/cloned.html",
                             {"kind": entry.outcome, "text": entry.result, "entry": entry, "new_id": new_id})


@performs("schema_set")
@require_POST
@operators_only
def schema_action(request: HtmxHttpRequest) -> HttpResponse:
    """Sets (or, emptied, removes) a queue's JSON Schema for edits: one script, audited."""
    entry = services.queue_schema_set(user=request.user, queue=request.POST.get("q", ""),
                                      text=request.POST.get("schema", ""))
    return _recorded(request, entry)


@performs("redaction_set")
@require_POST
@operators_only
def redaction_action(request: HtmxHttpRequest) -> HttpResponse:
    """Set a queue's masked payload paths: confirmed first (it changes what everyone is shown), then one script,
    audited."""
    queue, paths = request.POST.get("q", ""), request.POST.get("paths", "")
    mask_all = request.POST.get("mask_all") == "1"
    services.check_access(user=request.user, action="redaction_set", queue=queue)
    hidden = [("q", queue), ("paths", paths), ("mask_all", "1" if mask_all else "0")]
    answer = _confirmed(request, lambda: previews.redaction_preview(queue=queue, paths=paths, mask_all=mask_all),
                        previews.redaction_proposal(queue=queue, paths=paths, mask_all=mask_all), hidden,
                        "#redaction-answer")
    if isinstance(answer, HttpResponse):
        return answer
    entry = services.queue_redaction_set(user=request.user, queue=queue, paths=paths, mask_all=mask_all)
    return _recorded(request, entry)


@performs(*QUEUE_ACTIONS, field="action")
@require_POST
@operators_only
def queue_action(request: HtmxHttpRequest) -> HttpResponse:
    """Every queue-wide action asks first: its confirmation says how many jobs it touches now."""
    action, queue = request.POST.get("action", ""), request.POST.get("q", "")
    if action not in QUEUE_ACTIONS:
        raise InvalidInput(f"unknown queue action {action!r}")
    older = _ms(request.POST.get("older_than_ms", "0"), "older than") if action.startswith("purge") else 0
    services.check_access(user=request.user, action=action, queue=queue)
    hidden = [("q", queue), ("action", action)] + ([("older_than_ms", str(older))] if action.startswith("purge") else [])
    proposal = previews.queue_proposal(action=action, queue=queue, older_than_ms=older)
    answer = _confirmed(request, lambda: previews.queue_preview(action=action, queue=queue, older_than_ms=older),
                        proposal, hidden, "#action-runs")
    if isinstance(answer, HttpResponse):
        return answer
    # More jobs than the operator was shown: ask again rather than act on a number nobody confirmed.
    now = previews.queue_preview(action=action, queue=queue, older_than_ms=older)
    if now.count > answer.count:
        return _ask(request, previews.grown(now, answer.count), proposal, hidden, "#action-runs")
    entry = services.queue_act(user=request.user, action=action, queue=queue, older_than_ms=older,
                               at_most=answer.count, as_of_ms=answer.as_of_ms)
    return _started(request, entry)


@performs("pause", "resume", field="action")
@require_POST
@operators_only
def pause_action(request: HtmxHttpRequest) -> HttpResponse:
    """Pause or resume a queue: confirmed first (it stops or starts every worker of the queue), then one script."""
    move, queue = request.POST.get("action", ""), request.POST.get("q", "")
    reason = request.POST.get("reason", "").strip()[:1000] if move == "pause" else ""
    services.check_access(user=request.user, action=move, queue=queue)
    hidden = [("q", queue), ("action", move)] + ([("reason", reason)] if move == "pause" else [])
    answer = _confirmed(request, lambda: previews.pause_preview(move=move, queue=queue, reason=reason),
                        previews.pause_proposal(move=move, queue=queue, reason=reason), hidden, "#action-results")
    if isinstance(answer, HttpResponse):
        return answer
    entry = services.queue_pause_or_resume(user=request.user, move=move, queue=queue, reason=reason)
    return _recorded(request, entry)


@performs("remove_key")
@require_POST
@operators_only
def remove_key_action(request: HtmxHttpRequest) -> HttpResponse:
    """Delete a state set another writer left as another type: confirmed first (what it holds goes), then one
    script that checks the key still holds the type the page showed."""
    queue, which, seen_type = request.POST.get("q", ""), request.POST.get("set", ""), request.POST.get("type", "")
    services.check_access(user=request.user, action="remove_key", queue=queue)
    hidden = [("q", queue), ("set", which), ("type", seen_type)]
    answer = _confirmed(request, lambda: previews.remove_key_preview(queue=queue, which=which, seen_type=seen_type),
                        previews.remove_key_proposal(queue=queue, which=which, seen_type=seen_type), hidden,
                        "#action-results")
    if isinstance(answer, HttpResponse):
        return answer
    entry = services.key_remove(user=request.user, queue=queue, which=which, seen_type=seen_type)
    return _recorded(request, entry)


@performs("mark_deploy", on_queue=False)
@require_POST
@operators_only
def deploy_action(request: HtmxHttpRequest) -> HttpResponse:
    """Mark a deploy (every queue's charts draw it): one small write, audited, no confirmation needed."""
    label, queue = request.POST.get("label", "").strip(), request.POST.get("q", "")
    entry = services.deploy_mark_act(user=request.user, label=label, queue=queue)
    return _recorded(request, entry)


@performs(*SELECTION_MOVES, field="move")
@require_POST
@operators_only
def selection_action(request: HtmxHttpRequest) -> HttpResponse:
    move, queue = request.POST.get("move", ""), request.POST.get("q", "")
    if move not in SELECTION_MOVES:
        raise InvalidInput(f"unknown action {move!r}")
    # A box ticked twice (or sent twice by a form) is still one job to move once.
    selected = [Selected.parse(text) for text in dict.fromkeys(request.POST.getlist("job"))]
    if previews.selection_needs_confirmation(move, len(selected)):
        services.check_access(user=request.user, action=move, queue=queue)
        hidden = [("q", queue), ("move", move)] + [("job", s.text) for s in selected]
        answer = _confirmed(request, lambda: previews.selection_preview(move=move, queue=queue, selected=selected),
                            previews.selection_proposal(move=move, queue=queue, selected=selected), hidden,
                            "#action-runs")
        if isinstance(answer, HttpResponse):
            return answer
    entry = services.selection_act(user=request.user, move=move, queue=queue, selected=selected)
    return _started(request, entry)


@performs(*RUN_ACTIONS, field="run")
@require_POST
@operators_only
def run_cancel(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    get_object_or_404(AuditEntry, pk=pk)
    entry = services.run_cancel(user=request.user, entry_id=pk)
    return _page_or_fragment(request, "dashboard/actions/run.html", {"entry": entry, "can_cancel": True})


@require_GET
@viewers_only
def run_detail(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    entry = get_object_or_404(AuditEntry, pk=pk)
    can_cancel = access.entry_refusal(request.user, entry.action, entry.queues) is None
    return _page_or_fragment(request, "dashboard/actions/run.html", {"entry": entry, "can_cancel": can_cancel})


@require_GET
@viewers_only
def audit_log(request: HtmxHttpRequest) -> HttpResponse:
    filters = {name: request.GET.get(name, "").strip() for name in ("user", "queue", "action", "outcome")}
    actions, outcomes = audit_actions(), AuditEntry.Outcome.choices
    # A link naming an action or outcome the log does not know is refused in words, never read as "any".
    unknown = [f"unknown {name} {filters[name]!r}: one of {', '.join(value for value, _ in choices)}"
               for name, choices in (("action", actions), ("outcome", outcomes))
               if filters[name] and filters[name] not in {value for value, _ in choices}]
    entries = AuditEntry.objects.none() if unknown else AuditEntry.objects.all()
    if filters["user"]:
        entries = entries.filter(username=filters["user"])
    if filters["queue"]:
        # A run over a search of many names its queues in its counts.
        entries = entries.filter(Q(queue=filters["queue"]) | Q(queue="", parameters__counts__has_key=filters["queue"]))
    if filters["action"]:
        entries = entries.filter(action=filters["action"])
    if filters["outcome"]:
        entries = entries.filter(outcome=filters["outcome"])
    page = Paginator(entries, AUDIT_PAGE_SIZE).get_page(request.GET.get("page"))
    query = urlencode({k: v for k, v in filters.items() if v})
    context = {
        "page": page, "filters": filters, "query": query, "refusal": "; ".join(unknown),
        "actions": actions, "outcomes": outcomes,
        "action_known": not filters["action"] or filters["action"] in dict(actions),
        "outcome_known": not filters["outcome"] or filters["outcome"] in dict(outcomes),
        "usernames": AuditEntry.objects.order_by("username").values_list("username", flat=True).distinct(),
        "queues": AuditEntry.objects.order_by("queue").values_list("queue", flat=True).distinct()[:500],
    }
    status = 400 if unknown else 200
    if request.htmx and request.htmx.target == "audit-rows":
        return render(request, "dashboard/actions/audit_rows.html", context, status=status)
    return render(request, "dashboard/actions/audit_log.html", context, status=status)


def _search_count(request: HtmxHttpRequest, search: SearchRequest) -> tuple[int, str]:
    """How many jobs the search matches: as the finished search signed it, or counted now (bounded in time)."""
    signed = count_from_token(request.POST.get("counted", ""), search, user_id=request.user.pk)
    if signed is not None:
        return signed, "the search found"
    return services.search_count(user=request.user, queue=search.queue, query=search.query)


@performs(*MATCH_MOVES, field="move")
@require_POST
@operators_only
def search_action(request: HtmxHttpRequest) -> HttpResponse:
    """Retry, cancel, promote or delete what a search of one queue finds; always asks first, with the count."""
    data = request.POST
    move = data.get("move", "")
    queue = data.get("q", "").strip()
    if not queue and data.get("counts"):
        return _search_many_action(request)
    if not queue:
        raise InvalidInput("a bulk action acts on the search of one queue, or on the queues a finished search of "
                           "many names: search that queue")
    now_ms = emq().server_time_ms(queue)
    search = SearchRequest.parse(data, now_ms=now_ms)
    check_match_move(move, search.query.state)
    services.check_access(user=request.user, action=move, queue=queue)
    run = data.get("run", "")
    # Where the run's progress lands: the search's own place, the failures page's, or the queue page's.
    target = f"#search-runs-{run}" if valid_run_token(run) else (
        "#failure-runs" if data.get("into") == "failure-runs" else "#action-runs")
    fields = [("move", move), *search.params().items(), *([("run", run)] if valid_run_token(run) else [])]
    if data.get("confirmation"):
        at_most = _at_most(data.get("at_most", ""))
        proposal = previews.search_proposal(move=move, queue=queue, query=search.query, at_most=at_most)
        answer = _confirmed(request, lambda: previews.search_preview(move=move, queue=queue, query=search.query,
                                                                     count=at_most, counted=""),
                            proposal, fields, target)
    else:
        count, counted = _search_count(request, search)
        preview = previews.search_preview(move=move, queue=queue, query=search.query, count=count, counted=counted)
        at_most = preview.proposal.parameters["at_most"]
        answer = _confirmed(request, lambda: preview, preview.proposal, [*fields, ("at_most", str(at_most))],
                            target)
    if isinstance(answer, HttpResponse):
        return answer
    entry = services.search_act(user=request.user, move=move, queue=queue, query=search.query, at_most=at_most)
    return _started(request, entry)


def _search_many_action(request: HtmxHttpRequest) -> HttpResponse:
    """The same over a finished search of many queues: one confirmation for all of them, stating the query, the
    total and each queue's count; one run, one audit row; each queue moves at most what it matched."""
    data = request.POST
    move = data.get("move", "")
    posted = parse_queue_counts(data.get("counts", ""))
    search = SearchRequest.parse(data, now_ms=emq().server_time_ms(next(iter(posted))))
    check_match_move(move, search.query.state)
    for queue in posted:
        services.check_access(user=request.user, action=move, queue=queue)
    run = data.get("run", "")
    target = f"#search-runs-{run}" if valid_run_token(run) else "#action-runs"
    fields = [("move", move), *search.params().items(), *([("run", run)] if valid_run_token(run) else [])]
    if data.get("confirmation"):
        counts = posted
        if not sum(counts.values()):
            raise InvalidInput("no queue with a job to act on")
        proposal = previews.search_many_proposal(move=move, query=search.query, counts=counts)
        answer = _confirmed(request, lambda: previews.search_many_preview(move=move, query=search.query,
                                                                          counts=counts, counted=""),
                            proposal, [*fields, ("counts", queue_counts_text(counts))], target)
    else:
        counts, counted = _search_many_count(request, search, list(posted))
        preview = previews.search_many_preview(move=move, query=search.query, counts=counts, counted=counted)
        held = preview.proposal.parameters["counts"]
        answer = _confirmed(request, lambda: preview, preview.proposal, [*fields, ("counts", queue_counts_text(held))],
                            target)
    if isinstance(answer, HttpResponse):
        return answer
    entry = services.search_act_many(user=request.user, move=move, query=search.query, counts=counts)
    return _started(request, entry)


def _search_many_count(request: HtmxHttpRequest, search: SearchRequest, queues: list[str]) -> tuple[dict[str, int], str]:
    """Each queue's count: as the finished search signed them, or counted now (bounded in time)."""
    signed = counts_from_token(request.POST.get("counted", ""), search, queues=queues, user_id=request.user.pk)
    if signed is not None:
        return signed, "the search found"
    engine = Search(search.query, queues, console_limits(Limits(max_queues=len(queues), max_matches=None,
                                                                seconds=services.SEARCH_COUNT_S, detail=0)),
                    pacer=process_pacer())
    with SLOTS.held(request.user.pk):
        for _ in engine.steps(emq()):
            pass
    counts = {p.queue: p.matched for p in engine.progress}
    if engine.stopped:
        return counts, f"found in {services.SEARCH_COUNT_S:.0f} s of counting (more may match)"
    return counts, "matching now"


def _at_most(text: str) -> int:
    if not _MS.fullmatch(text) or int(text) < 1:
        raise InvalidInput(f"at most must be a whole number of jobs, not {text!r}")
    return int(text)
