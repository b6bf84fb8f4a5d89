from __future__ import annotations

import json
import re
from dataclasses import replace
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from exchange.gateway import (
    DEFAULT_CONFIG,
    FIELDS,
    MAX_BODY_BYTES,
    GatewayConfig,
    InvalidOrder,
    OrderTooLarge,
    PlaceOrder,
    parse_place,
)

CONFIG = DEFAULT_CONFIG
TICK = CONFIG.tick_size


def assert_valid(command: PlaceOrder) -> None:
    """The gateway's promises, restated independently of its code."""
    assert re.fullmatch(r"ORD-[0-9A-HJKMNP-TV-Z]{26}", command.order_id)
    assert re.fullmatch(r"[A-Za-z0-9._:-]{1,64}", command.client_order_id)
    assert command.side in ("buy", "sell")
    assert re.fullmatch(r"[A-Z]{1,12}(-[A-Z]{1,12})?", command.symbol)
    assert type(command.quantity) is int and 1 <= command.quantity <= CONFIG.max_lots
    if command.order_type == "limit":
        assert isinstance(command.price, Decimal) and command.price.is_finite()
        assert 0 < command.price <= CONFIG.max_price and command.price % TICK == 0
        assert command.time_in_force in ("GTC", "IOC", "FOK", "DAY")
    else:
        assert command.order_type == "market" and command.price is None
        assert command.time_in_force in ("IOC", "FOK")


json_scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10 ** 400), max_value=10 ** 400)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=80)
                | st.sampled_from(["buy", "sell", "limit", "market", "GTC", "IOC", "FOK", "DAY", "ACME", "10.00"]))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=12), inner, max_size=4), max_leaves=12)
near_requests = st.dictionaries(st.sampled_from([*FIELDS, "extra", "Side"]), json_values, max_size=9)

valid_requests = st.fixed_dictionaries({
    "client_order_id": st.from_regex(r"[A-Za-z0-9._:-]{1,64}", fullmatch=True),
    "side": st.sampled_from(["buy", "sell"]),
    "symbol": st.from_regex(r"[A-Z]{1,12}(-[A-Z]{1,12})?", fullmatch=True),
    "quantity": st.integers(1, CONFIG.max_lots),
}).flatmap(lambda base: st.one_of(
    st.builds(lambda ticks, tif: {**base, "type": "limit", "price": str(ticks * TICK), "time_in_force": tif},
              st.integers(1, int(CONFIG.max_price / TICK)), st.sampled_from(["GTC", "IOC", "FOK", "DAY"])),
    st.builds(lambda tif: {**base, "type": "market", "time_in_force": tif}, st.sampled_from(["IOC", "FOK"])),
))


def parsed_or_refused(request: Any) -> PlaceOrder | InvalidOrder:
    try:
        command = parse_place(request)
    except InvalidOrder as refused:
        assert refused.errors and all(isinstance(v, str) and v for v in refused.errors.values())
        json.dumps(refused.errors)
        return refused
    assert_valid(command)
    return command


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_arbitrary_json_never_crashes_it_or_yields_an_invalid_command(value: Any) -> None:
    parsed_or_refused(json.dumps(value).encode())


@settings(max_examples=300, deadline=None)
@given(near_requests)
def test_objects_with_known_fields_and_arbitrary_values_are_parsed_or_refused_cleanly(request: dict[str, Any]) -> None:
    parsed_or_refused(json.dumps(request).encode())
    parsed_or_refused(request)


@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_crash_it(body: bytes) -> None:
    parsed_or_refused(body)


@settings(max_examples=300, deadline=None)
@given(valid_requests)
def test_every_valid_command_round_trips(request: dict[str, Any]) -> None:
    command = parse_place(request)
    assert_valid(command)

    from_dict = parse_place(command.as_request())
    from_json = parse_place(json.dumps(command.as_request()).encode())

    assert replace(from_dict, order_id=command.order_id) == command
    assert replace(from_json, order_id=command.order_id) == command
    assert from_json.as_request() == command.as_request()


@given(valid_requests.filter(lambda r: r["type"] == "limit"))
def test_a_price_sent_as_a_json_number_is_read_exactly(request: dict[str, Any]) -> None:
    body = json.dumps({**request, "price": "@"}).replace('"@"', request["price"]).encode()

    assert parse_place(body).price == Decimal(request["price"])


def good(**changes: Any) -> dict[str, Any]:
    request = {"client_order_id": "c-1", "side": "buy", "symbol": "ACME", "type": "limit", "quantity": 5,
               "price": "10.25", "time_in_force": "GTC"}
    request.update(changes)
    return {k: v for k, v in request.items() if v is not ...}


def refusal(request: Any) -> dict[str, str]:
    with pytest.raises(InvalidOrder) as refused:
        parse_place(request)
    return refused.value.errors


def test_it_mints_a_new_branded_sortable_order_id_at_acceptance() -> None:
    first, second = parse_place(good()), parse_place(good())

    assert first.order_id != second.order_id
    assert first.order_id.startswith("ORD-") and len(first.order_id) == 30
    assert first.order_id[4:14] <= second.order_id[4:14]


def test_it_names_every_bad_field_at_once() -> None:
    errors = refusal(good(side="hold", symbol="acme", quantity=0, price="10.001", time_in_force="GTD",
                          client_order_id="has space", colour="red"))

    assert set(errors) == {"side", "symbol", "quantity", "price", "time_in_force", "client_order_id", "colour"}
    assert errors["colour"] == "unknown field"


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"price": ...}, "price", "required for a limit order"),
    ({"type": "market", "time_in_force": "IOC"}, "price", "must not be given for a market order"),
    ({"type": "market", "price": ..., "time_in_force": "GTC"}, "time_in_force", "IOC or FOK"),
    ({"price": "0"}, "price", "positive"),
    ({"price": "-1.00"}, "price", "positive"),
    ({"price": "1000000.01"}, "price", "at most"),
    ({"price": 10.25}, "price", "not a float"),
    ({"price": "1e3"}, "price", "decimal number"),
    ({"quantity": 5.0}, "quantity", "whole number of lots"),
    ({"quantity": "5"}, "quantity", "whole number of lots"),
    ({"quantity": True}, "quantity", "whole number of lots"),
    ({"quantity": 10 ** 30}, "quantity", "between 1 and"),
    ({"side": "BUY"}, "side", "one of buy, sell"),
    ({"symbol": 7}, "symbol", "must be a string"),
    ({"client_order_id": "x" * 65}, "client_order_id", "1 to 64"),
    ({"client_order_id": ...}, "client_order_id", "required"),
])
def test_a_bad_field_is_refused_with_its_reason(changes: dict[str, Any], field: str, words: str) -> None:
    errors = refusal(good(**changes))

    assert field in errors and words in errors[field]


@pytest.mark.parametrize(("body", "field", "words"), [
    (b'{"client_order_id":"c","side":"buy","symbol":"ACME","type":"limit","quantity":1,"price":NaN,'
     b'"time_in_force":"GTC"}', "price", "NaN"),
    (b'{"client_order_id":"c","side":"buy","symbol":"ACME","type":"limit","quantity":Infinity,"price":"1",'
     b'"time_in_force":"GTC"}', "quantity", "Infinity"),
    (b'{"client_order_id":"c","side":"buy","symbol":"ACME","type":"limit","quantity":1,"price":1e999999999,'
     b'"time_in_force":"GTC"}', "price", "at most"),
    (b'{"client_order_id":"c","side":"buy","symbol":"ACME","type":"limit","quantity":1,"price":1e-999999999,'
     b'"time_in_force":"GTC"}', "price", "tick"),
    (b'{"client_order_id":"c","side":"buy","side":"sell"}', "side", "more than once"),
    (b'{"client_order_id": "\xff"}', "body", "UTF-8"),
    (b'{"client_order_id": ', "body", "not valid JSON"),
    (b'["client_order_id"]', "body", "JSON object"),
    (b"[" * 3000 + b"]" * 3000, "body", "bytes; the limit is"),
    (b"[" * 2000 + b"]" * 2000, "body", "JSON"),
])
def test_a_bad_body_is_refused_with_its_reason(body: bytes, field: str, words: str) -> None:
    errors = refusal(body)

    assert words in errors[field]


def test_a_body_over_the_limit_is_refused_as_too_large_before_it_is_parsed() -> None:
    body = json.dumps(good(client_order_id="c", pad="x" * MAX_BODY_BYTES)).encode()

    with pytest.raises(OrderTooLarge):
        parse_place(body)


def test_text_that_cannot_be_utf8_is_refused() -> None:
    assert "UTF-8" in refusal('{"client_order_id": "\ud800"}')["body"]


def test_a_configured_symbol_set_replaces_the_pattern() -> None:
    config = GatewayConfig(symbols=frozenset({"BTC-USD", "ETH-USD"}), tick_size=Decimal("0.5"))

    assert parse_place(good(symbol="BTC-USD", price="100.5"), config=config).price == Decimal("100.5")
    with pytest.raises(InvalidOrder) as refused:
        parse_place(good(symbol="ACME", price="100.25"), config=config)
    assert set(refused.value.errors) == {"symbol", "price"}
    assert "BTC-USD, ETH-USD" in refused.value.errors["symbol"]


def test_prices_are_kept_at_the_ticks_precision() -> None:
    assert str(parse_place(good(price="10.5")).price) == "10.50"
    assert str(parse_place(good(price=7)).price) == "7.00"
