"""The one reader of ``Authorization: Bearer <token>``: ``/metrics``, the JSON API and ``/api/orders`` alike.

RFC 6750's form, ``Bearer`` (any case), one or more spaces, then one token
(RFC 7235 allows several spaces there, so ``Bearer  <token>`` is the same
credential everywhere); anything else is not a bearer credential at all.
"""

from __future__ import annotations

import re
from typing import Final

from django.http import HttpRequest

NOT_BEARER: Final = "the Authorization header must be: Bearer <token>"
_BEARER: Final = re.compile(r"[Bb][Ee][Aa][Rr][Ee][Rr] +([A-Za-z0-9._~+/-]+=*) *")


def bearer_token(header: str) -> str | None:
    """The token of a ``Bearer`` credential, or None when ``header`` is not one."""
    match = _BEARER.fullmatch(header)
    return match.group(1) if match else None


def request_bearer(request: HttpRequest) -> tuple[bool, str | None]:
    """(whether the request sent an Authorization header, the bearer token in it or None)."""
    header = request.headers.get("Authorization")
    if header is None:
        return False, None
    return True, bearer_token(header)
