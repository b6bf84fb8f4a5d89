"""The exchange's order entry: a gateway that parses place requests and admits them onto ``orders``."""

from __future__ import annotations

from .gateway import DEFAULT_CONFIG, GatewayConfig, InvalidOrder, OrderTooLarge, PlaceOrder, parse_place
from .placement import Placement, place_order

__all__ = ["DEFAULT_CONFIG", "GatewayConfig", "InvalidOrder", "OrderTooLarge", "PlaceOrder", "Placement",
           "parse_place", "place_order"]
