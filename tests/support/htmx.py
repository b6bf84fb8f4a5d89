"""Requests as htmx sends them: the page asks for a fragment (``HX-Request``, and the element it swaps)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from django.test import Client

if TYPE_CHECKING:
    from django.test.client import _MonkeyPatchedWSGIResponse as TestResponse


def htmx_get(client: Client, url: str, target: str) -> TestResponse:
    return client.get(url, headers={"HX-Request": "true", "HX-Target": target})


def htmx_post(client: Client, url: str, data: Mapping[str, object]) -> TestResponse:
    return client.post(url, data, headers={"HX-Request": "true"})
