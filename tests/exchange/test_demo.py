from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from exchange import place_order
from exchange.demo import FillRejected, _luck, fill_order
from exchange.gateway import InvalidOrder, order_from_payload, parse_place
from queues import ClaimedJob, EchoMQ
from queues.worker import Worker
from tests.support.waiting import wait_until_async


def request(client_order_id: str, **changes: object) -> dict[str, object]:
    return {"client_order_id": client_order_id, "side": "buy", "symbol": "ACME", "type": "limit",
            "quantity": 3, "price": "12.50", "time_in_force": "GTC", **changes}


def claimed(order_id: str, payload: bytes, attempts: int = 1) -> ClaimedJob:
    return ClaimedJob("orders", order_id, attempts, "c0ffee", payload, 0)


def order_with_luck(want: int, modulus: int, avoid: tuple[int, ...] = ()) -> bytes:
    for i in range(10_000):
        command = parse_place(request(f"c-{i}"))
        luck = _luck(command.order_id)
        if luck % modulus == want and all(luck % m for m in avoid):
            return command.as_payload()
    raise AssertionError("no such order id found")


def test_an_order_reads_back_from_its_payload_exactly() -> None:
    command = parse_place(request("c-1", type="market", price=None, time_in_force="IOC"))

    assert order_from_payload(command.as_payload()) == command


@pytest.mark.parametrize("payload", [b"[]", b'{"command":"cancel","version":1}', b"{",
                                     b'{"command":"place","version":1,"order_id":"ORD-1"}'])
def test_a_payload_that_is_not_a_place_order_is_refused(payload: bytes) -> None:
    with pytest.raises(InvalidOrder):
        order_from_payload(payload)


def test_an_ordinary_order_is_filled_at_its_price() -> None:
    payload = order_with_luck(1, 2, avoid=(25, 6))
    order = order_from_payload(payload)

    result = fill_order(claimed(order.order_id, payload))

    assert (result.order_id, result.quantity, str(result.price)) == (order.order_id, 3, "12.50")


def test_an_unlucky_order_is_rejected_once_then_filled_on_retry() -> None:
    payload = order_with_luck(0, 6, avoid=(25,))
    order_id = order_from_payload(payload).order_id

    with pytest.raises(FillRejected, match="no liquidity"):
        fill_order(claimed(order_id, payload, attempts=1))
    assert fill_order(claimed(order_id, payload, attempts=2)).order_id == order_id


def test_a_halted_order_is_never_filled() -> None:
    payload = order_with_luck(0, 25)
    order_id = order_from_payload(payload).order_id

    for attempt in (1, 2, 3):
        with pytest.raises(FillRejected, match="halted"):
            fill_order(claimed(order_id, payload, attempts=attempt))


async def test_a_worker_running_the_demo_handler_settles_every_admitted_order(mq: EchoMQ, redis_url: str) -> None:
    ids = [place_order(mq, request(f"w-{i}")).order_id for i in range(60)]
    worker = Worker(queue="orders", handler="exchange.demo:fill_order", concurrency=8, url=redis_url,
                    backoff_ms=10, poll_ms=20)
    stop = asyncio.Event()
    serving = asyncio.create_task(worker.serve(stop))
    await wait_until_async(lambda: serving.done() or sum(mq.stats("orders").counts[s] for s in ("done", "failed")) >= 60,
                           30, "the 60 orders to be filled or rejected")
    assert not serving.done(), "the worker stopped early"
    stop.set()
    await asyncio.wait_for(serving, 15)

    states = Counter(mq.job("orders", i).state for i in ids)
    expected_failed = sum(_luck(i) % 25 == 0 for i in ids)
    assert (states["done"], states["failed"]) == (60 - expected_failed, expected_failed)
