"""A small client of the console's HTTP API (``/api/``), for terminal tools that act as a person would.

Reads and moves go through the console, not straight to Redis, so that they
are held to the caller's role and queue grants, confirmed as the pages confirm
them (an answer 428 carries what the action would do now and a confirmation
to send back) and written in the console's audit log. Standard library only.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Final

from .errors import EmqError, InvalidInput, Unavailable

CONSOLE_URL_ENV: Final = "EMQ_CONSOLE_URL"
# The same names as emq alert reads (queues.alert_cli).
TOKEN_ENV: Final = "EMQ_CONSOLE_TOKEN"
DEFAULT_CONSOLE_URL: Final = "http://127.0.0.1:8000/"
TIMEOUT_S: Final = 10.0
# A console answer larger than this is cut off: a terminal shows a screenful, not megabytes.
MAX_ANSWER_BYTES: Final = 4 * 1024 * 1024


class ConsoleRefused(EmqError):
    """The console answered with an error (not found, forbidden, refused, ...), in its own words."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Confirmation:
    """What the console asks to be confirmed: its words, how many jobs, and the token that confirms it."""

    text: str
    warning: str
    count: int
    token: str | None
    nothing: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """A move's answer: done (200/202), refused in words, or (428) a confirmation to ask for first."""

    status: int
    text: str
    confirmation: Confirmation | None = None


class ConsoleAPI:
    def __init__(self, url: str | None = None, token: str | None = None, *, timeout_s: float = TIMEOUT_S) -> None:
        base = url or os.environ.get(CONSOLE_URL_ENV) or DEFAULT_CONSOLE_URL
        if not base.startswith(("http://", "https://")):
            raise InvalidInput(f"the console's URL must start with http:// or https://, not {base!r}")
        self.base = base if base.endswith("/") else base + "/"
        self.token = token if token is not None else os.environ.get(TOKEN_ENV, "")
        if not self.token:
            raise InvalidInput(f"an API token is needed: --token or {TOKEN_ENV} "
                               "(manage.py api_token USER --scope act)")
        self.timeout_s = timeout_s

    def _send(self, method: str, path: str, query: dict[str, Any] | None = None,
              body: dict[str, Any] | None = None) -> tuple[int, Any]:
        url = urllib.parse.urljoin(self.base, "api/" + path)
        if query:
            url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as answer:
                status, raw = answer.status, answer.read(MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read(MAX_ANSWER_BYTES)
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise Unavailable(f"the console at {self.base} does not answer: {reason}") from error
        try:
            answer_body = json.loads(raw or b"null")
        except ValueError:
            raise Unavailable(f"the console answered {status} with no JSON") from None
        return status, answer_body

    def _get(self, path: str, *, also_ok: tuple[int, ...] = (), **query: Any) -> dict[str, Any]:
        status, body = self._send("GET", path, query)
        if status != 200 and status not in also_ok:
            raise ConsoleRefused(status, _words(status, body))
        return dict(body) if isinstance(body, dict) else {}

    def queues(self, *, after: str = "", limit: int = 100) -> dict[str, Any]:
        return self._get("queues", after=after, limit=limit)

    def jobs(self, queue: str, state: str, *, limit: int = 50) -> dict[str, Any]:
        order = "desc" if state in ("done", "failed") else "asc"
        return self._get("queue/jobs", q=queue, state=state, limit=limit, order=order)

    def job(self, queue: str, job_id: str) -> dict[str, Any]:
        return self._get("job", q=queue, id=job_id)

    def queue_why(self, queue: str) -> dict[str, Any]:
        return self._get(f"queues/{_part(queue)}/why", also_ok=(503,))

    def job_why(self, queue: str, job_id: str) -> dict[str, Any]:
        return self._get(f"jobs/{_part(queue)}/{_part(job_id)}/why", also_ok=(503,))

    def job_move(self, queue: str, job_id: str, move: str, *, state: str, attempts: int | None,
                 confirmation: str = "") -> Outcome:
        """Compare-and-move one job as its page's button does: refused if it is no longer ``state``/``attempts``."""
        return self._move("job/actions", {"queue": queue, "id": job_id, "move": move, "expect_state": state,
                                          "expect_attempts": attempts, "confirmation": confirmation})

    def queue_move(self, queue: str, action: str, *, confirmation: str = "") -> Outcome:
        """A queue-wide move; the console always asks to confirm it first, saying how many jobs."""
        return self._move("queue/actions", {"queue": queue, "action": action, "confirmation": confirmation})

    def _move(self, path: str, body: dict[str, Any]) -> Outcome:
        status, answer = self._send("POST", path, body=body)
        answer = answer if isinstance(answer, dict) else {}
        if status == 428:
            confirmation = Confirmation(str(answer.get("text", "")), str(answer.get("warning", "")),
                                        int(answer.get("count", 0)), answer.get("confirmation"),
                                        str(answer.get("nothing", "")))
            return Outcome(status, confirmation.text, confirmation)
        if status in (200, 202):
            return Outcome(status, str(answer.get("text") or answer.get("result") or "done"))
        return Outcome(status, _words(status, answer))


def _part(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _words(status: int, body: Any) -> str:
    if isinstance(body, dict):
        for key in ("error", "detail", "text"):
            if body.get(key):
                return str(body[key])
    return f"the console answered {status}"
