"""Odd keyspaces (what buggy writers in other languages leave) and every page, fragment and API read of
the console, so a test can ask each of them whether one answers 5xx."""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterable, Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import redis
from django.test import Client

from queues import STATES
from queues.visible import INVISIBLE

# Raw bytes: a name or an id that is not UTF-8 cannot be spelled as a str key.
REGISTRY = b"emq:queues"


def prefix(queue: bytes) -> bytes:
    return b"emq:{" + queue + b"}:"


def job_key(queue: bytes, job_id: bytes) -> bytes:
    return prefix(queue) + b"job:" + job_id


def deep_json(total_bytes: int = 10 * 1024) -> bytes:
    """A JSON array nested as deep as ``total_bytes`` allows: ``[[[...]]]``."""
    depth = total_bytes // 2
    return b"[" * depth + b"]" * depth


def wide_json(total_bytes: int) -> bytes:
    return json.dumps({"blob": "x" * total_bytes}).encode()


def write_job(client: redis.Redis | redis.RedisCluster, queue: bytes, job_id: bytes, state: bytes | None, score: Any,
              fields: dict[bytes, bytes] | None = None, *, in_set: bytes | None = None) -> None:
    """A job's hash and its id in one set, written raw (no script checks anything)."""
    client.sadd(REGISTRY, queue)
    hash_fields: dict[Any, Any] = {b"attempts": b"0", b"payload": b"{}", **({b"state": state} if state is not None else {}),
                   **(fields or {})}
    client.hset(job_key(queue, job_id), mapping=hash_fields)
    client.zadd(prefix(queue) + (in_set or state or b"pending"), {job_id: score})


def as_str(name: bytes) -> str:
    """How a browser sends a name back: its bytes as UTF-8, anything else as U+FFFD."""
    return name.decode(errors="replace")


def console_urls(queues: list[str], jobs: list[tuple[str, str]]) -> Iterator[str]:
    """Every page, fragment and API read of the console for these queues and jobs."""
    yield "/"
    yield "/?filter=a"
    yield "/cluster/"
    yield "/sweeper/"
    yield "/workers/"
    yield "/audit/"
    yield "/search/"
    yield "/failures/"
    yield "/metrics"
    yield "/api/queues"
    for queue in queues:
        q = {"q": queue}
        for state in STATES:
            for order in ("asc", "desc"):
                yield "/queue/?" + urlencode({**q, "state": state, "order": order})
            yield "/api/queue/jobs?" + urlencode({**q, "state": state})
        yield "/queue/?" + urlencode({**q, "range": "24h"})
        yield "/failures/?" + urlencode(q)
        yield "/api/queue?" + urlencode(q)
        yield "/search/?" + urlencode({**q, "state": "failed", "error": "x"})
        yield "/?" + urlencode({"filter": queue})
    for queue, job_id in jobs:
        q = {"q": queue, "id": job_id}
        yield "/job/?" + urlencode(q)
        yield "/job/?" + urlencode({**q, "full": "1"})
        yield "/job/payload/?" + urlencode(q)
        yield "/api/job?" + urlencode(q)
        yield "/find/?" + urlencode({"id": job_id})
        yield "/find/?" + urlencode(q)


FRAGMENT_TARGETS = {"/": "overview-rows", "/queue/": "queue-jobs", "/job/": "job-core", "/search/": "search-results"}


def _where(error: BaseException) -> str:
    """The innermost frame of the console's own code that the error passed through."""
    frames = [f for f in traceback.extract_tb(error.__traceback__) if "/site-packages/" not in f.filename]
    return " at " + " < ".join(f"{'/'.join(f.filename.rsplit('/', 2)[-2:])}:{f.lineno}" for f in frames[::-1][:4])


def _get(client: Client, url: str, headers: dict[str, str]) -> str | None:
    """None for an answer below 500; else what went wrong."""
    try:
        response = client.get(url, headers=headers)
    except Exception as error:  # the test client raises what the view raised: that is the answer 500
        return f"{type(error).__name__}: {str(error)[:200]}{_where(error)}"
    return f"status {response.status_code}" if response.status_code >= 500 else None


def server_errors(client: Client, urls: Iterable[str]) -> list[tuple[str, str]]:
    """(url, what went wrong) for every request answered 5xx (Redis is up: a 503 is a bug here too)."""
    bad = []
    for url in urls:
        target = FRAGMENT_TARGETS.get(url.split("?")[0])
        for headers in ({}, {"HX-Request": "true", "HX-Target": target} if target else None):
            if headers is None:
                continue
            problem = _get(client, url, headers)
            if problem:
                bad.append((url + (" [fragment]" if headers else ""), problem))
    return bad


class _ShownText(HTMLParser):
    """What a browser shows of a page: its text and its tooltips (not ids, values or data attributes)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.shown: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "template"):
            self._hidden += 1
        self.shown += [value or "" for name, value in attrs if name in ("title", "aria-label", "placeholder")]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "template") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.shown.append(data)


def invisible_shown(html: str) -> list[str]:
    """The invisible or bidi characters a browser would show of ``html`` as they are (as U+XXXX)."""
    parser = _ShownText()
    parser.feed(html)
    return sorted({f"U+{ord(c):04X}" for c in INVISIBLE.findall("".join(parser.shown)) if c not in "\n\t\r"})
