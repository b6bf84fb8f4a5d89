"""What a search form needs on any page: the states it can search, and a field for each filter of the table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from queues import STATES
from queues.search import FILTERS, Match, SearchFilter

from ..search.items import match_item

register = template.Library()


@register.simple_tag
def job_states() -> tuple[str, ...]:
    return STATES


@register.inclusion_tag("dashboard/search/_filter_fields.html")
def filter_fields(form: Mapping[str, Any] | None, *, short: bool) -> dict[str, Any]:
    """A field for each filter of :data:`queues.search.FILTERS` that the form shows, with the value typed: on the
    short form (``short``) the filters marked for it, on the search page's the others."""
    values = form or {}
    shown: list[tuple[SearchFilter, str]] = []
    for f in FILTERS:
        value = str(values.get(f.name) or "")
        if f.short_form == short and (value or not f.only_when_given):
            shown.append((f, value))
    return {"filters": shown}


@register.simple_tag
def deployment_match(match: Match, deployment: str) -> SafeString:
    """A match found on ``deployment`` as the search page lists it, its link opening the job there."""
    return mark_safe(match_item(match, show_queue=True, job_url=reverse("job"), deployment=deployment))
