"""Typed requests and results of the Bitget v2 futures REST calls, and their parsers.

Parsers take the `data` member of a successful envelope and raise `MalformedAnswer` when it
does not have the documented shape; the client turns that into a transport-level failure, so
nothing the network sends escapes as a KeyError or TypeError. Prices and sizes stay exact
(`Decimal`), as the exchange sends them as decimal strings.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TypeVar

from engine.bitget.endpoints import SIGNING_WINDOW_MS
from engine.bitget.orders import OrderSide, OrderType, TimeInForce

_E = TypeVar("_E", bound=enum.StrEnum)

CLIENT_OID_PATTERN = re.compile(r"^[0-9A-Za-z_#-]{1,32}$")
"""The clientOid alphabet and length every Bitget document accepts (see bitget-v2.md §4)."""
ORDER_STATES = frozenset({"live", "partially_filled", "filled", "canceled"})


_INT_DIGITS_MAX = 19
"""Epoch milliseconds and ids fit int64."""


class TradeSide(enum.StrEnum):
    """Hedge mode only; one-way mode must omit it (40774)."""

    OPEN = "open"
    CLOSE = "close"


class MalformedAnswer(ValueError):
    """A success envelope whose `data` lacks the documented shape."""


@dataclass(frozen=True, slots=True)
class OrderAck:
    """The exchange received the order; fills and cancels arrive on the orders channel.

    `order_id` is None when the exchange confirmed the order without its id (a one-way
    reduce-only overflow answer, or a duplicate-clientOid confirmation whose lookup failed):
    query by `client_oid`. `reconciled` says the ack came from a clientOid lookup after an
    attempt whose outcome was unknown, not from the place-order answer itself.
    """

    client_oid: str
    order_id: str | None
    attempts: int
    reconciled: bool


@dataclass(frozen=True, slots=True)
class OrderRef:
    order_id: str
    client_oid: str
    symbol: str | None = None


@dataclass(frozen=True, slots=True)
class OrderFailure:
    order_id: str
    client_oid: str
    code: str
    message: str
    symbol: str | None = None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """Per-order outcome of a batch cancel, cancel-all or close-positions call."""

    succeeded: tuple[OrderRef, ...]
    failed: tuple[OrderFailure, ...]


EMPTY_BATCH = BatchResult((), ())


@dataclass(frozen=True, slots=True)
class PendingOrder:
    symbol: str
    order_id: str
    client_oid: str
    side: OrderSide
    order_type: OrderType
    force: TimeInForce | None
    """None when the exchange reports a force this client does not know."""
    price: Decimal | None
    size: Decimal
    filled_size: Decimal
    status: str
    reduce_only: bool
    created_ms: int
    updated_ms: int


@dataclass(frozen=True, slots=True)
class OrderDetail:
    """One order as the detail endpoint reports it, open or finished."""

    symbol: str
    order_id: str
    client_oid: str
    side: OrderSide
    price: Decimal | None
    size: Decimal
    filled_size: Decimal
    status: str
    """`live`, `partially_filled`, `filled` or `canceled`."""
    reduce_only: bool
    cancel_reason: str
    updated_ms: int


@dataclass(frozen=True, slots=True)
class OrderFill:
    """One execution of an order as the fills endpoint reports it (it carries no clientOid).

    `fee` is what was charged in the fee coin: positive paid, negative rebated (Bitget's
    `totalFee` has the opposite sign)."""

    trade_id: str
    symbol: str
    order_id: str
    side: OrderSide
    price: Decimal
    size: Decimal
    fee: Decimal
    maker: bool
    filled_ms: int


@dataclass(frozen=True, slots=True)
class OpenPosition:
    symbol: str
    hold_side: str
    """`long` or `short`."""
    total: Decimal
    available: Decimal
    open_price_avg: Decimal
    mark_price: Decimal | None
    unrealized_pl: Decimal
    liquidation_price: Decimal | None
    """None when the exchange reports no liquidation price (<= 0)."""
    leverage: Decimal
    margin_mode: str
    pos_mode: str
    updated_ms: int


@dataclass(frozen=True, slots=True)
class PositionsAt:
    """All open positions, and the exchange's time of the answer (epoch ms): a fill stamped
    before it is in them."""

    positions: list[OpenPosition]
    exchange_ms: int


@dataclass(frozen=True, slots=True)
class ClockSync:
    """One exchange-time measurement; `offset_ms` is added to the local clock when signing."""

    server_time_ms: int
    offset_ms: int
    round_trip_ms: float

    @property
    def beyond_signing_window(self) -> bool:
        """The local clock alone would be refused (40008): Bitget allows 30 s of skew."""
        return abs(self.offset_ms) > SIGNING_WINDOW_MS


def decimal_text(value: Decimal | str, name: str) -> str:
    """A positive, finite decimal as plain text (no exponent), as Bitget expects it."""
    try:
        number = value if isinstance(value, Decimal) else Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"{name} must be a decimal number, got {value!r}") from None
    if not number.is_finite() or number <= 0:
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return format(number, "f")


def parse_order_ack(data: object, client_oid: str, attempts: int) -> OrderAck:
    entry = _mapping(data)
    order_id = _optional_text(entry, "orderId")
    return OrderAck(client_oid, order_id, attempts, reconciled=False)


def parse_order_ref(data: object) -> OrderRef:
    entry = _mapping(data)
    return OrderRef(
        _optional_text(entry, "orderId") or "",
        _optional_text(entry, "clientOid") or "",
        _optional_text(entry, "symbol"),
    )


def parse_batch_result(data: object) -> BatchResult:
    entry = _mapping(data)
    succeeded = tuple(parse_order_ref(item) for item in _list(entry, "successList"))
    failed = tuple(
        OrderFailure(
            _optional_text(item_map, "orderId") or "",
            _optional_text(item_map, "clientOid") or "",
            _optional_text(item_map, "errorCode") or "",
            _optional_text(item_map, "errorMsg") or "",
            _optional_text(item_map, "symbol"),
        )
        for item_map in (_mapping(item) for item in _list(entry, "failureList"))
    )
    return BatchResult(succeeded, failed)


def parse_pending_page(data: object) -> tuple[list[PendingOrder], str | None]:
    """One page of orders-pending and its `endId` (the cursor for the next page)."""
    entry = _mapping(data)
    # Bitget sends null rather than [] when nothing is pending; `_list` reads both as empty.
    orders = [_pending_order(item) for item in _list(entry, "entrustedList")]
    return orders, _optional_text(entry, "endId")


def parse_positions(data: object) -> list[OpenPosition]:
    if data is None:
        return []
    if not isinstance(data, list):
        raise MalformedAnswer(f"positions: expected a list, got {type(data).__name__}")
    return [_position(item) for item in data]


def parse_order_detail(data: object) -> OrderDetail:
    entry = _mapping(data)
    # The documentation's table names the field `status`, its example (and the live API) `state`.
    status = _optional_text(entry, "state") or _text(entry, "status")
    if status not in ORDER_STATES:
        raise MalformedAnswer(f"unknown order state {status[:40]!r}")
    return OrderDetail(
        symbol=_text(entry, "symbol").upper(),
        order_id=_text(entry, "orderId"),
        client_oid=_optional_text(entry, "clientOid") or "",
        side=_enum(OrderSide, _text(entry, "side")),
        price=_positive_or_none(entry, "price"),
        size=_required_decimal(entry, "size"),
        filled_size=_decimal_or_zero(entry, "baseVolume"),
        status=status,
        reduce_only=_yes(entry, "reduceOnly"),
        cancel_reason=_optional_text(entry, "cancelReason") or "",
        updated_ms=_int(entry, "uTime"),
    )


def parse_fill_page(data: object) -> tuple[list[OrderFill], str | None]:
    """One page of an order's fills and its `endId` (the tradeId cursor for the next page)."""
    entry = _mapping(data)
    fills = [_order_fill(item) for item in _list(entry, "fillList")]
    return fills, _optional_text(entry, "endId")


def parse_server_time(data: object) -> int:
    return _int(_mapping(data), "serverTime")


def _pending_order(item: object) -> PendingOrder:
    entry = _mapping(item)
    force = _optional_text(entry, "force")
    return PendingOrder(
        symbol=_text(entry, "symbol"),
        order_id=_text(entry, "orderId"),
        client_oid=_optional_text(entry, "clientOid") or "",
        side=_enum(OrderSide, _text(entry, "side")),
        order_type=_enum(OrderType, _text(entry, "orderType")),
        force=TimeInForce(force) if force in TimeInForce._value2member_map_ else None,
        price=_positive_or_none(entry, "price"),
        size=_required_decimal(entry, "size"),
        filled_size=_decimal_or_zero(entry, "baseVolume"),
        status=_text(entry, "status"),
        reduce_only=_yes(entry, "reduceOnly"),
        created_ms=_int(entry, "cTime"),
        updated_ms=_int(entry, "uTime"),
    )


def _order_fill(item: object) -> OrderFill:
    entry = _mapping(item)
    size = _required_decimal(entry, "baseVolume")
    price = _required_decimal(entry, "price")
    if size <= 0 or price <= 0:
        raise MalformedAnswer(f"fill with a non-positive price {price} or size {size}")
    details = _list(entry, "feeDetail")
    charged = sum(
        (_required_decimal(_mapping(detail), "totalFee") for detail in details),
        Decimal(0),
    )
    scope = _text(entry, "tradeScope").lower()
    if scope not in ("maker", "taker"):
        raise MalformedAnswer(f"tradeScope {scope[:40]!r} is neither maker nor taker")
    return OrderFill(
        trade_id=_text(entry, "tradeId"),
        symbol=_text(entry, "symbol").upper(),
        order_id=_text(entry, "orderId"),
        side=_enum(OrderSide, _text(entry, "side")),
        price=price,
        size=size,
        fee=-charged,
        maker=scope == "maker",
        filled_ms=_int(entry, "cTime"),
    )


def _position(item: object) -> OpenPosition:
    entry = _mapping(item)
    return OpenPosition(
        symbol=_text(entry, "symbol"),
        hold_side=_text(entry, "holdSide"),
        total=_required_decimal(entry, "total"),
        available=_decimal_or_zero(entry, "available"),
        open_price_avg=_required_decimal(entry, "openPriceAvg"),
        mark_price=_optional_decimal(entry, "markPrice"),
        unrealized_pl=_decimal_or_zero(entry, "unrealizedPL"),
        liquidation_price=_positive_or_none(entry, "liquidationPrice"),
        leverage=_required_decimal(entry, "leverage"),
        margin_mode=_optional_text(entry, "marginMode") or "",
        pos_mode=_optional_text(entry, "posMode") or "",
        updated_ms=_int(entry, "uTime"),
    )


def _mapping(value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise MalformedAnswer(f"expected an object, got {type(value).__name__}")
    return value


def _list(entry: Mapping[str, object], name: str) -> list[object]:
    value = entry.get(name)
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedAnswer(f"{name}: expected a list, got {type(value).__name__}")
    return value


def text_field(
    entry: Mapping[str, object], name: str, refuse: Callable[[str, object], Exception]
) -> str | None:
    """A text field as either side of Bitget's API sends it: absent or "" is none, a whole
    number (ids come both ways) is its digits; anything else raises `refuse(name, value)`."""
    value = entry.get(name)
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise refuse(name, value)
    return str(value)


def _optional_text(entry: Mapping[str, object], name: str) -> str | None:
    return text_field(entry, name, _not_text)


def _not_text(name: str, value: object) -> MalformedAnswer:
    return MalformedAnswer(f"{name}: expected text, got {type(value).__name__}")


def _text(entry: Mapping[str, object], name: str) -> str:
    value = _optional_text(entry, name)
    if value is None:
        raise MalformedAnswer(f"{name} is missing")
    return value


def _int(entry: Mapping[str, object], name: str) -> int:
    text = _text(entry, name)
    # int() refuses more than 4300 digits with a ValueError; no field here needs 20.
    if not (text.isascii() and text.isdigit() and len(text) <= _INT_DIGITS_MAX):
        raise MalformedAnswer(f"{name}: expected an integer, got {text[:40]!r}")
    return int(text)


def _decimal(text: str, name: str) -> Decimal:
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise MalformedAnswer(f"{name}: expected a number, got {text[:40]!r}") from None
    if not number.is_finite():
        raise MalformedAnswer(f"{name}: expected a finite number, got {text[:40]!r}")
    return number


def _optional_decimal(entry: Mapping[str, object], name: str) -> Decimal | None:
    text = _optional_text(entry, name)
    return None if text is None else _decimal(text, name)


def _required_decimal(entry: Mapping[str, object], name: str) -> Decimal:
    return _decimal(_text(entry, name), name)


def _decimal_or_zero(entry: Mapping[str, object], name: str) -> Decimal:
    """A quantity the exchange leaves out (or sends as "") while it is nothing yet."""
    return _decimal(_optional_text(entry, name) or "0", name)


def _positive_or_none(entry: Mapping[str, object], name: str) -> Decimal | None:
    """A price that is absent, "" or 0 when there is none (a market order, no liquidation)."""
    number = _optional_decimal(entry, name)
    return number if number is not None and number > 0 else None


def _yes(entry: Mapping[str, object], name: str) -> bool:
    return (_optional_text(entry, name) or "NO").upper() == "YES"


def _enum(kind: type[_E], text: str) -> _E:
    try:
        return kind(text.lower())
    except ValueError:
        raise MalformedAnswer(f"unknown {kind.__name__} {text[:40]!r}") from None
