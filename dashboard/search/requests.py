"""A search as the console's form and its WebSocket carry it: the query, where to look, and how to say it again.

The page resolves what a person typed (an age like ``2h``) into absolute
server times once, so the socket, a reconnect and a bulk run over the same
search all mean exactly the same jobs.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlencode

from django.core import signing

from queues import InvalidInput, validate_queue_name
from queues.search import FILTER_NAMES, Query

FORM_FIELDS: Final = ("state", *FILTER_NAMES, "order")
MAX_QUEUE_FILTER: Final = 128


def search_form(params: Mapping[str, str]) -> dict[str, str]:
    """The search form's fields as a request gives them, the queue (``q``) and name part (``in``) too; the state
    is failed when none is given."""
    form = {name: params.get(name, "") for name in (*FORM_FIELDS, "q", "in")}
    return {**form, "state": form["state"] or "failed"}


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: Query
    queue: str  # "" searches every registered queue (bounded by the engine's limits)
    queue_filter: str = ""  # with every queue: only names holding this text

    @classmethod
    def parse(cls, data: Mapping[str, str], *, now_ms: int) -> SearchRequest:
        queue = (data.get("q") or "").strip()
        if queue:
            validate_queue_name(queue)
        queue_filter = (data.get("in") or "").strip()
        if len(queue_filter) > MAX_QUEUE_FILTER:
            raise InvalidInput(f"a queue name filter is at most {MAX_QUEUE_FILTER} characters")
        values = {name: (data.get(name) or "") for name in FORM_FIELDS}
        query = Query.parse(now_ms=now_ms, **values)
        return cls(query, queue, "" if queue else queue_filter)

    def params(self) -> dict[str, str]:
        """The request with every time absolute (epoch ms): what the socket and a bulk run are given."""
        q = self.query
        out = {"q": self.queue, "in": self.queue_filter, "state": q.state, **q.form_values(), "order": q.order or ""}
        return {k: v for k, v in out.items() if v}

    def urlencoded(self) -> str:
        return urlencode(self.params())

    @property
    def where(self) -> str:
        if self.queue:
            return self.queue
        return f"every queue whose name holds {self.queue_filter!r}" if self.queue_filter else "every queue"

    def queues(self, known: list[str]) -> list[str]:
        if self.queue:
            return [self.queue]
        needle = self.queue_filter.lower()
        return [name for name in known if needle in name.lower()]


def new_run_token() -> str:
    """Names one search run's elements on the page, so a later search never writes into an earlier one's list."""
    return secrets.token_hex(6)


def valid_run_token(text: str) -> bool:
    return len(text) == 12 and all(c in "0123456789abcdef" for c in text)


COUNT_SALT: Final = "dashboard.search.count"
# How long the count a finished search signed is taken as what "matched when confirmed" starts from.
COUNT_MAX_AGE_S: Final = 600


def _digest(search: SearchRequest) -> str:
    return hashlib.sha256(json.dumps(search.params(), sort_keys=True).encode()).hexdigest()


def count_token(search: SearchRequest, *, count: int, user_id: int) -> str:
    """What a finished search found, signed for this user: the act buttons carry it to the confirmation step."""
    return signing.dumps({"d": _digest(search), "n": count, "u": user_id}, salt=COUNT_SALT)


def count_from_token(token: str, search: SearchRequest, *, user_id: int | None) -> int | None:
    """The count a search signed for exactly this request and user, recently; None when it is not one."""
    try:
        claims = signing.loads(token, salt=COUNT_SALT, max_age=COUNT_MAX_AGE_S)
    except signing.BadSignature:
        return None
    if not isinstance(claims, dict) or claims.get("d") != _digest(search) or claims.get("u") != user_id:
        return None
    count = claims.get("n")
    return count if isinstance(count, int) and count >= 0 else None


# A search of many queues acts on the queues where it matched, each on at most the count it matched there.
MAX_ACT_QUEUES: Final = 100


def parse_queue_counts(text: str) -> dict[str, int]:
    """``{"queue": count, ...}`` as a form carries it: the queues a search of many matched in, with their counts."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict) or not data:
        raise InvalidInput("name the queues to act on as the finished search listed them")
    if len(data) > MAX_ACT_QUEUES:
        raise InvalidInput(f"a bulk action acts on at most {MAX_ACT_QUEUES} queues, not {len(data)}")
    counts: dict[str, int] = {}
    for name, count in data.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise InvalidInput(f"the count of queue {name!r} must be a whole number of jobs, not {count!r}")
        counts[validate_queue_name(name)] = count
    return counts


def queue_counts_text(counts: Mapping[str, int]) -> str:
    return json.dumps(dict(counts), separators=(",", ":"))


def counts_token(search: SearchRequest, *, counts: Mapping[str, int], user_id: int) -> str:
    """What a finished search of many queues found in each, signed for this user (see :func:`count_token`)."""
    return signing.dumps({"d": _digest(search), "c": dict(counts), "u": user_id}, salt=COUNT_SALT)


def counts_from_token(token: str, search: SearchRequest, *, queues: list[str],
                      user_id: int | None) -> dict[str, int] | None:
    """The counts a search of many signed for exactly this request, these queues and this user, recently."""
    try:
        claims = signing.loads(token, salt=COUNT_SALT, max_age=COUNT_MAX_AGE_S)
    except signing.BadSignature:
        return None
    if not isinstance(claims, dict) or claims.get("d") != _digest(search) or claims.get("u") != user_id:
        return None
    counts = claims.get("c")
    if not isinstance(counts, dict) or sorted(counts) != sorted(queues):
        return None
    return counts if all(isinstance(n, int) and n >= 0 for n in counts.values()) else None
