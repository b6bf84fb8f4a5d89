"""The demo's consumer of ``orders``: a worker handler that "fills" orders and fails the odd one.

Run it like any handler: ``emq worker orders --handler exchange.demo:fill_order`` (or
``queues.worker.Worker(queue="orders", handler="exchange.demo:fill_order")``).
Which orders fail is decided by the order id, so a demo run is repeatable in
kind: about one order in six is rejected on its first attempt and filled on
a retry, and about one in twenty-five is never filled and ends up failed.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from decimal import Decimal

from queues import ClaimedJob

from .gateway import PlaceOrder, order_from_payload

# A market order in the demo fills at this price; there is no book.
DEMO_MARKET_PRICE = Decimal("100.00")


class FillRejected(Exception):
    """The demo venue would not fill the order this time."""


@dataclass(frozen=True, slots=True)
class Fill:
    order_id: str
    quantity: int
    price: Decimal


def _luck(order_id: str) -> int:
    return int.from_bytes(hashlib.sha256(order_id.encode()).digest()[:4], "big")


def fill(order: PlaceOrder, attempt: int) -> Fill:
    luck = _luck(order.order_id)
    if luck % 25 == 0:
        raise FillRejected(f"{order.symbol} is halted: {order.order_id} cannot be filled")
    if luck % 6 == 0 and attempt == 1:
        raise FillRejected(f"no liquidity for {order.quantity} lots of {order.symbol} yet; will retry")
    return Fill(order.order_id, order.quantity, order.price if order.price is not None else DEMO_MARKET_PRICE)


def fill_order(job: ClaimedJob) -> Fill:
    """Worker handler: returning completes the job, raising fails it (retried while attempts remain)."""
    order = order_from_payload(job.payload)
    if order.order_id != job.id:
        raise FillRejected(f"job {job.id} carries order {order.order_id}")
    # A little latency so that orders are visibly active in the console.
    time.sleep(0.05 + (_luck(order.order_id) % 100) / 1000)
    return fill(order, job.attempts)
