"""Every answer under ``/api/`` is JSON, whoever gives it: a view, Django, ninja, or the ASGI limits.

A client of the API parses JSON; an HTML 404 page (Django's, with DEBUG on as in
the demo), ninja's plain "Method not allowed" or the body limit's plain-text 413
would reach it as a parse error instead of the reason. The views answer JSON
themselves; these two wrappers turn what others answer there into the same
``{"error": "..."}``, keeping the status and headers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from http import HTTPStatus
from typing import Any, Final

from django.core.exceptions import BadRequest, PermissionDenied, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[..., Awaitable[None]]

API_PREFIX: Final = "/api/"
# An error answer longer than this is not one a person wrote; its text is cut.
TEXT_LIMIT: Final = 1000


_ANSWERED_BY_DJANGO: Final = (Http404, PermissionDenied, BadRequest, SuspiciousOperation)


def is_api_path(path: str) -> bool:
    return path.startswith(API_PREFIX)


def _is_json(content_type: str) -> bool:
    return content_type.split(";", 1)[0].strip().lower() == "application/json"


def api_error_text(status: int, body: bytes, content_type: str, *, path: str, allow: str = "") -> str:
    """The words for an error answer that came without JSON: its own text when it is plain text, else its status's."""
    if status == 404:
        return f"no such path: {path[:200]} (the API's paths are listed at /api/docs)"
    if status == 405:
        return f"{path[:200]} answers {allow or 'other methods'}"
    text = body[:TEXT_LIMIT].decode(errors="replace").strip() if content_type.startswith("text/plain") else ""
    if text:
        return text
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return f"HTTP {status}"


class ApiJsonErrorsMiddleware:
    """Under ``/api/``: an unhandled exception is a logged JSON 500, and an error answer that is not JSON becomes JSON."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if not is_api_path(request.path) or response.status_code < 400 or _is_json(response.get("Content-Type", "")):
            return response
        body = b"" if getattr(response, "streaming", False) else response.content
        message = api_error_text(response.status_code, body, response.get("Content-Type", ""), path=request.path,
                                 allow=response.get("Allow", ""))
        answer = JsonResponse({"error": message}, status=response.status_code)
        for header in ("Allow", "WWW-Authenticate", "Retry-After"):
            if header in response:
                answer[header] = response[header]
        return answer

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not is_api_path(request.path) or isinstance(exception, _ANSWERED_BY_DJANGO):
            return None  # Django answers these with their own status, which __call__ then says in JSON
        log.error("the API failed on %s %s", request.method, request.path[:200], exc_info=exception)
        return api_server_error()


def api_server_error() -> JsonResponse:
    return JsonResponse({"error": "the console failed to answer this request (the error is in its log); "
                                  "nothing it had not finished was changed by the failure itself"}, status=500)


class ApiJsonAnswers:
    """ASGI: an error the layers outside Django answer under ``/api/`` (a 413, 408 or 403 in plain text) goes out as JSON."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_api_path(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        held: list[Message] = []
        body = bytearray()

        async def send_json(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = {bytes(k).lower(): bytes(v) for k, v in message.get("headers", ())}
                content_type = headers.get(b"content-type", b"").decode(errors="replace")
                if int(message.get("status", 200)) >= 400 and not _is_json(content_type):
                    held.append(message)  # rewritten once its body has come
                    return
            elif message["type"] == "http.response.body" and held:
                body.extend(bytes(message.get("body", b""))[:TEXT_LIMIT - len(body)])
                if not message.get("more_body", False):
                    await _send_rewritten(send, scope, held.pop(), bytes(body))
                return
            await send(message)

        await self.app(scope, receive, send_json)


async def _send_rewritten(send: Send, scope: Scope, start: Message, body: bytes) -> None:
    headers = [(bytes(k), bytes(v)) for k, v in start.get("headers", ())]
    kept = [(k, v) for k, v in headers if k.lower() not in (b"content-type", b"content-length")]
    content_type = next((v.decode(errors="replace") for k, v in headers if k.lower() == b"content-type"), "")
    status = int(start["status"])
    text = api_error_text(status, body, content_type, path=scope.get("path", ""))
    answer = json.dumps({"error": text}).encode()
    await send({**start, "headers": [*kept, (b"content-type", b"application/json"),
                                     (b"content-length", str(len(answer)).encode())]})
    await send({"type": "http.response.body", "body": answer, "more_body": False})
