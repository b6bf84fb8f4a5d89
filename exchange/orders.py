"""Order admission on the ``orders`` queue: the call for ``exchange/lua/admit_order.lua``.

An admitted order is an ordinary EchoMQ job whose id is its order id, so the
console, the worker and every move treat it like any other. What is special
is the admission: one script refuses a second order for the same client order
id (or order id) and answers with the order id that was admitted first, so a
caller may retry after a timeout without placing twice. The script is the
exchange's own; ``queues`` runs it as it runs a move (see
:func:`queues.moves.enqueue_by_script`) and knows nothing of orders.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Final, Literal

from queues import EmqError, InvalidInput, QueueKeys
from queues.moves import DEFAULT_MAX_ATTEMPTS, MAX_PAYLOAD_BYTES, MAX_TRIES, Call, enqueue_by_script

ORDERS_QUEUE: Final = "orders"
PLACE_COMMAND: Final = "place"
PLACE_VERSION: Final = 1
ORDER_ID: Final = re.compile(r"ORD-[0-9A-HJKMNP-TV-Z]{26}")
CLIENT_ORDER_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")
ADMIT_ORDER_SCRIPT: Final = "exchange:admit_order"
# The index of client order ids, a key of the orders queue's slot that only admit_order writes.
CLIENT_IDS: Final = "client_ids"


class KeyTypeConflict(EmqError):
    """A key the admission would write holds another type; nothing was written."""

    def __init__(self, key: str, actual: str, expected: str) -> None:
        self.key, self.actual, self.expected = key, actual, expected
        super().__init__(f"orders cannot be admitted: {key} holds a {actual}, not a {expected}; "
                         "an operator must repair or remove it")


_EXPECTED_TYPE: Final = {"pending": "zset", "events": "stream", CLIENT_IDS: "hash"}


@dataclass(frozen=True, slots=True)
class Admission:
    """What the script said: the order id the caller must use from now on."""

    order_id: str
    admitted: bool
    # Which id was found taken when not admitted: the client order id or the order id.
    duplicate_of: Literal["", "client_order_id", "order_id"] = ""
    created_ms: int | None = None


def client_ids_key(queue: str = ORDERS_QUEUE) -> str:
    return QueueKeys(queue).own(CLIENT_IDS)


def validate_order_id(order_id: object) -> str:
    if not isinstance(order_id, str) or not ORDER_ID.fullmatch(order_id):
        raise InvalidInput(f"order id {order_id!r} is not valid: expected ORD- followed by a 26-character ULID")
    return order_id


def validate_client_order_id(client_order_id: object) -> str:
    if not isinstance(client_order_id, str) or not CLIENT_ORDER_ID.fullmatch(client_order_id):
        raise InvalidInput(f"client order id {client_order_id!r} is not valid: "
                           "expected 1..64 characters of A-Z a-z 0-9 . _ : -")
    return client_order_id


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def admit_order(*, order_id: str, client_order_id: str, order: bytes, max_attempts: int = DEFAULT_MAX_ATTEMPTS,
                actor: str = "", queue: str = ORDERS_QUEUE) -> Call[Admission]:
    """``order`` is the job's payload: a JSON object carrying the command, version and both ids.

    Returns an :class:`Admission`; raises :class:`KeyTypeConflict` when the
    keyspace holds a wrong type, and :class:`InvalidInput` for anything the
    script's kind check refuses.
    """
    order_id = validate_order_id(order_id)
    client_order_id = validate_client_order_id(client_order_id)
    if not isinstance(order, bytes):
        raise InvalidInput(f"order must be bytes of JSON, not {type(order).__name__}")
    if len(order) > MAX_PAYLOAD_BYTES:
        raise InvalidInput(f"order is {len(order)} bytes; the limit is {MAX_PAYLOAD_BYTES}")
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or not 1 <= max_attempts <= MAX_TRIES:
        raise InvalidInput(f"max_attempts must be an integer between 1 and {MAX_TRIES}, not {max_attempts!r}")

    def parse(reply: list[Any]) -> Admission:
        outcome = _text(reply[0])
        if outcome == "ADMITTED":
            return Admission(_text(reply[1]), True, "", int(_text(reply[2])))
        if outcome == "DUPLICATE":
            return Admission(_text(reply[1]), False, _text(reply[2]))  # type: ignore[arg-type]
        key = _text(reply[2])
        raise KeyTypeConflict(key, _text(reply[3]), _EXPECTED_TYPE.get(key.rsplit(":", 1)[-1], "hash"))

    return enqueue_by_script(ADMIT_ORDER_SCRIPT, queue, order_id,
                             [PLACE_COMMAND, PLACE_VERSION, order_id, client_order_id, order, max_attempts, actor],
                             parse, own_keys=[CLIENT_IDS])
