"""A found job as one list item, built in Python (as the queue page's rows are: a template per item costs
hundreds of µs, and a search may stream hundreds of them). Every value from Redis passes through ``escape``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final
from urllib.parse import quote

from django.urls import reverse
from django.utils.html import escape

from queues.search import Match

from ..templatetags.console import server_time, visible

# daphne refuses messages over 1 MiB; browsers and proxies are happier well below 64 KiB.
MESSAGE_BYTES: Final = 48 * 1024


def _payload(match: Match) -> str:
    head = match.payload_head
    try:
        text, is_bytes = head.decode(), False
    except UnicodeDecodeError as error:
        # A head cut inside a multi-byte character is still text.
        if error.start >= len(head) - 3 and match.payload_length > len(head):
            text, is_bytes = head[:error.start].decode(errors="replace"), False
        else:
            text, is_bytes = head[:48].hex(" "), True
    out = ('<span class="badge">bytes</span> ' if is_bytes else "") + visible(text)
    if match.payload_length > len(head):
        out += f'<span class="muted">… ({match.payload_length} bytes)</span>'
    return out


def _when(match: Match) -> str:
    if match.found_in == "pending":
        return f'due <span data-due="{match.score}">{escape(server_time(match.score))}</span>'
    if match.found_in == "active":
        return f'lease <span data-deadline="{match.score}">{escape(server_time(match.score))}</span>'
    return (f'{match.found_in} <span title="{escape(server_time(match.score))}" data-since="{match.score}">'
            f'{escape(server_time(match.score))}</span>')


def match_item(match: Match, *, show_queue: bool, job_url: str, deployment: str = "") -> str:
    """The match as a list item; its link opens the job on ``deployment`` when one is named (else the page's)."""
    warning = ""
    if match.state != match.found_in:
        warning = (f' <span class="warn-badge">⚠ found in {escape(match.found_in)} but its hash says '
                   f'{escape(match.state or "(no state)")}</span>')
    queue = f'<span class="mono queue">{visible(match.queue)}</span> ' if show_queue else ""
    link = f"{job_url}?q={quote(match.queue, safe='')}&amp;id={quote(match.id, safe='')}"
    if deployment:
        link += f"&amp;d={quote(deployment, safe='')}"
    parts = [f'<li class="search-match {escape(match.found_in)}">',
             f'<div class="match-head">{queue}<a class="mono id" href="{link}">{visible(match.id)}</a>{warning}'
             f' <span class="muted">attempts {escape(match.attempts or "0")} · {_when(match)}</span></div>',
             f'<div class="payload mono">{_payload(match)}</div>']
    if match.last_error:
        parts.append(f'<div class="error-text">{visible(match.last_error)}</div>')
    if match.worker:
        parts.append(f'<div class="muted worker">worker {visible(match.worker)}</div>')
    parts.append("</li>")
    return "".join(parts)


def match_messages(list_id: str, matches: Iterable[Match], *, show_queue: bool) -> Iterator[str]:
    """Matches appended to the page's list, in messages of at most about MESSAGE_BYTES each."""
    job_url = reverse("job")
    opening, closing = f'<ol id="{list_id}" hx-swap-oob="beforeend">', "</ol>"
    batch: list[str] = []
    size = 0
    for match in matches:
        item = match_item(match, show_queue=show_queue, job_url=job_url)
        if batch and size + len(item.encode()) > MESSAGE_BYTES:
            yield opening + "".join(batch) + closing
            batch, size = [], 0
        batch.append(item)
        size += len(item.encode())
    if batch:
        yield opening + "".join(batch) + closing
