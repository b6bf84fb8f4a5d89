"""What a search form needs on any page: the states it can search."""

from __future__ import annotations

from django import template

from queues import STATES

register = template.Library()


@register.simple_tag
def job_states() -> tuple[str, ...]:
    return STATES
