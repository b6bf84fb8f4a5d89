"""Saving, finding and opening saved views, each reader held to their role and queue grants.

A view keeps its page's query; opening it reads through ``queues`` as the page
would, bounded the same way (a search's steps, a page of rows, the largest
failure groups). A frozen search keeps absolute times only, and its window
ends at the moment it was frozen: its link finds the same jobs every time,
however many fail after it (a job moved out of the state since is no longer
among them, and the answer says how many were looked at).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final
from urllib.parse import urlencode

from django.conf import settings
from django.db import IntegrityError, transaction
from django.urls import reverse

from dashboard.actions.access import see_refusal
from dashboard.presenters import Window
from dashboard.redaction import MASKED_READER, Reader, masked_text_keeper, maskers_read, search_problem
from dashboard.roles import can_view
from dashboard.search.budget import SLOTS, console_limits, process_pacer
from dashboard.search.requests import FORM_FIELDS, SearchRequest
from dashboard.services import read
from dashboard.viewing import NO_ROLE_REFUSAL
from queues import EchoMQ, InvalidInput, validate_queue_name
from queues.failures import groups
from queues.search import Limits, Search

from .models import NAME_LIMIT, SavedView

# A queue page's own filters (its cursor is not saved: a view opens at the first page).
QUEUE_FIELDS: Final = ("state", "order", "limit")
SEARCH_FIELDS: Final = ("q", "in", *FORM_FIELDS)
# The most ids one opening of a view lists, and the Redis time a search for them may take.
IDS_MAX: Final = 1000
VIEW_REDIS_S: Final = 2.0
VIEWS_PER_USER: Final = 200


class ViewMissing(LookupError):
    """No such view, or another user's private one (told apart from nothing, so its name does not leak)."""


class ViewForbidden(PermissionError):
    """The reader may not see the view's queue (their role or grants): never its data."""


@dataclass(frozen=True, slots=True)
class ViewJobs:
    """What a view finds now: ids (queue, id) in the page's order, and whether that is all of them."""

    view_id: int
    kind: str
    ids: list[tuple[str, str]]
    complete: bool
    summary: str
    groups: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"view": self.view_id, "kind": self.kind, "ids": [{"queue": q, "id": i} for q, i in self.ids],
                "complete": self.complete, "summary": self.summary, "groups": self.groups}


def _clock(queue: str) -> int:
    return read(lambda mq: mq.server_time_ms(queue or "emq"))


def _texts(data: Mapping[str, Any], fields: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name in fields:
        value = data.get(name)
        if value is None or value == "":
            continue
        if not isinstance(value, str | int):
            raise InvalidInput(f"{name} must be text, not {type(value).__name__}")
        out[name] = str(value)
    return out


def _search_params(data: Mapping[str, Any], *, freeze: bool) -> tuple[str, dict[str, str]]:
    typed = _texts(data, SEARCH_FIELDS)
    queue = typed.get("q", "").strip()
    now_ms = _clock(queue)
    search = SearchRequest.parse(typed, now_ms=now_ms)
    if not freeze:
        return search.queue, typed
    query = search.query
    # The window ends now: jobs that reach the state later are not the set this link names.
    if query.state in ("done", "failed") and query.finished_before_ms is None:
        query = replace(query, finished_before_ms=now_ms)
    elif query.state in ("pending", "active") and query.enqueued_before_ms is None:
        query = replace(query, enqueued_before_ms=now_ms)
    frozen = SearchRequest(query.checked(), search.queue, search.queue_filter)
    return frozen.queue, frozen.params()


def view_params(kind: str, data: Mapping[str, Any], *, freeze: bool = False) -> tuple[str, dict[str, str]]:
    """The queue a view reads and the params it keeps, checked as its page checks them (InvalidInput, in words)."""
    if kind == SavedView.Kind.SEARCH:
        return _search_params(data, freeze=freeze)
    if freeze:
        raise InvalidInput("only a search has a time window to freeze")
    queue = validate_queue_name(str(data.get("q") or ""))
    if kind == SavedView.Kind.QUEUE:
        params = _texts(data, QUEUE_FIELDS)
        Window.from_query(queue, params)
        return queue, {"q": queue, **params}
    if kind == SavedView.Kind.FAILURES:
        return queue, {"q": queue}
    raise InvalidInput(f"a view is a search, a queue page or failures by cause, not {kind!r}")


def view_save(*, user: Any, name: str, kind: str, data: Mapping[str, Any], shared: bool = False,
              freeze: bool = False) -> SavedView:
    """Saves (or replaces, by name) one of the user's views; refused in words when the user may not see its queue."""
    name = (name or "").strip()
    if not name or len(name) > NAME_LIMIT:
        raise InvalidInput(f"a view's name is 1 to {NAME_LIMIT} characters")
    queue, params = view_params(kind, data, freeze=freeze)
    refusal = see_refusal(user, queue)
    if refusal is not None:
        raise ViewForbidden(refusal)
    with transaction.atomic():
        mine = SavedView.objects.filter(owner=user)
        if not mine.filter(name=name).exists() and mine.count() >= VIEWS_PER_USER:
            raise InvalidInput(f"you have {VIEWS_PER_USER} saved views: delete one first")
        try:
            view, _ = SavedView.objects.update_or_create(
                owner=user, name=name,
                defaults={"kind": kind, "queue": queue, "params": params, "shared": shared, "frozen": freeze})
        except IntegrityError:
            raise InvalidInput(f"a view named {name!r} is being saved at this moment; try again") from None
    return view


def _readable(user: Any, view: SavedView) -> SavedView:
    if view.owner_id != user.pk and not view.shared:
        raise ViewMissing(f"there is no saved view {view.pk}")
    refusal = see_refusal(user, view.queue)
    if refusal is not None:
        raise ViewForbidden(refusal)
    return view


def view_for(user: Any, view_id: int) -> SavedView:
    """The view, when ``user`` may open it: :class:`ViewMissing` (404) or :class:`ViewForbidden` (403) otherwise."""
    if not user.is_authenticated:
        raise ViewForbidden("sign in first")
    if not can_view(user):
        raise ViewForbidden(NO_ROLE_REFUSAL)
    view = SavedView.objects.filter(pk=view_id).first()
    if view is None:
        raise ViewMissing(f"there is no saved view {view_id}")
    return _readable(user, view)


def views_visible(user: Any) -> list[SavedView]:
    """The user's own views and the team's shared ones, leaving out those on queues the user may not see."""
    from django.db.models import Q

    found = SavedView.objects.filter(Q(owner=user) | Q(shared=True)).select_related("owner")[:VIEWS_PER_USER * 5]
    return [view for view in found if see_refusal(user, view.queue) is None]


def pinned_views(user: Any) -> list[SavedView]:
    """The views the user pinned to the overview that they may still open."""
    if not user.is_authenticated:
        return []
    found = user.pinned_views.select_related("owner")[:50]
    return [view for view in found if (view.owner_id == user.pk or view.shared)
            and see_refusal(user, view.queue) is None]


def view_delete(*, user: Any, view_id: int) -> bool:
    """Deletes one of the user's own views; another's (or none) deletes nothing."""
    deleted, _ = SavedView.objects.filter(owner=user, pk=view_id).delete()
    return bool(deleted)


def view_pin(*, user: Any, view_id: int, pinned: bool) -> SavedView:
    view = view_for(user, view_id)
    if pinned:
        view.pinned_by.add(user)
    else:
        view.pinned_by.remove(user)
    return view


def view_path(view: SavedView) -> str:
    """The page the view is: its path and query string."""
    page = {SavedView.Kind.SEARCH: "search", SavedView.Kind.QUEUE: "queue", SavedView.Kind.FAILURES: "failures"}
    return f"{reverse(page[SavedView.Kind(view.kind)])}?{urlencode(view.params)}"


def view_search(view: SavedView, *, now_ms: int | None = None) -> SearchRequest:
    typed = {k: str(v) for k, v in view.params.items() if isinstance(v, str | int)}
    return SearchRequest.parse(typed, now_ms=_clock(view.queue) if now_ms is None else now_ms)


def _search_ids(mq: EchoMQ, view: SavedView, *, limit: int, redis_s: float,
                reader: Reader = MASKED_READER) -> tuple[list[tuple[str, str]], bool, str]:
    """The ids a saved search finds now, as ``reader`` may be told of them (none by a masked value)."""
    search = view_search(view)
    queues = search.queues(mq.known_queues().names) if not search.queue else [search.queue]
    if not queues:
        return [], True, "no queue to search"
    limits = console_limits(Limits(max_matches=limit, seconds=10.0, redis_seconds=redis_s, detail=0))
    maskers = maskers_read(mq, reader, queues[:limits.max_queues])
    problem = search_problem(search.query, maskers)
    if problem:
        return [], False, problem
    keep = masked_text_keeper(search.query, maskers)
    if keep is not None:
        # A checked text search needs each match's head.
        limits = replace(limits, detail=None)
    engine = Search(search.query, queues, limits, pacer=process_pacer(), keep=keep)
    ids = [(m.queue, m.id) for step in engine.steps(mq) for m in step.matches]
    return ids, not engine.stopped and not engine.skipped_queues, engine.summary()


def view_jobs(view: SavedView, *, user_key: object, limit: int = IDS_MAX, reader: Reader = MASKED_READER) -> ViewJobs:
    """What the view shows now, bounded: a search's first ``limit`` matches (at most VIEW_REDIS_S of Redis time),
    a queue page's rows, or the largest failure groups."""
    if view.kind == SavedView.Kind.SEARCH:
        with SLOTS.held(user_key):
            ids, complete, summary = read(lambda mq: _search_ids(mq, view, limit=min(limit, IDS_MAX),
                                                                 redis_s=VIEW_REDIS_S, reader=reader))
        return ViewJobs(view.pk, view.kind, ids, complete, summary, [])
    if view.kind == SavedView.Kind.QUEUE:
        window = Window.from_query(view.queue, {k: str(v) for k, v in view.params.items()})
        page = read(lambda mq: mq.page(view.queue, window.state, **window.where()))
        ids = [(view.queue, row.id) for row in page.rows]
        return ViewJobs(view.pk, view.kind, ids, not page.has_more,
                        f"{len(ids)} of {page.total} {window.state} jobs of {view.queue}", [])
    found = read(lambda mq: mq.run(groups(view.queue)))
    return ViewJobs(view.pk, view.kind, [], found.group_count <= len(found.groups),
                    found.problem or f"{found.failed} failed jobs in {found.group_count} groups",
                    [g.as_dict() for g in found.groups])


def view_count(mq: EchoMQ, view: SavedView, *, at_most: int, redis_s: float = VIEW_REDIS_S) -> int:
    """How many jobs the view finds now, counting to ``at_most`` (an alert's threshold: no further),
    within ``redis_s`` of Redis time; for failures by cause, the failed jobs of the queue."""
    if view.kind == SavedView.Kind.SEARCH:
        ids, _, _ = _search_ids(mq, view, limit=max(at_most, 1), redis_s=min(redis_s, settings.EMQ_SEARCH_REDIS_S))
        return len(ids)
    if view.kind == SavedView.Kind.QUEUE:
        window = Window.from_query(view.queue, {k: str(v) for k, v in view.params.items()})
        return int(mq.page(view.queue, window.state, limit=1).total)
    return int(mq.run(groups(view.queue)).failed)
