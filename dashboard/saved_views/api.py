"""``/api/views``: saved views as JSON, with the same roles, grants and privacy as the pages."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest
from ninja import Path, Router, Schema, Status
from pydantic import Field

from dashboard.api.schemas import ErrorOut
from dashboard.orders.models import ApiToken
from dashboard.orders.tokens import READ_ONLY
from dashboard.redaction import MASKED_READER, reader_for
from dashboard.roles import VIEW_PERMISSION, can_view

from .models import NAME_LIMIT, SavedView
from .services import IDS_MAX, ViewForbidden, ViewMissing, view_delete, view_for, view_jobs, view_path, view_save, views_visible

router = Router(tags=["saved views"])
ERRORS: Final = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 503: ErrorOut}
MAX_ID: Final = 2**63 - 1


class ViewIn(Schema):
    name: str = Field(min_length=1, max_length=NAME_LIMIT)
    kind: Literal["search", "queue", "failures"]
    params: dict[str, str] = Field(description="The page's query: for a search its form fields (q, in, state, "
                                               "id_prefix, payload, field, error, worker, group, enqueued_after, ...), "
                                               "for a queue page q, state, order, limit; for failures q")
    shared: bool = Field(False, description="Shared with the team (each reader still held to their queue grants)")
    freeze: bool = Field(False, description="A search's times made absolute and its window ended now: the link then "
                                            "names the same jobs every time")


class ViewOut(Schema):
    id: int
    name: str
    kind: str
    queue: str = Field(description='"" for a search of every queue')
    params: dict[str, str]
    shared: bool
    frozen: bool
    owner: str
    created_at: datetime
    path: str = Field(description="The page the view is")
    permalink: str


class ViewListOut(Schema):
    views: list[ViewOut]


class JobIdOut(Schema):
    queue: str
    id: str


class ViewJobsOut(Schema):
    view: int
    kind: str
    ids: list[JobIdOut] = Field(description=f"What the view finds now, in its page's order (at most {IDS_MAX})")
    complete: bool = Field(description="False when the search stopped at its bounds or the page has more")
    summary: str
    groups: list[dict[str, Any]] = Field(description="For failures by cause: the largest groups")


class DeletedOut(Schema):
    deleted: int


def _reader(request: HttpRequest) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    if not can_view(user):
        raise PermissionDenied(f"{user} may not view the console (needs {VIEW_PERMISSION})")
    return user


def _writer(request: HttpRequest) -> Any:
    user = _reader(request)
    if getattr(request, "emq_token_scope", ApiToken.Scope.ACT) != ApiToken.Scope.ACT:
        raise PermissionDenied(READ_ONLY)
    return user


def _out(view: SavedView) -> dict[str, Any]:
    return {"id": view.pk, "name": view.name, "kind": view.kind, "queue": view.queue,
            "params": {k: str(v) for k, v in view.params.items()}, "shared": view.shared, "frozen": view.frozen,
            "owner": view.owner.get_username(), "created_at": view.created_at, "path": view_path(view),
            "permalink": f"/views/{view.pk}/"}


def _opened(user: Any, view_id: int) -> SavedView:
    try:
        return view_for(user, view_id)
    except ViewMissing as missing:
        raise Http404(str(missing)) from None
    except ViewForbidden as forbidden:
        raise PermissionDenied(str(forbidden)) from None


@router.get("", response={200: ViewListOut, **ERRORS}, summary="Your saved views and the team's shared ones")
def views_list(request: HttpRequest) -> Any:
    return {"views": [_out(view) for view in views_visible(_reader(request))]}


@router.post("", response={201: ViewOut, **ERRORS},
             summary="Save a search, a queue page or failures by cause under a name (replaces your view of that name)")
def views_save(request: HttpRequest, body: ViewIn) -> Any:
    user = _writer(request)
    try:
        view = view_save(user=user, name=body.name, kind=body.kind, data=body.params, shared=body.shared,
                         freeze=body.freeze)
    except ViewForbidden as forbidden:
        raise PermissionDenied(str(forbidden)) from None
    return Status(201, _out(view))


@router.get("/{view_id}", response={200: ViewOut, **ERRORS}, summary="One saved view")
def views_detail(request: HttpRequest, view_id: int = Path(..., ge=1, le=MAX_ID)) -> Any:
    return _out(_opened(_reader(request), view_id))


@router.get("/{view_id}/jobs", response={200: ViewJobsOut, **ERRORS},
            summary="What a saved view finds now (a frozen search: the same ids every time)")
def views_jobs(request: HttpRequest, view_id: int = Path(..., ge=1, le=MAX_ID)) -> Any:
    user = _reader(request)
    acting = getattr(request, "emq_token_scope", ApiToken.Scope.ACT) == ApiToken.Scope.ACT
    return view_jobs(_opened(user, view_id), user_key=user.pk,
                     reader=reader_for(user) if acting else MASKED_READER).as_dict()


@router.delete("/{view_id}", response={200: DeletedOut, **ERRORS}, summary="Delete one of your saved views")
def views_delete(request: HttpRequest, view_id: int = Path(..., ge=1, le=MAX_ID)) -> Any:
    user = _writer(request)
    if not view_delete(user=user, view_id=view_id):
        raise Http404(f"you have no saved view {view_id}")
    return {"deleted": view_id}
