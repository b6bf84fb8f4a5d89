"""``POST /api/orders``: place an exchange order (see PROTOCOL.md, "admit_order").

Token requests (``Authorization: Bearer ...``) carry no cookies, so CSRF
cannot apply to them; session requests do, so they are CSRF-checked here,
because the view as a whole is exempt from the middleware to let tokens in.
"""

from __future__ import annotations

from typing import Any, Final

from django.contrib.auth.models import AbstractBaseUser
from django.http import HttpRequest, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.views.decorators.csrf import csrf_exempt

from dashboard.services import emq
from exchange import InvalidOrder, OrderTooLarge, place_order
from exchange.gateway import MAX_BODY_BYTES
from queues import InvalidInput, Unavailable
from queues.orders import KeyTypeConflict

from .tokens import PLACE_PERMISSION, api_token_user

UNREACHABLE: Final = ("Redis is unreachable, so the order may not have been admitted. Nothing is half-written: "
                      "retry with the same client_order_id, which can never place a second order.")


class _CsrfCheck(CsrfViewMiddleware):
    def _reject(self, request: HttpRequest, reason: str) -> Any:
        return reason


def _error(status: int, message: str, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


def _caller(request: HttpRequest) -> tuple[AbstractBaseUser | None, bool, str]:
    """(user, came with a token, why not) for this request."""
    header = request.headers.get("Authorization", "")
    if header:
        scheme, _, secret = header.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None, True, "the Authorization header must be: Bearer <token>"
        user = api_token_user(secret.strip())
        return user, True, "" if user else "the API token is not valid"
    if request.user.is_authenticated:
        return request.user, False, ""  # type: ignore[return-value]
    return None, False, "log in, or send Authorization: Bearer <token>"


@csrf_exempt
def place_order_api(request: HttpRequest) -> JsonResponse:
    if request.method != "POST":
        response = _error(405, "use POST with a JSON order")
        response["Allow"] = "POST"
        return response
    user, with_token, why = _caller(request)
    if user is None:
        return _error(401, why)
    if not with_token:
        reason = _CsrfCheck(lambda r: None).process_view(request, None, (), {})  # type: ignore[arg-type,return-value]
        if reason:
            return _error(403, f"CSRF check failed: {reason}")
    if not user.has_perm(PLACE_PERMISSION):
        return _error(403, f"{user} may not place orders (needs the {PLACE_PERMISSION} permission)")
    if request.content_type != "application/json":
        return _error(415, "send the order as application/json")
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _error(413, f"the body is {declared} bytes; the limit is {MAX_BODY_BYTES}")
    body = request.read(MAX_BODY_BYTES + 1)
    try:
        placement = place_order(emq(), body)
    except OrderTooLarge as refused:
        return _error(413, refused.errors["body"])
    except InvalidOrder as refused:
        return _error(400, "the order was refused", errors=refused.errors)
    except (Unavailable, KeyTypeConflict) as error:
        return _error(503, str(error) if isinstance(error, KeyTypeConflict) else UNREACHABLE)
    except InvalidInput as error:
        return _error(400, str(error))
    outcome = {"order_id": placement.order_id, "client_order_id": placement.command.client_order_id}
    if placement.admitted:
        return JsonResponse({**outcome, "status": "admitted"}, status=201)
    return JsonResponse({**outcome, "status": "duplicate"}, status=200)
