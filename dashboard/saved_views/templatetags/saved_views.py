"""``{% load saved_views %}``: a page's query as the hidden fields of its "Save this view" form."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.saved_views.services import QUEUE_FIELDS, SEARCH_FIELDS

register = template.Library()


@register.filter
def view_fields(source: Any, kind: str) -> list[tuple[str, str]]:
    """(name, value) for each of the page's filters that holds a value: a search's form, a queue page's window."""
    if kind == "search":
        return [(name, str(source.get(name))) for name in SEARCH_FIELDS if source.get(name)]
    if kind == "queue":
        values = {"q": source.queue, "state": source.state, "order": source.order, "limit": source.limit}
        return [(name, str(values[name])) for name in ("q", *QUEUE_FIELDS)]
    return [("q", str(source))]
