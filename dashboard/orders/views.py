"""``POST /api/orders``: place an exchange order (see PROTOCOL.md, "admit_order").

Token requests (``Authorization: Bearer ...``) carry no cookies, so CSRF
cannot apply to them; session requests do, so they are CSRF-checked here,
because the view as a whole is exempt from the middleware to let tokens in.

The caller needs ``orders.place_orders`` and, when their queue grants
restrict them, a grant that covers the ``orders`` queue. Every order a known
caller sends is a row in the audit log (placed, duplicate, refused), and the
order's history names who placed it (``api:<user>`` or ``console:<user>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from django.contrib.auth.models import User
from django.http import HttpRequest, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from dashboard.actions.access import grant_refusal
from dashboard.actions.models import AuditEntry
from dashboard.bearer import NOT_BEARER, request_bearer
from dashboard.services import emq
from exchange import InvalidOrder, OrderTooLarge, Placement, place_order
from exchange.gateway import MAX_BODY_BYTES
from exchange.orders import ORDERS_QUEUE, KeyTypeConflict
from queues import InvalidInput, Unavailable

from .models import ApiToken
from .tokens import PLACE_PERMISSION, READ_ONLY, api_token_find

UNREACHABLE: Final = ("Redis is unreachable, so the order may not have been admitted. Nothing is half-written: "
                      "retry with the same client_order_id, which can never place a second order.")


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request: HttpRequest, reason: str) -> Any:
        return reason


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


@dataclass(frozen=True, slots=True)
class Caller:
    user: User
    token_name: str | None  # None: a session
    scope: str = ApiToken.Scope.ACT  # a session does what its user may

    @property
    def actor(self) -> str:
        return f"{'api' if self.token_name is not None else 'console'}:{self.user.get_username()}"

    @property
    def via(self) -> dict[str, str]:
        return {"via": "token", "token": self.token_name} if self.token_name is not None else {"via": "session"}


def _caller(request: HttpRequest) -> tuple[Caller | None, str]:
    """(who sent this request, why nobody) for this request."""
    sent, secret = request_bearer(request)
    if sent:
        if secret is None:
            return None, NOT_BEARER
        token = api_token_find(secret)
        if token is None:
            return None, "the API token is not valid"
        return Caller(token.user, token.name, token.scope), ""
    if request.user.is_authenticated:
        return Caller(request.user, None), ""
    return None, "log in, or send Authorization: Bearer <token>"


def _audit(caller: Caller, outcome: str, result: str, jobs: list[dict[str, str]] | None = None) -> None:
    now = timezone.now()
    AuditEntry.objects.create(
        user=caller.user, username=caller.user.get_username(), queue=ORDERS_QUEUE,
        action=AuditEntry.Action.PLACE_ORDER, scope=AuditEntry.Scope.JOB, jobs=jobs or [], parameters=caller.via,
        outcome=outcome, result=result, finished_at=now, updated_at=now)


def _refused(caller: Caller, status: int, message: str, **extra: Any) -> JsonResponse:
    _audit(caller, AuditEntry.Outcome.REFUSED, f"refused: {message}")
    return _error(status, message, **extra)


@csrf_exempt
def place_order_api(request: HttpRequest) -> JsonResponse:
    if request.method != "POST":
        response = _error(405, "use POST with a JSON order")
        response["Allow"] = "POST"
        return response
    caller, why = _caller(request)
    if caller is None:
        return _error(401, why)
    if caller.token_name is None:
        reason = _CsrfCheck(lambda r: None).process_view(request, None, (), {})  # type: ignore[arg-type]
        if reason:
            return _error(403, f"CSRF check failed: {reason}")
    user = caller.user
    if caller.scope != ApiToken.Scope.ACT:
        return _refused(caller, 403, READ_ONLY)
    if not user.has_perm(PLACE_PERMISSION):
        return _refused(caller, 403, f"{user} may not place orders (needs the {PLACE_PERMISSION} permission)")
    outside_grant = grant_refusal(user, ORDERS_QUEUE)
    if outside_grant is not None:
        return _refused(caller, 403, outside_grant)
    if request.content_type != "application/json":
        return _refused(caller, 415, "send the order as application/json")
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _refused(caller, 413, f"the body is {declared} bytes; the limit is {MAX_BODY_BYTES}")
    body = request.read(MAX_BODY_BYTES + 1)
    try:
        placement = place_order(emq(), body, actor=caller.actor)
    except OrderTooLarge as refused:
        return _refused(caller, 413, refused.errors["body"])
    except InvalidOrder as refused:
        _audit(caller, AuditEntry.Outcome.REFUSED, f"refused: the order was refused: {refused}")
        return _error(400, "the order was refused", errors=refused.errors)
    except (Unavailable, KeyTypeConflict) as error:
        message = str(error) if isinstance(error, KeyTypeConflict) else UNREACHABLE
        _audit(caller, AuditEntry.Outcome.ERROR, f"not known whether it was placed: {message}")
        return _error(503, message)
    except InvalidInput as error:
        return _refused(caller, 400, str(error))
    return _placed(caller, placement)


def _placed(caller: Caller, placement: Placement) -> JsonResponse:
    outcome = {"order_id": placement.order_id, "client_order_id": placement.command.client_order_id}
    seen = [{"id": placement.order_id, "client_order_id": placement.command.client_order_id}]
    if placement.admitted:
        _audit(caller, AuditEntry.Outcome.MOVED, f"placed {placement.order_id} "
               f"(client order id {placement.command.client_order_id})", seen)
        return JsonResponse({**outcome, "status": "admitted"}, status=201)
    client_order_id = placement.command.client_order_id
    if placement.differs:
        # A retry sends the same order again; the same id with other values is another order, which would be lost.
        named = ", ".join(placement.differs)
        message = (f"client order id {client_order_id} was placed before as {placement.order_id} with other values "
                   f"({named}); nothing was placed: send a new client_order_id for a new order")
        _audit(caller, AuditEntry.Outcome.REFUSED, f"refused: {message}", seen)
        return JsonResponse({"error": message, **outcome, "status": "conflict", "differs": list(placement.differs)},
                            status=409)
    _audit(caller, AuditEntry.Outcome.FINISHED, f"duplicate: client order id {client_order_id} "
           f"was placed before as {placement.order_id}; nothing new was placed", seen)
    return JsonResponse({**outcome, "status": "duplicate"}, status=200)
