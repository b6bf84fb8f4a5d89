"""Who may scrape ``/metrics``: a caller from an address in ``EMQ_METRICS_ALLOW``, or an API token
whose user may view the console. Prometheus sends ``Authorization: Bearer`` (its ``authorization``
scrape setting); a scraper on the same host or network may be let in by address instead.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest

from dashboard.bearer import NOT_BEARER, request_bearer
from dashboard.orders.tokens import api_token_user
from dashboard.roles import VIEW_PERMISSION, can_view

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _parse(entries: tuple[str, ...]) -> tuple[Network, ...]:
    networks: list[Network] = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ImproperlyConfigured(f"EMQ_METRICS_ALLOW: {entry!r} is not an address or a CIDR range") from None
    return tuple(networks)


def metrics_networks() -> tuple[Network, ...]:
    return _parse(tuple(settings.EMQ_METRICS_ALLOW))


def address_allowed(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return any(ip.version == net.version and ip in net for net in metrics_networks())


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    reason: str


def metrics_refusal(request: HttpRequest) -> Refusal | None:
    """None when the caller may scrape; otherwise 401 (no usable credential) or 403 (not allowed)."""
    sent, token = request_bearer(request)
    if sent:
        if token is None:
            return Refusal(401, NOT_BEARER)
        user = api_token_user(token)
        if user is None:
            return Refusal(401, "the API token is not valid")
        if not can_view(user):
            return Refusal(403, f"the token's user may not view the console (needs {VIEW_PERMISSION})")
        return None
    if address_allowed(request.META.get("REMOTE_ADDR", "")):
        return None
    if metrics_networks():
        return Refusal(403, "this address is not in EMQ_METRICS_ALLOW; send Authorization: Bearer <token>")
    return Refusal(401, "send Authorization: Bearer <token> (an API token of a console viewer or operator)")
