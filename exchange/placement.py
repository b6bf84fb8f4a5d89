"""Placing an order: parse the request, then admit it with one script on ``{orders}``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from queues import EchoMQ

from .gateway import DEFAULT_CONFIG, GatewayConfig, PlaceOrder, parse_place
from .orders import Admission, admit_order


@dataclass(frozen=True, slots=True)
class Placement:
    """The parsed command and what the script said; ``order_id`` is the one to tell the caller."""

    command: PlaceOrder
    admission: Admission

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
    return Placement(command, mq.run(admission_call(command, actor=mq.actor if actor is None else actor)))
