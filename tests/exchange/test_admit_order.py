from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from exchange.orders import ADMIT_ORDER_SCRIPT, Admission, KeyTypeConflict, admit_order, client_ids_key
from queues import EchoMQ, InvalidInput, QueueKeys
from queues.moves import operator_move
from queues.scripts import script

ORD_A = "ORD-01J9Z8ZQ4W3V2T1S0R9Q8P7N6M"
ORD_B = "ORD-01J9Z8ZQ4W3V2T1S0R9Q8P7N6K"


def order(order_id: str = ORD_A, client_order_id: str = "c-1", **changes: Any) -> bytes:
    body = {"command": "place", "version": 1, "order_id": order_id, "client_order_id": client_order_id,
            "side": "buy", "symbol": "ACME", "type": "limit", "quantity": 5, "price": "10.00",
            "time_in_force": "GTC", **changes}
    return json.dumps(body).encode()


def admit(mq: EchoMQ, order_id: str = ORD_A, client_order_id: str = "c-1") -> Admission:
    return mq.run(admit_order(order_id=order_id, client_order_id=client_order_id,
                              order=order(order_id, client_order_id)))


def snapshot(client: redis.Redis) -> dict[bytes, bytes | None]:
    return {key: client.dump(key) for key in client.scan_iter(count=1000)}


def test_an_admitted_order_is_an_ordinary_pending_job(any_mq: EchoMQ) -> None:
    admission = admit(any_mq)

    assert admission.admitted and admission.order_id == ORD_A
    job = any_mq.job("orders", ORD_A)
    assert (job.state, job.attempts) == ("pending", "0")
    assert json.loads(job.payload)["client_order_id"] == "c-1"
    assert job.text("max_attempts") == "3" and job.text("created_at") == str(admission.created_ms)
    assert job.warnings == []
    assert any_mq.stats("orders").counts["pending"] == 1
    assert [(e.move, e.job_id) for e in any_mq.events("orders")] == [("enqueue", ORD_A)]
    assert "orders" in any_mq.queues()


def test_an_admitted_order_can_be_claimed_like_any_job(mq: EchoMQ) -> None:
    admit(mq)

    [claimed] = mq.claim("orders")

    assert claimed.id == ORD_A and json.loads(claimed.payload)["order_id"] == ORD_A


def test_a_second_order_with_the_same_client_order_id_gets_the_first_order_id(any_mq: EchoMQ) -> None:
    admit(any_mq, ORD_A, "c-1")

    again = admit(any_mq, ORD_B, "c-1")

    assert again == Admission(ORD_A, False, "client_order_id")
    assert any_mq.job("orders", ORD_B).exists is False
    assert any_mq.stats("orders").counts["pending"] == 1
    assert len(any_mq.events("orders")) == 1


def test_a_reused_order_id_is_refused_and_returned(mq: EchoMQ) -> None:
    admit(mq, ORD_A, "c-1")
    before = snapshot(mq.redis)

    again = admit(mq, ORD_A, "c-2")

    assert again == Admission(ORD_A, False, "order_id")
    assert snapshot(mq.redis) == before


def test_the_client_order_id_stays_taken_after_the_job_is_deleted(mq: EchoMQ) -> None:
    admit(mq, ORD_A, "c-1")
    mq.run(operator_move("delete", "orders", ORD_A))

    assert admit(mq, ORD_B, "c-1") == Admission(ORD_A, False, "client_order_id")


def _raw(mq: EchoMQ, keys: list[str], args: list[Any]) -> Any:
    s = script(ADMIT_ORDER_SCRIPT)
    return mq.redis.eval(s.source, len(keys), *keys, *args)


def _keys(order_id: str = ORD_A) -> list[str]:
    return [*QueueKeys("orders").script_keys(order_id), client_ids_key()]


def _args(**changes: Any) -> list[Any]:
    args = {"command": "place", "version": "1", "order_id": ORD_A, "client_order_id": "c-1",
            "order": order(), "max_attempts": "3", "actor": "t"}
    args.update(changes)
    return list(args.values())


def _with_order_id(order_id: str) -> tuple[list[str], list[Any]]:
    return _keys(order_id), _args(order_id=order_id, order=order(order_id))


BAD_CALLS: dict[str, Callable[[], tuple[list[str], list[Any]]]] = {
    "unknown command": lambda: (_keys(), _args(command="cancel")),
    "unknown version": lambda: (_keys(), _args(version="2")),
    "lowercase order id": lambda: _with_order_id(ORD_A.lower()),
    "short order id": lambda: _with_order_id("ORD-01J9"),
    "order id with an I": lambda: _with_order_id(ORD_A[:-1] + "I"),
    "client id with a brace": lambda: (_keys(), _args(client_order_id="c{1}")),
    "long client id": lambda: (_keys(), _args(client_order_id="c" * 65)),
    "order that is not JSON": lambda: (_keys(), _args(order=b"{not json")),
    "order that is a list": lambda: (_keys(), _args(order=b"[1, 2]")),
    "order for another client id": lambda: (_keys(), _args(order=order(client_order_id="c-2"))),
    "order of another version": lambda: (_keys(), _args(order=order(version=2))),
    "max attempts zero": lambda: (_keys(), _args(max_attempts="0")),
    "index key of another queue": lambda: (_keys()[:6] + ["emq:{orders}:other"], _args()),
    "job key of another order": lambda: (_keys(ORD_B), _args()),
    "no index key": lambda: (_keys()[:6], _args()),
}


@pytest.mark.parametrize("case", list(BAD_CALLS))
def test_a_call_whose_checks_fail_writes_nothing(mq: EchoMQ, case: str) -> None:
    admit(mq, ORD_B, "c-0")
    before = snapshot(mq.redis)
    keys, args = BAD_CALLS[case]()

    with pytest.raises(redis.exceptions.ResponseError, match="emq: "):
        _raw(mq, keys, args)

    assert snapshot(mq.redis) == before


@pytest.mark.parametrize("key_of", [
    lambda: "emq:{orders}:pending", lambda: "emq:{orders}:events", lambda: f"emq:{{orders}}:job:{ORD_A}",
    lambda: client_ids_key(),
])
def test_a_key_of_the_wrong_type_refuses_the_admission_and_writes_nothing(
        mq: EchoMQ, key_of: Callable[[], str]) -> None:
    key = key_of()
    mq.redis.set(key, "squatter")
    before = snapshot(mq.redis)

    with pytest.raises(KeyTypeConflict, match="holds a string") as refused:
        admit(mq)

    assert refused.value.key == key
    assert snapshot(mq.redis) == before


def test_the_python_call_refuses_malformed_ids_before_reaching_redis(mq: EchoMQ) -> None:
    with pytest.raises(InvalidInput, match="order id"):
        admit_order(order_id="ORD-1", client_order_id="c-1", order=order())
    with pytest.raises(InvalidInput, match="client order id"):
        admit_order(order_id=ORD_A, client_order_id="", order=order())
    assert mq.redis.dbsize() == 0


def test_the_scripts_kind_check_reaches_the_caller_as_invalid_input(mq: EchoMQ) -> None:
    call = admit_order(order_id=ORD_A, client_order_id="c-1", order=order(client_order_id="c-9"))

    with pytest.raises(InvalidInput, match="same command, version, order_id and client_order_id"):
        mq.run(call)
    assert mq.redis.dbsize() == 0
