"""``/views/``: saved views, their permalinks, pins and deletion.

A permalink (``/views/ID/``) checks the reader first (a private view of
someone else is a 404, a view of a queue the reader's role or grants leave
out is a 403) and only then sends them to the page the view is.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from dashboard.viewing import viewers_only
from queues import InvalidInput, Unavailable

from .services import ViewForbidden, ViewMissing, view_delete, view_for, view_path, view_pin, view_save, views_visible


def _list(request: HttpRequest, *, message: str = "", status: int = 200) -> HttpResponse:
    views = views_visible(request.user)
    pinned = set(request.user.pinned_views.values_list("pk", flat=True))  # type: ignore[union-attr]
    rows = [{"view": view, "path": view_path(view), "pinned": view.pk in pinned,
             "mine": view.owner_id == request.user.pk} for view in views]
    return render(request, "dashboard/saved_views/list.html",
                  {"rows": rows, "message": message, "saved": request.GET.get("saved", ""), "now_ms": 0}, status=status)


def _refused(request: HttpRequest, error: Exception) -> HttpResponse:
    status = 404 if isinstance(error, ViewMissing) else 403
    return render(request, "dashboard/saved_views/refused.html", {"reason": str(error), "now_ms": 0}, status=status)


@require_GET
@viewers_only
def views_page(request: HttpRequest) -> HttpResponse:
    return _list(request)


@require_POST
@viewers_only
def view_save_action(request: HttpRequest) -> HttpResponse:
    data: dict[str, Any] = {k: v for k, v in request.POST.items() if k != "csrfmiddlewaretoken"}
    try:
        view = view_save(user=request.user, name=data.pop("name", ""), kind=data.pop("kind", ""), data=data,
                         shared=data.pop("shared", "") == "1", freeze=data.pop("freeze", "") == "1")
    except ViewForbidden as error:
        return _refused(request, error)
    except InvalidInput as error:
        return _list(request, message=f"not saved: {error}", status=400)
    except Unavailable as error:
        return _list(request, message=f"not saved: {error}", status=503)
    return HttpResponseRedirect(f"{reverse('views')}?saved={view.pk}")


@require_GET
@viewers_only
def view_open(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        view = view_for(request.user, pk)
    except (ViewMissing, ViewForbidden) as error:
        return _refused(request, error)
    return HttpResponseRedirect(view_path(view))


@require_POST
@viewers_only
def view_pin_action(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        view_pin(user=request.user, view_id=pk, pinned=request.POST.get("pinned", "1") == "1")
    except (ViewMissing, ViewForbidden) as error:
        return _refused(request, error)
    return HttpResponseRedirect(reverse("views"))


@require_POST
@viewers_only
def view_delete_action(request: HttpRequest, pk: int) -> HttpResponse:
    """Deletes one of the caller's own views; another's is left as it is (and said so)."""
    if not view_delete(user=request.user, view_id=pk):
        return _list(request, message=f"not deleted: you have no saved view {pk}", status=404)
    return HttpResponseRedirect(reverse("views"))
