"""Placing an order: parse the request, then admit it with one script on ``{orders}``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from queues import EchoMQ

from .gateway import DEFAULT_CONFIG, GatewayConfig, InvalidOrder, PlaceOrder, order_from_payload, parse_place
from .orders import ORDERS_QUEUE, Admission, admit_order


@dataclass(frozen=True, slots=True)
class Placement:
    """The parsed command and what the script said; ``order_id`` is the one to tell the caller."""

    command: PlaceOrder
    admission: Admission
    # A duplicate's fields whose values differ from the order placed first under its client order id.
    differs: tuple[str, ...] = ()

    @property
    def order_id(self) -> str:
        return self.admission.order_id

    @property
    def admitted(self) -> bool:
        return self.admission.admitted


def admission_call(command: PlaceOrder, *, actor: str = "") -> Any:
    return admit_order(order_id=command.order_id, client_order_id=command.client_order_id,
                       order=command.as_payload(), actor=actor)


def place_order(mq: EchoMQ, request: bytes | str | Mapping[str, Any], *,
                config: GatewayConfig = DEFAULT_CONFIG, actor: str | None = None) -> Placement:
    """Raises :class:`~exchange.InvalidOrder` for a bad request and
    :class:`queues.Unavailable` when Redis cannot be reached (then nothing, or
    the whole order, was written: retry with the same client order id).
    ``actor`` (default: the client's) is who the order's history names as placing it."""
    command = parse_place(request, config=config)
    admission = mq.run(admission_call(command, actor=mq.actor if actor is None else actor))
    if admission.admitted or admission.duplicate_of != "client_order_id":
        return Placement(command, admission)
    return Placement(command, admission, _differences(mq, command, admission.order_id, config))


def _differences(mq: EchoMQ, command: PlaceOrder, first_id: str, config: GatewayConfig) -> tuple[str, ...]:
    """The request fields in which ``command`` differs from the order admitted first (none when that order is gone
    or unreadable: then only its id is known, and the answer stays "duplicate")."""
    first = mq.job(ORDERS_QUEUE, first_id)
    if not first.exists:
        return ()
    try:
        placed = order_from_payload(first.payload, config=config).as_request()
    except InvalidOrder:
        return ()
    asked = command.as_request()
    return tuple(name for name in sorted(placed.keys() | asked.keys()) if placed.get(name) != asked.get(name))
