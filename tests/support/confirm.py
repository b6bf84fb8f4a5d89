"""Posting an action the way a page does: ask, read the confirmation step, confirm it."""

from __future__ import annotations

import re
from typing import Any

from django.test import Client

TOKEN = re.compile(r'name="confirmation" value="([^"]+)"')


def confirmation_token(html: str) -> str:
    """The token of the confirmation step in ``html``; fails the test when there is none."""
    match = TOKEN.search(html)
    assert match, f"no confirmation step in: {html[:500]}"
    return match.group(1)


def confirmed_post(client: Client, url: str, data: dict[str, Any], **headers: str) -> Any:
    """Posts ``data``, then posts it again with the confirmation the first answer carried."""
    asked = client.post(url, data, headers={"HX-Request": "true", **headers})
    token = confirmation_token(asked.content.decode())
    return client.post(url, {**data, "confirmation": token}, headers={"HX-Request": "true", **headers})


def post_confirming(client: Client, url: str, data: dict[str, Any], **headers: str) -> Any:
    """Posts ``data`` as an operator would press it: confirms when the answer is a confirmation step."""
    answer = client.post(url, data, headers={"HX-Request": "true", **headers})
    match = TOKEN.search(answer.content.decode())
    if match is None:
        return answer
    return client.post(url, {**data, "confirmation": match.group(1)}, headers={"HX-Request": "true", **headers})
