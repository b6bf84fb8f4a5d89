"""From what ``queues`` reads (and the audit rows) to the API's JSON shapes, bounded in bytes."""

from __future__ import annotations

import re
from typing import Any, Final

from dashboard.actions.models import AuditEntry
from dashboard.pages.job import JobPageData
from dashboard.presenters import read_error_text
from queues.reads import Event, Page, QueueStats, payload_preview

PAYLOAD_LIMIT: Final = 64 * 1024
FIELD_LIMIT: Final = 4 * 1024


def _text(value: bytes, limit: int) -> str:
    return value[:limit].decode(errors="replace")


_INTEGER: Final = re.compile(r"-?[0-9]{1,14}")


def number(text: str) -> int | None:
    """A count the hash or history holds as text, as a number; None when it holds something else (odd data)."""
    return int(text) if _INTEGER.fullmatch(text) else None


def stats_out(stats: QueueStats) -> dict[str, Any]:
    return {"now_ms": stats.now_ms, **stats.counts, "due": stats.due, "delayed": stats.delayed,
            "lapsed": stats.lapsed, "oldest_due_age_ms": stats.oldest_due_age_ms, "next_due_ms": stats.next_due_ms,
            "last_event_id": stats.last_event_id, "paused": stats.paused, "paused_since_ms": stats.paused_since_ms,
            "paused_by": stats.paused_by, "paused_reason": stats.paused_reason}


def queue_out(name: str, result: QueueStats | Exception, latency: dict[str, Any] | None = None) -> dict[str, Any]:
    if isinstance(result, QueueStats):
        return {"queue": name, "stats": stats_out(result), "error": None, "latency": latency}
    return {"queue": name, "stats": None, "error": read_error_text(result)}


def page_out(page: Page) -> dict[str, Any]:
    rows = [{"id": r.id, "score": r.score, "state": r.state, "attempts": number(r.attempts),
             "payload_head": r.payload_head.decode(errors="replace"), "payload_length": r.payload_length,
             "last_error": r.last_error, "exists": r.exists, "cursor": r.cursor} for r in page.rows]
    return {"queue": page.queue, "state": page.state, "order": page.order, "now_ms": page.now_ms,
            "total": page.total, "start": page.start, "has_more": page.has_more, "rows": rows,
            "next_after": page.rows[-1].cursor if page.has_more and page.rows else None}


def event_out(event: Event) -> dict[str, Any]:
    return {"event": event.id, "move": event.move, "from_state": event.source, "to_state": event.target,
            "attempts": number(event.attempts), "actor": event.actor, "ts_ms": event.ts_ms,
            "release": event.release, "host": event.host}


def job_out(data: JobPageData) -> dict[str, Any]:
    view = data.view
    encoding, payload, cut = payload_preview(view.payload, PAYLOAD_LIMIT)
    fields = {name: _text(value, FIELD_LIMIT) for name, value in view.fields.items() if name != "payload"}
    return {"queue": view.queue, "id": view.id, "now_ms": view.now_ms, "exists": view.exists, "state": view.state,
            "attempts": number(view.attempts), "payload": payload, "payload_encoding": encoding,
            # The length is the hash field's (HSTRLEN), whatever was read of it; a payload too long to read
            # whole comes as its stored preview, and says so.
            "payload_length": view.payload_length, "payload_cut": cut or not view.payload_whole,
            "payload_preview": not view.payload_whole, "fields": fields, "scores": view.scores,
            "lease_left_ms": view.lease_left_ms, "warnings": view.warnings,
            "worker_gone": data.worker_gone,
            "history": [event_out(e) for e in data.history], "history_error": data.history_error}


def audit_entry(entry: AuditEntry) -> dict[str, Any]:
    return {"id": entry.pk, "created_at": entry.created_at, "finished_at": entry.finished_at,
            "username": entry.username, "queue": entry.queue, "action": entry.action, "scope": entry.scope,
            "jobs": [_seen_job(job) for job in entry.jobs], "parameters": entry.parameters, "outcome": entry.outcome,
            "result": entry.result,
            "moved": entry.moved, "skipped": entry.skipped, "missing": entry.missing, "errors": entry.errors,
            "cancel_requested_by": entry.cancel_requested_by}


def audit_summary(entry: AuditEntry, *, job_count: int) -> dict[str, Any]:
    """The entry as a page of the log lists it, its jobs counted (by the database) rather than listed."""
    return {"id": entry.pk, "created_at": entry.created_at, "finished_at": entry.finished_at,
            "username": entry.username, "queue": entry.queue, "action": entry.action, "scope": entry.scope,
            "job_count": job_count, "parameters": entry.parameters, "outcome": entry.outcome, "result": entry.result,
            "moved": entry.moved, "skipped": entry.skipped, "missing": entry.missing, "errors": entry.errors,
            "cancel_requested_by": entry.cancel_requested_by}


def _seen_job(job: Any) -> Any:
    """A job as the audit row keeps it, with its attempts as a number (None: any)."""
    if isinstance(job, dict) and isinstance(job.get("attempts"), str):
        return {**job, "attempts": number(job["attempts"])}
    return job
