"""``/api/``: the pages' reads and the buttons' moves as JSON, with the same roles and queue grants.

A caller is an API token (``Authorization: Bearer emq_...``; no cookies, so no
CSRF) or a signed-in session (writes need the CSRF token, as the pages' forms
do). Viewers read; operators act, on the queues their grants name. Every move
is the same compare-and-move the buttons make, written to the audit log the
same way, refusals by role included. Every error is ``{"error": "..."}`` with
a status that says which kind: 400 bad input, 401 no caller (or a token that
is not valid), 403 not allowed, 404 no such thing, 409 the job moved on,
413 a body over the limit, 503 Redis unreachable. Interactive docs: /api/docs.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from functools import wraps
from typing import Any, Final, Literal
from urllib.parse import urlencode

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db.models import Func, IntegerField
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.urls import reverse
from django.views.defaults import page_not_found
from ninja import NinjaAPI, Path, Query, Status, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer, SessionAuth

from dashboard.actions import access, objectives, previews, services as actions
from dashboard.actions.bulk import MAX_SELECTION, QUEUE_ACTIONS, RUN_ACTIONS, SELECTION_MOVES, Selected
from dashboard.actions.confirmations import (
    MAX_AGE_S,
    ConfirmationRefused,
    Confirmed,
    Proposal,
    confirmation_issue,
    confirmation_redeem,
    typed_name_wanted,
)
from dashboard.actions.models import AuditEntry
from dashboard.actions.previews import Preview
from dashboard.alerts.api import rules_router as alert_rules_router, silences_router as alert_silences_router
from dashboard.bearer import NOT_BEARER, request_bearer
from dashboard.deployments import Deployment, current, deployment_refusal, visible_to
from dashboard.fan_out import every_deployment
from dashboard.fan_out_search import SearchBusy, readers_on, search_every_deployment
from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import READ_ONLY, api_token_find, api_token_user
from dashboard.orders.views import place_order_api
from dashboard.pages.job import read_job_page
from dashboard.pages.queue import read_queue_page
from dashboard.permissions import performs
from dashboard.presenters import Window
from dashboard.queue_names import queue_missing
from dashboard.redaction import Reader, read_masker, reader_for
from dashboard.roles import VIEW_PERMISSION, can_view
from dashboard.saved_views.api import router as saved_views_router
from dashboard.schedules import services as schedule_services
from dashboard.services import read
from queues import EchoMQ, InvalidInput, Refused, Unavailable, latency, reads, slo, validate_job_id, validate_queue_name, why
from queues.deploys import deploy_marks
from queues.failure_explain import explain_failures
from queues.keys import parse_job_id_token, validate_state
from queues.operator_moves import BUTTON_MOVE_NAMES
from queues.reads import QueueStats
from queues.redaction import config as redaction_config
from queues.schedules import Definition, schedule_statuses
from queues.search import MATCH_MOVES, Query as SearchQuery, check_match_move

from . import schedule_schemas as ss, schemas as s
from .errors import api_error_text, api_server_error
from .present import audit_entry, audit_summary, job_out, page_out, queue_out

log = logging.getLogger(__name__)
# On a production deployment, the confirmation is sent back with the queue's name typed in this header.
TYPED_NAME_HEADER: Final = "X-EMQ-Typed-Name"

LIST_LIMIT_MAX: Final = 500
QUEUE: Final = Query(..., pattern=s.QUEUE_PATTERN, max_length=128, description="The queue's name")
JOB_ID: Final = Query(..., pattern=s.JOB_ID_PATTERN, max_length=256, description="The job's id")
# Audit ids are the database's 64-bit keys; anything larger is a 400, not an overflow.
MAX_ID: Final = 2**63 - 1


class TokenAuth(HttpBearer):
    def __call__(self, request: HttpRequest) -> Any:
        # The console's one Bearer reader (ninja's own takes "Bearer  <token>" as the token " <token>").
        sent, token = request_bearer(request)
        return self.authenticate(request, token) if sent and token is not None else None

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        found = api_token_find(token)
        if found is None:
            # Told apart from a missing token in the 401 (the session may still let the caller in).
            request.emq_token_refused = True  # type: ignore[attr-defined]
            return None
        request.emq_token_scope = found.scope  # type: ignore[attr-defined]
        return found.user


class SignedInSession(SessionAuth):
    """The session, CSRF-checked for writes; with nobody signed in there is no caller (401), not a CSRF failure."""

    def _get_key(self, request: HttpRequest) -> str | None:
        if not request.user.is_authenticated:
            return None
        return super()._get_key(request)


def _callers_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """The schema and its docs page: for a token or a session that may view the console, as every read."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        sent, token = request_bearer(request)
        user = api_token_user(token) if token is not None else (request.user if not sent else None)
        if user is None or not user.is_authenticated:
            response = JsonResponse({"error": TOKEN_NOT_VALID if token else NOT_BEARER if sent else NO_CALLER},
                                    status=401)
            response["WWW-Authenticate"] = 'Bearer realm="emq api"'
            return response
        if not can_view(user):
            return JsonResponse({"error": f"{user} may not view the console (needs {VIEW_PERMISSION})"}, status=403)
        refused = deployment_refusal(user, current(), acting=False)
        if refused is not None:
            return JsonResponse({"error": refused}, status=403)
        return view(request, *args, **kwargs)

    return wrapper


class ConsoleApi(NinjaAPI):
    """Builds its OpenAPI schema once per path prefix (it describes code, which does not change while running)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.schemas: dict[str, Any] = {}

    def get_openapi_schema(self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None) -> Any:
        prefix = self.get_root_path(path_params or {}) if path_prefix is None else path_prefix
        if prefix not in self.schemas:
            self.schemas[prefix] = super().get_openapi_schema(path_prefix=prefix, path_params=path_params)
        return self.schemas[prefix]


# Swagger UI from ninja's own static files (ninja is an installed app), so the page needs nothing the
# console's CSP does not allow; no validator badge (it would load an image from swagger.io).
api = ConsoleApi(title="EchoMQ console API", version="1", openapi_url="/schema", docs_url="/docs",
                 docs=Swagger(settings={"validatorUrl": None, "persistAuthorization": False}),
                 docs_decorator=_callers_only, auth=[TokenAuth(), SignedInSession()],
               description=__doc__.split("\n\n", 1)[1].replace("\n", " ") if __doc__ else "")

ERRORS: Final = {400: s.ErrorOut, 401: s.ErrorOut, 403: s.ErrorOut, 503: s.ErrorOut}
api.add_router("/views", saved_views_router)
api.add_router("/alerts", alert_rules_router)
api.add_router("/silences", alert_silences_router)


def _error(request: HttpRequest, status: int, message: str) -> HttpResponse:
    return api.create_response(request, {"error": message}, status=status)


@api.exception_handler(InvalidInput)
def _invalid(request: HttpRequest, error: InvalidInput) -> HttpResponse:
    return _error(request, 400, str(error))


@api.exception_handler(Refused)
def _unreadable(request: HttpRequest, error: Refused) -> HttpResponse:
    """A read refused whole: a key of the queue holds another type (the message names it)."""
    return _error(request, 409, str(error))


def _problem(error: dict[str, Any]) -> str:
    where = ".".join(str(part) for part in error.get("loc", ()) if part not in ("query", "body", "path"))
    if error.get("type") == "string_pattern_mismatch":
        return (f"{where} holds a character that is not allowed (braces, spaces, control characters, "
                "or ':' in a queue name)")
    return f"{where}: {error.get('msg', '')}"


@api.exception_handler(ValidationError)
def _unparsable(request: HttpRequest, error: ValidationError) -> HttpResponse:
    return _error(request, 400, "bad request: " + "; ".join(_problem(e) for e in error.errors))


NO_CALLER: Final = "send Authorization: Bearer <token>, or sign in"
TOKEN_NOT_VALID: Final = ("the API token is not valid (unknown, revoked, or its user is deactivated): "
                          "ask an administrator for a new one")


@api.exception_handler(AuthenticationError)
def _anonymous(request: HttpRequest, error: AuthenticationError) -> HttpResponse:
    if getattr(request, "emq_token_refused", False):
        message = TOKEN_NOT_VALID
    elif "Authorization" in request.headers:
        message = NOT_BEARER
    else:
        message = NO_CALLER
    response = _error(request, 401, message)
    response["WWW-Authenticate"] = 'Bearer realm="emq api"'
    return response


@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, error: PermissionDenied) -> HttpResponse:
    return _error(request, 403, str(error))


@api.exception_handler(Unavailable)
def _unavailable(request: HttpRequest, error: Unavailable) -> HttpResponse:
    return _error(request, 503, str(error))


@api.exception_handler(Http404)
def _missing(request: HttpRequest, error: Http404) -> HttpResponse:
    return _error(request, 404, str(error) or "not found")


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
    return _error(request, error.status_code, str(error))


@api.exception_handler(Exception)
def _failed(request: HttpRequest, error: Exception) -> HttpResponse:
    """A fault of the console: logged with its traceback, answered in JSON (ninja's own shows the traceback with DEBUG)."""
    log.error("the API failed on %s %s", request.method, request.path[:200], exc_info=error)
    return api_server_error()


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """Django's 404 for paths no route matches (``/api/runs/x``): JSON under ``/api/``, the usual page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": api_error_text(404, b"", "", path=request.path)}, status=404)
    return page_not_found(request, exception)


def _viewer(request: HttpRequest) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    if not can_view(user):
        raise PermissionDenied(f"{user} may not view the console (needs {VIEW_PERMISSION})")
    refused = deployment_refusal(user, current(), acting=False)
    if refused is not None:
        raise PermissionDenied(refused)
    return user


def _reader(request: HttpRequest, user: Any) -> Reader:
    """A read-only token reads as a viewer does, masked values included, whoever it belongs to."""
    acting = getattr(request, "emq_token_scope", ApiToken.Scope.ACT) == ApiToken.Scope.ACT
    return reader_for(user) if acting else Reader(False)


def _operator(request: HttpRequest, data: dict[str, Any], action: str = "") -> Any:
    """The caller when they may do ``action`` (else the move or action ``data`` names) on its queue; a refusal by
    role is an audit row, as on the pages."""
    user = request.auth  # type: ignore[attr-defined]
    reason = access.refusal(user, action or data.get("move") or data.get("action") or "", data.get("q") or None)
    if reason is None and getattr(request, "emq_token_scope", ApiToken.Scope.ACT) != ApiToken.Scope.ACT:
        reason = READ_ONLY
    if reason is not None:
        actions.record_forbidden(user=user, data=data, reason=reason)
        raise PermissionDenied(reason)
    return user


# Reads ------------------------------------------------------------------------------------------

def _deployments_seen_by(user: Any) -> list[Deployment]:
    """The deployments ``user`` may see; PermissionDenied when they may see none, or not the console at all."""
    if not can_view(user):
        raise PermissionDenied(f"{user} may not view the console (needs {VIEW_PERMISSION})")
    shown = visible_to(user)
    if not shown:
        raise PermissionDenied(f"{user} may see none of the console's deployments")
    return shown


@api.get("/deployments", response={200: s.DeploymentsOut, **ERRORS},
         summary="Every deployment's job totals (and where a job id is), each within its time budget")
def deployments_list(request: HttpRequest, id: str = Query("", max_length=256)) -> Any:
    """Every deployment the caller may see is asked at once, within ``EMQ_DEPLOYMENT_BUDGET_S``; one that does
    not answer is named in ``missing`` and its entry says why, never left out."""
    user = request.auth  # type: ignore[attr-defined]
    shown = _deployments_seen_by(user)
    every = every_deployment(shown, job_id=parse_job_id_token(id.strip()),
                             budget_s=float(settings.EMQ_DEPLOYMENT_BUDGET_S))
    found = {answer.deployment.name: answer.value for answer in every.found or []}
    out = []
    for answer in every.totals:
        d, t = answer.deployment, answer.value
        out.append({"name": d.name, "production": d.production, "answered": answer.answered, "error": answer.error,
                    "elapsed_ms": answer.elapsed_ms, "queues": t.queues if t else None,
                    "counted": t.counted if t else None, "counts": t.counts if t else None,
                    "unread": t.unread if t else None, "found": found.get(d.name)})
    return {"deployments": out, "missing": every.missing, "partial": every.partial}


@api.get("/deployments/search", response={200: s.DeploymentsSearchOut, **ERRORS, 429: s.ErrorOut},
         summary="A job search run on every deployment at once, each within its time budget")
def deployments_search(request: HttpRequest, filters: Query[s.DeploymentSearchIn]) -> Any:
    """The search page's search, run on every deployment the caller may see at once, each for at most
    ``EMQ_DEPLOYMENT_SEARCH_BUDGET_S``: per deployment its count (``complete`` false, and ``short_of`` saying why,
    when it is only a floor), its first matches and why it did not answer. A bad search is a 400 and nothing runs;
    a 429 when the caller (or the console process) runs as many searches as it may."""
    user = request.auth  # type: ignore[attr-defined]
    shown = _deployments_seen_by(user)
    readers = readers_on(user, shown) if getattr(request, "emq_token_scope", ApiToken.Scope.ACT) == ApiToken.Scope.ACT \
        else {d.name: Reader(False) for d in shown}
    try:
        every = search_every_deployment(shown, filters.form(), readers=readers, user_key=user.pk)
    except SearchBusy as busy:
        raise HttpError(429, str(busy)) from None
    job_url = reverse("job")
    out = []
    for answer in every.answers:
        d, r = answer.deployment, answer.value
        matches = [{**m.as_dict(), "url": f"{job_url}?{urlencode({'q': m.queue, 'id': m.id, 'd': d.name})}"}
                   for m in r.matches] if r else None
        out.append({"name": d.name, "production": d.production, "answered": answer.answered, "error": answer.error,
                    "elapsed_ms": answer.elapsed_ms, "matched": r.matched if r else None,
                    "complete": r.complete if r else None, "summary": r.describe() if r else None,
                    "short_of": list(r.short_of) if r else None, "refused": r.refused if r else None,
                    "queues_total": r.queues_total if r else None, "queues_searched": r.queues_searched if r else None,
                    "matches": matches})
    return {"query": f"{every.request.query.describe()} in {every.request.where}", "budget_s": every.budget_s,
            "deployments": out, "missing": every.missing, "partial": every.partial}


@api.get("/queues", response={200: s.QueueListOut, **ERRORS}, summary="Queues with their counts")
def queues_list(request: HttpRequest, after: str = "", limit: int = Query(100, ge=1, le=LIST_LIMIT_MAX)) -> Any:
    """The registered queues by name, ``limit`` at a time after the name ``after``, each with its counts."""
    _viewer(request)
    known = read(lambda mq: mq.known_queues())
    names = [n for n in known.names if n > after][:limit + 1]
    page, more = names[:limit], len(names) > limit
    results = read(lambda mq: mq.stats_many(page)) if page else []
    return {"queues": [queue_out(name, result) for name, result in zip(page, results)],
            "next_after": page[-1] if more else None, "stale": known.stale}


def _existing(name: str, stats: QueueStats) -> QueueStats:
    """The stats of a queue that exists; a misspelt name is a 404 that says so (and what it may have meant)."""
    missing, _ = queue_missing(name, stats)
    if missing:
        raise Http404(missing)
    return stats


@api.get("/queue", response={200: s.QueueOut, 404: s.ErrorOut, 409: s.ErrorOut, **ERRORS},
         summary="One queue's counts, wait and run percentiles, rates and time to drain")
def queue_detail(request: HttpRequest, q: str = QUEUE) -> Any:
    _viewer(request)
    name = validate_queue_name(q)
    stats = _existing(name, read(lambda mq: mq.stats(name)))
    summary = latency.summarize(read(lambda mq: mq.run(latency.summary_read(name))))
    return queue_out(name, stats, summary.as_dict(stats.due))


def _slo_status_out(found: slo.SloStatus) -> dict[str, Any]:
    return found.as_dict()


@api.get("/queues/{q}/slo", response={200: s.SloOut, **ERRORS},
         summary="The latency objective that applies to a queue, its attainment and burn rates")
def queue_slo(request: HttpRequest, q: str = Path(..., pattern=s.QUEUE_PATTERN, max_length=128)) -> Any:
    _viewer(request)
    name = validate_queue_name(q)
    objective = read(lambda mq: mq.run(slo.slos())).for_queue(name)
    if objective is None:
        return {"queue": name, "slo": None}
    return {"queue": name, "slo": _slo_status_out(read(lambda mq: slo.slo_status(mq, name, objective)))}


def _slo_answer(entry: AuditEntry, change: slo.SloChange | None, name: str) -> Any:
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    if change is None:
        return Status(404 if "no objective" in entry.result else 409, {"error": entry.result})
    previous = change.previous.as_dict() if change.previous else None
    return {"name": name, "previous": previous, "audit_id": entry.id}


@performs("slo_set")
@api.put("/queues/{q}/slo", response={200: s.SloChangeOut, 409: s.ErrorOut, **ERRORS},
         summary="Set (or replace) a queue's or a name pattern's latency objective (operators; audited)")
def queue_slo_set(request: HttpRequest, body: s.SloIn,
                  q: str = Path(..., pattern=s.SLO_NAME_PATTERN, max_length=128)) -> Any:
    """``q`` may be a glob pattern (``mail-*``): the objective then applies to every queue it matches that
    has none of its own."""
    user = _operator(request, {"q": q, "action": "slo_set"})
    entry, change = objectives.slo_change(user=user, name=q, metric=body.metric, under_ms=body.under_ms,
                                          target=f"{body.target:.3f}".rstrip("0").rstrip("."),
                                          window_days=body.window_days)
    return _slo_answer(entry, change, q)


@performs("slo_delete")
@api.delete("/queues/{q}/slo", response={200: s.SloChangeOut, 404: s.ErrorOut, 409: s.ErrorOut, **ERRORS},
            summary="Remove the latency objective set for a queue or a pattern (operators; audited)")
def queue_slo_delete(request: HttpRequest, q: str = Path(..., pattern=s.SLO_NAME_PATTERN, max_length=128)) -> Any:
    user = _operator(request, {"q": q, "action": "slo_delete"})
    entry, change = objectives.slo_remove(user=user, name=q)
    return _slo_answer(entry, change, q)


@api.get("/queues/{q}/redaction", response={200: s.RedactionOut, **ERRORS},
         summary="The JSON paths whose payload values a queue shows masked, and to whom")
def queue_redaction(request: HttpRequest, q: str = Path(..., pattern=s.QUEUE_PATTERN, max_length=128)) -> Any:
    _viewer(request)
    name = validate_queue_name(q)
    return read(lambda mq: mq.run(redaction_config(name))).as_dict()


@performs("redaction_set")
@api.put("/queues/{q}/redaction", response={200: s.AuditEntryOut, 409: s.AuditEntryOut | s.ErrorOut,
                                            428: s.ConfirmationOut, **ERRORS},
         summary="Set the JSON paths whose payload values a queue shows masked (operators; confirmed, audited)")
def queue_redaction_set(request: HttpRequest, body: s.RedactionIn,
                        q: str = Path(..., pattern=s.QUEUE_PATTERN, max_length=128)) -> Any:
    """Answers 428 first with what changes and a confirmation to send back."""
    paths = "\n".join(body.paths)
    data = {"q": q, "action": "redaction_set"}
    user = _operator(request, data)
    _confirmed(request, user, body.confirmation,
               lambda: previews.redaction_preview(queue=q, paths=paths, mask_all=body.mask_all),
               previews.redaction_proposal(queue=q, paths=paths, mask_all=body.mask_all), data)
    entry = actions.queue_redaction_set(user=user, queue=q, paths=paths, mask_all=body.mask_all)
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    return Status(200 if entry.outcome == AuditEntry.Outcome.MOVED else 409, audit_entry(entry))


@api.get("/queue/jobs", response={200: s.PageOut, 404: s.ErrorOut, 409: s.ErrorOut, **ERRORS},
         summary="A page of one state's jobs, by cursor")
def queue_jobs(request: HttpRequest, state: Literal["pending", "active", "done", "failed"],
               after: str | None = None, before: str | None = None,
               limit: int = Query(50, ge=1, le=reads.PAGE_LIMIT_MAX), order: Literal["asc", "desc"] = "asc",
               q: str = QUEUE) -> Any:
    """Jobs in ``state`` ordered by score; pass a row's ``cursor`` as ``after`` (or ``before``) to move on."""
    reader = _reader(request, _viewer(request))
    name, state = validate_queue_name(q), validate_state(state)
    if after is not None and before is not None:
        raise InvalidInput("give one of after or before")
    data = read(lambda mq: read_queue_page(mq, Window(name, state, order, limit, after, before), reader=reader))
    if not data.page.rows:
        _existing(name, data.stats)
    return page_out(data.page)


@api.get("/job", response={200: s.JobOut, 404: s.ErrorOut, 409: s.ErrorOut, **ERRORS}, summary="One job with its history")
def job_detail(request: HttpRequest, q: str = QUEUE, id: str = JOB_ID) -> Any:
    reader = _reader(request, _viewer(request))
    name, job_id = validate_queue_name(q), validate_job_id(id)
    data = read(lambda mq: read_job_page(mq, name, job_id, reader=reader))
    if data.missing:
        raise Http404(f"job {job_id} does not exist in {name}")
    return job_out(data)


@api.get("/queues/{q}/why", response={**ERRORS, 200: s.WhyOut, 503: s.WhyOut},
         summary="Why a queue is not draining: reasons, most decisive first")
def queue_why(request: HttpRequest, q: str = Path(..., pattern=s.QUEUE_PATTERN, max_length=128)) -> Any:
    """One bounded read of the queue and its workers; 503 with the reason ``unknown`` when Redis did not answer."""
    _viewer(request)
    name = validate_queue_name(q)
    return _why(lambda mq: mq.queue_why(name))


@api.get("/jobs/{q}/{path:id}/why", response={**ERRORS, 200: s.WhyOut, 503: s.WhyOut},
         summary="Why a job is not moving: reasons, most decisive first")
def job_why(request: HttpRequest, q: str = Path(..., pattern=s.QUEUE_PATTERN, max_length=128),
            id: str = Path(..., pattern=s.JOB_ID_PATTERN, max_length=256)) -> Any:
    """One bounded read of the job, its queue and its worker; a job that does not exist answers ``missing``."""
    _viewer(request)
    name, job_id = validate_queue_name(q), validate_job_id(id)
    return _why(lambda mq: mq.job_why(name, job_id))


def _why(ask: Callable[[EchoMQ], why.Why]) -> Any:
    try:
        answer = read(ask)
    except Unavailable as error:  # no client at all (Redis down at connect): the same answer, never a 0
        answer = why.unknown(error)
    return Status(503 if answer.top.code == "unknown" else 200, answer.as_dict())


# A page of the audit log, in rows and in bytes: what one request can make the process hold.
AUDIT_LIMIT_MAX: Final = 100
AUDIT_PAGE_BYTES: Final = 256 * 1024


class JsonArrayLength(Func):
    """How many items a JSON array column holds, counted by the database (the list itself is never loaded)."""

    function = "JSON_ARRAY_LENGTH"
    output_field = IntegerField()

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="JSONB_ARRAY_LENGTH", **extra)

    def as_mysql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, function="JSON_LENGTH", **extra)


@api.get("/audit", response={200: s.AuditPageOut, **ERRORS}, summary="The audit log, newest first")
def audit_list(request: HttpRequest, user: str = "", queue: str = "", action: str = "", outcome: str = "",
               before: int | None = Query(None, ge=1, le=MAX_ID),
               limit: int = Query(50, ge=1, le=AUDIT_LIMIT_MAX)) -> Any:
    """Newest first, ``limit`` entries at most and about AUDIT_PAGE_BYTES: each entry's jobs are counted, and
    listed by ``/api/runs/{id}``."""
    _viewer(request)
    entries = AuditEntry.objects.order_by("-id")
    for field, value in (("username", user), ("queue", queue), ("action", action), ("outcome", outcome)):
        if value:
            entries = entries.filter(**{field: value})
    if before is not None:
        entries = entries.filter(id__lt=before)
    # A row may name a thousand jobs: they are counted in the database, so a page never loads them.
    found = list(entries.defer("jobs", "outcomes").annotate(job_total=JsonArrayLength("jobs"))[:limit + 1])
    rows: list[dict[str, Any]] = []
    size = 0
    for entry in found[:limit]:
        row = audit_summary(entry, job_count=entry.job_total)
        size += len(json.dumps(row, default=str))
        if rows and size > AUDIT_PAGE_BYTES:
            break
        rows.append(row)
    return {"entries": rows, "next_before": rows[-1]["id"] if len(rows) < len(found) else None}


def _entry(run_id: int) -> AuditEntry:
    entry = AuditEntry.objects.filter(pk=run_id).first()
    if entry is None:
        raise Http404(f"there is no audit entry {run_id}")
    return entry


@api.get("/runs/{run_id}", response={200: s.AuditEntryOut, 404: s.ErrorOut, **ERRORS},
         summary="One action's audit entry (a bulk run's progress)")
def run_detail(request: HttpRequest, run_id: int = Path(..., ge=1, le=MAX_ID)) -> Any:
    _viewer(request)
    return audit_entry(_entry(run_id))


# Moves ------------------------------------------------------------------------------------------

class _Answer(Exception):
    """An answer other than the move's own: the confirmation step, or a confirmation refused."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status, self.body = status, body


@api.exception_handler(_Answer)
def _answer(request: HttpRequest, answer: _Answer) -> HttpResponse:
    return api.create_response(request, answer.body, status=answer.status)


def _ask(user: Any, asked: Preview, proposal: Proposal) -> _Answer:
    issued = None if asked.nothing else confirmation_issue(user=user, proposal=proposal, count=asked.count,
                                                           as_of_ms=asked.as_of_ms)
    return _Answer(428, {"text": f"{asked.lead} {proposal.queue}{asked.tail}", "warning": asked.warning,
                         "count": asked.count, "confirmation": issued, "expires_in_s": MAX_AGE_S,
                         "nothing": asked.nothing, "type_to_confirm": typed_name_wanted(proposal)})


def _confirmed(request: HttpRequest, user: Any, token: str, preview: Any, proposal: Proposal,
               data: dict[str, Any]) -> Confirmed:
    """Returns when ``token`` confirms ``proposal`` (and is now spent), as the pages' second POST does.

    Without a token: 428 with what the action would do now and a token for it.
    With one that does not hold (forged, lapsed, used, another user's or action's): 409, in the audit log.
    """
    if not token:
        raise _ask(user, preview(), proposal)
    try:
        return confirmation_redeem(user=user, token=token, proposal=proposal, typed=request.headers.get(TYPED_NAME_HEADER, ""))
    except ConfirmationRefused as refusal:
        actions.record_refused(user=user, data=_Form(data), result=f"refused: {refusal}")
        raise _Answer(409, {"error": f"refused: {refusal}"}) from None

@performs(*BUTTON_MOVE_NAMES, field="move")
@api.post("/job/actions", response={200: s.JobActionOut, 409: s.JobActionOut | s.ErrorOut,
                                    428: s.ConfirmationOut, **ERRORS},
          summary="Compare-and-move one job, as a button does")
def job_action(request: HttpRequest, body: s.JobActionIn) -> Any:
    """The move runs only if the job is still in ``expect_state`` (and ``expect_attempts``, when given):
    200 moved, 409 refused because it moved on (nothing changed), 503 when whether it ran is unknown.
    Delete, and cancel of a running job, first answer 428 with a confirmation to send back."""
    expect_attempts = "" if body.expect_attempts is None else str(body.expect_attempts)
    data = {"q": body.queue, "id": body.id, "move": body.move, "state": body.expect_state,
            "attempts": expect_attempts}
    user = _operator(request, data)
    fields = {"queue": body.queue, "job_id": body.id, "move": body.move, "expect_state": body.expect_state,
              "expect_attempts": expect_attempts}
    if previews.job_needs_confirmation(body.move, body.expect_state):
        _confirmed(request, user, body.confirmation, lambda: previews.job_preview(**fields),
                   previews.job_proposal(**fields), data)
    entry = actions.job_act(user=user, **fields)
    out = {"outcome": entry.outcome, "text": entry.result, "audit_id": entry.pk}
    statuses: dict[str, int] = {AuditEntry.Outcome.MOVED: 200, AuditEntry.Outcome.REFUSED: 409}
    status = statuses.get(entry.outcome, 503)
    if status == 503:
        raise Unavailable(entry.result)
    return Status(status, out)


@performs("clone")
@api.post("/job/clone", response={200: s.CloneOut, 409: s.CloneOut | s.ErrorOut, 428: s.ConfirmationOut, **ERRORS},
          summary="Clone one job as a new job (a new id; its payload or an edited one; a delay), once confirmed")
def job_clone(request: HttpRequest, body: s.CloneIn) -> Any:
    """Answers 428 first, saying what it would make, with a confirmation to send back; then 200 made, 409
    refused (the job moved on, the id is taken, or the edited payload breaks the queue's JSON Schema:
    nothing written), 503 when whether it ran is unknown."""
    expect_attempts = "" if body.expect_attempts is None else str(body.expect_attempts)
    data = {"q": body.queue, "id": body.id, "move": "clone", "state": body.expect_state, "attempts": expect_attempts}
    user = _operator(request, data)
    fields: dict[str, Any] = {
        "queue": body.queue, "job_id": body.id, "expect_state": body.expect_state, "expect_attempts": expect_attempts,
        "new_id": body.new_id, "payload": None if body.payload is None else body.payload.encode(),
        "delay_ms": body.delay_ms, "max_attempts": "" if body.max_attempts is None else str(body.max_attempts)}
    _confirmed(request, user, body.confirmation, lambda: previews.clone_preview(**fields),
               previews.clone_proposal(**fields), data)
    entry = actions.job_clone(user=user, **fields)
    moved = entry.outcome == AuditEntry.Outcome.MOVED
    out = {"outcome": entry.outcome, "text": entry.result, "audit_id": entry.pk, "new_id": body.new_id if moved else ""}
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    return Status(200 if moved else 409, out)


@performs(*SELECTION_MOVES, field="move")
@api.post("/queue/selection", response={202: s.AuditEntryOut, 409: s.ErrorOut, 428: s.ConfirmationOut, **ERRORS},
          summary="Compare-and-move the jobs named, in the background")
def selection_action(request: HttpRequest, body: s.SelectionActionIn) -> Any:
    """Each job moves only if it is still as given; follow the run at ``/api/runs/{id}``.
    Delete, cancel and more than 20 jobs first answer 428 with a confirmation to send back."""
    jobs = [(j.id, j.state, "" if j.attempts is None else str(j.attempts)) for j in body.jobs]
    data = {"q": body.queue, "move": body.move, "job": [f"{state}:{attempts}:{job_id}" for job_id, state, attempts in jobs]}
    user = _operator(request, _Form(data))
    if len(body.jobs) > MAX_SELECTION:
        raise InvalidInput(f"at most {MAX_SELECTION} jobs at once, not {len(body.jobs)}")
    selected = [Selected(validate_job_id(job_id), state, attempts) for job_id, state, attempts in dict.fromkeys(jobs)]
    if previews.selection_needs_confirmation(body.move, len(selected)):
        _confirmed(request, user, body.confirmation,
                   lambda: previews.selection_preview(move=body.move, queue=body.queue, selected=selected),
                   previews.selection_proposal(move=body.move, queue=body.queue, selected=selected), data)
    entry = actions.selection_act(user=user, move=body.move, queue=body.queue, selected=selected)
    return Status(202, audit_entry(entry))


@performs(*QUEUE_ACTIONS, field="action")
@api.post("/queue/actions", response={202: s.AuditEntryOut, 409: s.ErrorOut, 428: s.ConfirmationOut, **ERRORS},
          summary="A queue-wide action (recover, retry or purge all), in the background, once confirmed")
def queue_action(request: HttpRequest, body: s.QueueActionIn) -> Any:
    """Always answers 428 first, saying how many jobs it touches now, with a confirmation to send back."""
    older = body.older_than_ms if body.action.startswith("purge") else 0
    data = {"q": body.queue, "action": body.action}
    user = _operator(request, data)
    proposal = previews.queue_proposal(action=body.action, queue=body.queue, older_than_ms=older)
    confirmed = _confirmed(request, user, body.confirmation,
                           lambda: previews.queue_preview(action=body.action, queue=body.queue, older_than_ms=older),
                           proposal, data)
    now = previews.queue_preview(action=body.action, queue=body.queue, older_than_ms=older)
    if now.count > confirmed.count:
        raise _ask(user, previews.grown(now, confirmed.count), proposal)
    entry = actions.queue_act(user=user, action=body.action, queue=body.queue, older_than_ms=older,
                              at_most=confirmed.count, as_of_ms=confirmed.as_of_ms)
    return Status(202, audit_entry(entry))


def _pause_or_resume(request: HttpRequest, move: str, body: s.PauseIn) -> Any:
    reason = body.reason.strip() if move == "pause" else ""
    data = {"q": body.queue, "action": move}
    user = _operator(request, data)
    _confirmed(request, user, body.confirmation,
               lambda: previews.pause_preview(move=move, queue=body.queue, reason=reason),
               previews.pause_proposal(move=move, queue=body.queue, reason=reason), data)
    entry = actions.queue_pause_or_resume(user=user, move=move, queue=body.queue, reason=reason)
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    return Status(200 if entry.outcome == AuditEntry.Outcome.MOVED else 409, audit_entry(entry))


@performs("pause")
@api.post("/queue/pause", response={200: s.AuditEntryOut, 409: s.AuditEntryOut | s.ErrorOut, 428: s.ConfirmationOut,
                                    **ERRORS},
          summary="Pause claims from a queue (running jobs finish, enqueue goes on), once confirmed")
def queue_pause(request: HttpRequest, body: s.PauseIn) -> Any:
    """Answers 428 first with what it stops now and a confirmation to send back."""
    return _pause_or_resume(request, "pause", body)


@performs("resume")
@api.post("/queue/resume", response={200: s.AuditEntryOut, 409: s.AuditEntryOut | s.ErrorOut,
                                     428: s.ConfirmationOut, **ERRORS},
          summary="Let claims take a paused queue's jobs again, once confirmed")
def queue_resume(request: HttpRequest, body: s.PauseIn) -> Any:
    return _pause_or_resume(request, "resume", body)


@performs(*RUN_ACTIONS, field="run")
@api.post("/runs/{run_id}/cancel", response={200: s.AuditEntryOut, 404: s.ErrorOut, 409: s.ErrorOut, **ERRORS},
          summary="Ask a running bulk action to stop after its current step")
def run_cancel(request: HttpRequest, run_id: int = Path(..., ge=1, le=MAX_ID)) -> Any:
    """409 when the run had finished already: nothing was cancelled."""
    entry = _entry(run_id)
    user = _operator(request, {"q": entry.queue}, action=entry.action)
    if not entry.is_running:
        raise _Answer(409, {"error": f"nothing was cancelled: run {run_id} ({entry.action} of {entry.queue}) "
                                     f"had finished already ({entry.outcome}: {entry.result})"})
    return audit_entry(actions.run_cancel(user=user, entry_id=run_id))


class _Form(dict[str, Any]):
    """What :func:`record_forbidden` reads from a form: ``get`` and ``getlist``."""

    def getlist(self, key: str) -> list[str]:
        value = self.get(key, [])
        return list(value) if isinstance(value, list) else [value]


# Orders ------------------------------------------------------------------------------------------

@performs(AuditEntry.Action.PLACE_ORDER, on_queue=False, permission="orders.place_orders")
@api.post("/orders", auth=None, summary="Place an exchange order (at most once per client_order_id)",
          response={200: s.OrderOut, 201: s.OrderOut, 400: s.OrderRefusedOut, 401: s.ErrorOut, 403: s.ErrorOut,
                    409: s.OrderConflictOut, 413: s.ErrorOut, 415: s.ErrorOut, 503: s.ErrorOut},
          openapi_extra={"requestBody": {"required": True, "description": s.ORDER_BODY_HELP, "content": {
              "application/json": {"schema": s.OrderIn.model_json_schema(ref_template="#/components/schemas/{model}")}}}})
def orders_place(request: HttpRequest) -> HttpResponse:
    """Its own view (see dashboard/orders): it reads the raw body, checks the caller and CSRF itself, and audits
    every order. 201 admitted, 200 the same order again ("duplicate"), 409 the same client_order_id with other
    values (``differs`` names them), 400 every bad field named, 503 not known whether it was placed (retry)."""
    return place_order_api(request)


# Failure groups ----------------------------------------------------------------------------------

@api.get("/failures", response={200: s.FailuresOut, **ERRORS},
         summary="A queue's failure groups with their releases, hosts, rates and over-represented payload fields")
def failures_list(request: HttpRequest, q: str = QUEUE,
                  release: str = Query("", max_length=64, description="Only groups whose attempts ran on this "
                                                                       "release ('-': release unknown)"),
                  host: str = Query("", max_length=256, description="Only groups with sampled jobs on this host"),
                  sort: Literal["count", "new"] = Query("count", description="'new': the groups that began after "
                                                                              "the newest deploy mark first")) -> Any:
    """Read in bounded steps (PROTOCOL.md, section 9c): the 50 largest groups, the newest 2000 failed jobs at
    most, 200 each of done, pending and active as the baseline of all jobs."""
    masker = read_masker(_reader(request, _viewer(request)), q)
    return read(lambda mq: explain_failures(mq, q, release=release.strip(), host=host.strip(), sort=sort,
                                            masker=masker)).as_dict()


@performs(*(m for m, states in MATCH_MOVES.items() if "failed" in states), field="move")
@api.post("/failures/actions", response={202: s.AuditEntryOut, 409: s.ErrorOut, 428: s.ConfirmationOut, **ERRORS},
          summary="Retry or delete a failure group's jobs, or only those of a release, a host or a field value")
def failures_action(request: HttpRequest, body: s.FailureActionIn) -> Any:
    """Always answers 428 first, stating the slice and how many jobs it matches now, with a confirmation to send
    back; then the run moves each job only if it is still as found, and at most that many. Follow it at
    ``/api/runs/{id}``."""
    data = {"q": body.queue, "move": body.move, "state": "failed", "group": body.group, "release": body.release,
            "host": body.host, "field": body.field}
    user = _operator(request, data)
    check_match_move(body.move, "failed")
    query = SearchQuery.parse(state="failed", group=body.group, release=body.release.strip(),
                              host=body.host.strip(), field=body.field)
    # The count travels signed in the confirmation: the run acts on at most what it stated.
    proposal = Proposal(body.move, body.queue, AuditEntry.Scope.SEARCH, {"query": query.as_dict(), "via": "api"})

    def preview() -> Preview:
        count, counted = actions.search_count(user=user, queue=body.queue, query=query)
        return previews.search_preview(move=body.move, queue=body.queue, query=query, count=count, counted=counted)

    confirmed = _confirmed(request, user, body.confirmation, preview, proposal, data)
    entry = actions.search_act(user=user, move=body.move, queue=body.queue, query=query, at_most=confirmed.count)
    return Status(202, audit_entry(entry))


# Deploy marks ------------------------------------------------------------------------------------

@api.get("/deploys", response={200: s.DeployMarksOut, **ERRORS}, summary="Deploy marks, oldest first")
def deploys_list(request: HttpRequest, since_ms: int = Query(0, ge=0, le=10 ** 14 - 2),
                 until_ms: int = Query(10 ** 14 - 2, ge=0, le=10 ** 14 - 2),
                 limit: int = Query(200, ge=1, le=1000)) -> Any:
    _viewer(request)
    found = read(lambda mq: mq.run(deploy_marks(since_ms=since_ms, until_ms=until_ms, limit=limit)))
    return {"now_ms": found.now_ms, "marks": [m.as_dict() for m in found.marks]}


@performs("mark_deploy", on_queue=False)
@api.post("/deploys", response={200: s.AuditEntryOut, 201: s.AuditEntryOut, **ERRORS},
          summary="Mark a deploy (drawn on every chart; a second mark of a label in the same minute is the same)")
def deploys_mark(request: HttpRequest, body: s.DeployMarkIn) -> Any:
    """201 a new mark, 200 the label was marked in that minute already; audited either way."""
    user = _operator(request, {"action": "mark_deploy"})
    entry = actions.deploy_mark_act(user=user, label=body.label, at_ms=body.at_ms)
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    return Status(201 if entry.outcome == AuditEntry.Outcome.MOVED else 200, audit_entry(entry))


# Schedules (recurring jobs) -------------------------------------------------------------------------

def _schedule_out(found: Any, now_ms: int) -> dict[str, Any]:
    return {**found.as_dict(), "overdue_ms": found.overdue_ms(now_ms)}


@api.get("/schedules", response={200: ss.ScheduleListOut, **ERRORS},
         summary="Every schedule (of one queue, or of every queue), next tick first, a page at a time")
def schedules_list(request: HttpRequest, queue: str = Query("", pattern=r"^([^{}:\x00-\x20\x7f]+)?$", max_length=128),
                   limit: int = Query(50, ge=1, le=100), after_queue: str = "",
                   after_score: int = Query(-1, ge=-1, le=99_999_999_999_999), after_name: str = "") -> Any:
    """Each with its next and last tick, its last job's outcome and its last 20 jobs' outcomes."""
    _viewer(request)
    after = (validate_queue_name(after_queue), after_score, after_name) if after_queue else None
    found = read(lambda mq: schedule_statuses(mq, queue=queue or None, limit=limit, after=after))
    return {"now_ms": found.now_ms, "schedules": [_schedule_out(s, found.now_ms) for s in found.schedules],
            "next": {"queue": found.after[0], "score": found.after[1], "name": found.after[2]} if found.after else None,
            "unreadable": found.unreadable}


def _definition(body: ss.DefinitionIn, paused: bool = False) -> Definition:
    return Definition.of(cron=body.cron or None, tz=body.tz if body.cron else None,
                         every_ms=None if body.cron else body.every_ms, payload=body.payload,
                         max_attempts=body.max_attempts, missed=body.missed, paused=paused)


@performs("schedule_add")
@api.post("/schedules", response={201: s.AuditEntryOut, 409: s.AuditEntryOut, **ERRORS},
          summary="Add a schedule (a cron in a time zone, or an interval); audited")
def schedules_add(request: HttpRequest, body: ss.ScheduleIn) -> Any:
    """201 added, 409 the queue has a schedule of that name already (nothing changed)."""
    user = _operator(request, {"q": body.queue, "action": "schedule_add"})
    entry = schedule_services.schedule_add_act(user=user, queue=body.queue, name=body.name,
                                               definition=_definition(body, body.paused))
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    return Status(201 if entry.outcome == AuditEntry.Outcome.MOVED else 409, audit_entry(entry))


@performs(*schedule_services.ACTIONS, field="action")
@api.post("/schedules/{queue}/{name}/actions",
          response={200: s.AuditEntryOut, 409: s.AuditEntryOut | s.ErrorOut, 428: ss.ScheduleConfirmationOut, **ERRORS},
          summary="Pause, resume, run now, edit or delete a schedule, as the page's buttons do, once confirmed")
def schedule_act(request: HttpRequest, body: ss.ScheduleActionIn,
                 queue: str = Path(..., pattern=s.QUEUE_PATTERN, max_length=128),
                 name: str = Path(..., pattern=ss.SCHEDULE_NAME_PATTERN, max_length=64)) -> Any:
    """Answers 428 first with what it does now and a confirmation to send back (with the same body); 409 when the
    schedule changed since ``version`` (nothing changed)."""
    action = f"schedule_{body.action}"
    data = {"q": queue, "action": action}
    user = _operator(request, data)
    if body.action == "edit" and body.definition is None:
        raise InvalidInput("an edit needs the new definition")
    stamp = body.stamp if body.stamp is not None else int(time.time() * 1000)
    press = schedule_services.SchedulePress(
        action, validate_queue_name(queue), name, body.version,
        _definition(body.definition) if body.action == "edit" and body.definition is not None else None,
        stamp if body.action == "run" else None)
    if not body.confirmation and body.action == "run":
        asked = schedule_services.schedule_preview(press)
        answer = _ask(user, asked, press.proposal)
        answer.body["stamp"] = stamp
        raise answer
    _confirmed(request, user, body.confirmation, lambda: schedule_services.schedule_preview(press), press.proposal,
               data)
    entry = schedule_services.schedule_act(user=user, press=press)
    if entry.outcome == AuditEntry.Outcome.ERROR:
        raise Unavailable(entry.result)
    return Status(200 if entry.outcome == AuditEntry.Outcome.MOVED else 409, audit_entry(entry))
