"""The exchange gateway: untrusted request in, typed place command (or every field's error) out.

Money is :class:`~decimal.Decimal` from the first byte: JSON numbers are read
as decimals, and a Python float is refused, because a float cannot hold 0.10.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Final, Literal

from ulid import ULID

from queues import InvalidInput

from .orders import CLIENT_ORDER_ID, ORDER_ID, PLACE_COMMAND, PLACE_VERSION

Side = Literal["buy", "sell"]
OrderType = Literal["limit", "market"]
TimeInForce = Literal["GTC", "IOC", "FOK", "DAY"]

SIDES: Final[tuple[Side, ...]] = ("buy", "sell")
ORDER_TYPES: Final[tuple[OrderType, ...]] = ("limit", "market")
TIMES_IN_FORCE: Final[tuple[TimeInForce, ...]] = ("GTC", "IOC", "FOK", "DAY")
# A market order takes what is there now; it cannot rest on the book.
MARKET_TIMES_IN_FORCE: Final = ("IOC", "FOK")
FIELDS: Final = ("client_order_id", "side", "symbol", "type", "quantity", "price", "time_in_force")
REQUIRED: Final = frozenset(FIELDS) - {"price"}

MAX_BODY_BYTES: Final = 4096
DEFAULT_SYMBOL_PATTERN: Final = r"[A-Z]{1,12}(?:-[A-Z]{1,12})?"
# Exact arithmetic on bounded numbers: 28 digits cover MAX_PRICE at any tick we allow.
_MONEY: Final = Context(prec=28, Emin=-999, Emax=999, traps=[InvalidOperation])


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    """What the venue accepts. ``symbols`` empty means any symbol matching ``symbol_pattern``."""

    symbols: frozenset[str] = frozenset()
    symbol_pattern: str = DEFAULT_SYMBOL_PATTERN
    tick_size: Decimal = Decimal("0.01")
    max_price: Decimal = Decimal("1000000")
    max_lots: int = 1_000_000

    def __post_init__(self) -> None:
        if not self.tick_size.is_finite() or self.tick_size <= 0 or self.tick_size.as_tuple().exponent < -8:  # type: ignore[operator]
            raise ValueError("tick_size must be a positive decimal with at most 8 places")
        if not self.max_price.is_finite() or self.max_price <= 0 or self.max_price > Decimal("1e12"):
            raise ValueError("max_price must be positive and at most 1e12")
        if self.max_lots < 1:
            raise ValueError("max_lots must be >= 1")

    def symbol_allowed(self, symbol: str) -> bool:
        if self.symbols:
            return symbol in self.symbols
        return re.fullmatch(self.symbol_pattern, symbol, re.ASCII) is not None


DEFAULT_CONFIG: Final = GatewayConfig()


@dataclass(frozen=True, slots=True)
class PlaceOrder:
    """A place command that passed every check; ``order_id`` was minted when it was accepted."""

    order_id: str
    client_order_id: str
    side: Side
    symbol: str
    order_type: OrderType
    quantity: int
    price: Decimal | None
    time_in_force: TimeInForce

    def as_request(self) -> dict[str, Any]:
        """The request that parses back to this command (with a new order id)."""
        request: dict[str, Any] = {
            "client_order_id": self.client_order_id, "side": self.side, "symbol": self.symbol,
            "type": self.order_type, "quantity": self.quantity, "time_in_force": self.time_in_force,
        }
        if self.price is not None:
            request["price"] = str(self.price)
        return request

    def as_payload(self) -> bytes:
        """The job's payload on the orders queue (see PROTOCOL.md, "admit_order")."""
        body = {"command": PLACE_COMMAND, "version": PLACE_VERSION, "order_id": self.order_id, **self.as_request()}
        return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


class InvalidOrder(InvalidInput):
    """The request was refused; ``errors`` maps each bad field (or ``body``) to why."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        super().__init__("; ".join(f"{name}: {why}" for name, why in self.errors.items()))


class OrderTooLarge(InvalidOrder):
    def __init__(self, size: int) -> None:
        super().__init__({"body": f"the body is {size} bytes; the limit is {MAX_BODY_BYTES}"})


@dataclass(frozen=True, slots=True)
class _NonFinite:
    """Where JSON said NaN or Infinity: kept as a value so the field's error can name it."""

    text: str


@dataclass
class _Errors:
    found: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, why: str) -> None:
        self.found.setdefault(name, why)


def new_order_id() -> str:
    return f"ORD-{ULID()}"


def parse_place(request: bytes | str | Mapping[str, Any], *, config: GatewayConfig = DEFAULT_CONFIG,
                mint: Callable[[], str] = new_order_id) -> PlaceOrder:
    """Parse an untrusted place request; raises :class:`InvalidOrder` naming every bad field."""
    fields = _fields(request)
    errors = _Errors()
    for name in fields:
        if name not in FIELDS:
            errors.add(_shown(name), "unknown field")
    for name in sorted(REQUIRED - fields.keys()):
        errors.add(name, "required")

    client_order_id = _client_order_id(fields.get("client_order_id"), errors)
    side = _choice(fields, "side", SIDES, errors)
    symbol = _symbol(fields.get("symbol"), config, errors)
    order_type = _choice(fields, "type", ORDER_TYPES, errors)
    time_in_force = _choice(fields, "time_in_force", TIMES_IN_FORCE, errors)
    quantity = _quantity(fields.get("quantity"), config, errors)
    price = _price(fields, order_type, config, errors)
    if order_type == "market" and time_in_force and time_in_force not in MARKET_TIMES_IN_FORCE:
        errors.add("time_in_force", f"a market order must be IOC or FOK, not {time_in_force}")
    if errors.found:
        raise InvalidOrder(errors.found)

    order_id = mint()
    if not ORDER_ID.fullmatch(order_id):
        raise ValueError(f"minted order id {order_id!r} is not ORD- and a ULID")
    return PlaceOrder(order_id, client_order_id, side, symbol, order_type, quantity, price,  # type: ignore[arg-type]
                      time_in_force)  # type: ignore[arg-type]


def order_from_payload(payload: bytes, *, config: GatewayConfig = DEFAULT_CONFIG) -> PlaceOrder:
    """Reads an admitted order back from its job, checking it as strictly as a request.

    A consumer cannot assume the Python gateway wrote it: any runtime may call admit_order.
    """
    try:
        body = json.loads(payload, parse_float=Decimal, parse_int=Decimal, parse_constant=_NonFinite)
    except (ValueError, RecursionError):
        raise InvalidOrder({"payload": "not valid JSON"}) from None
    if not isinstance(body, dict):
        raise InvalidOrder({"payload": "expected a JSON object"})
    if body.get("command") != PLACE_COMMAND or body.get("version") != PLACE_VERSION:
        raise InvalidOrder({"payload": f"not a {PLACE_COMMAND} command of version {PLACE_VERSION}"})
    order_id = body.get("order_id")
    if not isinstance(order_id, str) or not ORDER_ID.fullmatch(order_id):
        raise InvalidOrder({"order_id": "must be ORD- followed by a ULID"})
    request = {k: v for k, v in body.items() if k not in ("command", "version", "order_id")}
    return parse_place(request, config=config, mint=lambda: order_id)


def _fields(request: bytes | str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(request, Mapping):
        return dict(request)
    if isinstance(request, str):
        try:
            request = request.encode()
        except UnicodeEncodeError:
            raise InvalidOrder({"body": "the body is not valid UTF-8 text"}) from None
    if not isinstance(request, (bytes, bytearray)):
        raise InvalidOrder({"body": f"expected a JSON object, not {type(request).__name__}"})
    if len(request) > MAX_BODY_BYTES:
        raise OrderTooLarge(len(request))
    try:
        text = bytes(request).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidOrder({"body": "the body is not valid UTF-8 text"}) from None
    try:
        parsed = json.loads(text, parse_float=Decimal, parse_int=Decimal, parse_constant=_NonFinite,
                            object_pairs_hook=_no_repeats)
    except _RepeatedField as repeated:
        raise InvalidOrder({_shown(repeated.name): "given more than once"}) from None
    except (ValueError, RecursionError) as error:
        raise InvalidOrder({"body": f"the body is not valid JSON ({_short(str(error))})"}) from None
    if not isinstance(parsed, dict):
        raise InvalidOrder({"body": f"expected a JSON object, not {_json_type(parsed)}"})
    return parsed


class _RepeatedField(ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for name, value in pairs:
        if name in result:
            raise _RepeatedField(name)
        result[name] = value
    return result


def _client_order_id(value: Any, errors: _Errors) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.add("client_order_id", f"must be a string, not {_json_type(value)}")
    elif not CLIENT_ORDER_ID.fullmatch(value):
        errors.add("client_order_id", "must be 1 to 64 characters of A-Z a-z 0-9 . _ : -")
    else:
        return value
    return ""


def _choice(fields: Mapping[str, Any], name: str, allowed: tuple[str, ...], errors: _Errors) -> str:
    value = fields.get(name)
    if value is None:
        return ""
    if isinstance(value, str) and value in allowed:
        return value
    errors.add(name, f"must be one of {', '.join(allowed)}, not {_shown_value(value)}")
    return ""


def _symbol(value: Any, config: GatewayConfig, errors: _Errors) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        errors.add("symbol", f"must be a string, not {_json_type(value)}")
    elif not config.symbol_allowed(value):
        rule = f"one of {', '.join(sorted(config.symbols))}" if config.symbols else "like ACME or BTC-USD"
        errors.add("symbol", f"{_shown_value(value)} is not a listed symbol; expected {rule}")
    else:
        return value
    return ""


def _quantity(value: Any, config: GatewayConfig, errors: _Errors) -> int:
    if value is None:
        return 0
    whole: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        whole = value
    elif isinstance(value, Decimal) and value.is_finite() and value.as_tuple().exponent == 0:
        digits = value.as_tuple().digits
        whole = int(value) if len(digits) <= 18 else config.max_lots + 1
    if whole is None:
        errors.add("quantity", f"must be a whole number of lots, not {_shown_value(value)}")
        return 0
    if not 1 <= whole <= config.max_lots:
        errors.add("quantity", f"must be between 1 and {config.max_lots} lots")
        return 0
    return whole


def _price(fields: Mapping[str, Any], order_type: str, config: GatewayConfig, errors: _Errors) -> Decimal | None:
    value = fields.get("price")
    if "price" not in fields or value is None:
        if order_type == "limit":
            errors.add("price", "required for a limit order")
        return None
    if order_type == "market":
        errors.add("price", "must not be given for a market order")
        return None
    price = _decimal(value)
    if price is None:
        errors.add("price", f"must be a decimal number or a string like \"101.25\", not {_shown_value(value)}")
        return None
    if not price.is_finite():
        errors.add("price", "must be a finite number")
    elif price <= 0:
        errors.add("price", "must be positive")
    elif price > config.max_price:
        errors.add("price", f"must be at most {config.max_price}")
    elif price.as_tuple().exponent < -12 or _MONEY.remainder(price, config.tick_size) != 0:  # type: ignore[operator]
        errors.add("price", f"must be a multiple of the tick size {config.tick_size}")
    else:
        return _MONEY.quantize(price, config.tick_size)
    return None


_DECIMAL_TEXT: Final = re.compile(r"-?[0-9]{1,13}(?:\.[0-9]{1,12})?")


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    if isinstance(value, str) and _DECIMAL_TEXT.fullmatch(value):
        return Decimal(value)
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, Decimal, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, _NonFinite):
        return value.text
    return type(value).__name__


def _shown_value(value: Any) -> str:
    if isinstance(value, str):
        return repr(_short(value))
    if isinstance(value, float):
        return "a float"
    if isinstance(value, Decimal) and value.is_finite() and len(value.as_tuple().digits) <= 20:
        return str(value)
    if isinstance(value, Decimal):
        return "a number out of range"
    return _json_type(value)


def _shown(name: object) -> str:
    return _short(str(name))


def _short(text: str, limit: int = 40) -> str:
    text = text.encode("utf-8", "backslashreplace").decode("ascii", "backslashreplace")
    return text if len(text) <= limit else text[:limit] + "..."
