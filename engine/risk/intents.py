"""What reaches the risk gateway (order, cancel and close requests) and what it answers.

Intents and decisions are NamedTuples: immutable and cheap to build, because every order the
strategy quotes passes through `RiskGateway.check` on the hot path. The enums spell Bitget's
values (bitget-v2.md §4) so the executor can send them as they are.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from engine.bitget.orders import OrderSide, OrderType, TimeInForce


class Source(enum.StrEnum):
    """Who asked for an order or a state change. RISK is the gateway itself: its own closing
    orders and the state changes it makes on its own (daily loss, flatten complete)."""

    STRATEGY = "strategy"
    KEV = "kev"
    OPERATOR = "operator"
    HEDGE = "hedge"
    RISK = "risk"


class OrderIntent(NamedTuple):
    """A new order someone wants to send. `size` is in base coin; `price` is None for market
    orders; `client_oid` identifies the order in every later update."""

    symbol: str
    side: OrderSide
    size: float
    price: float | None
    order_type: OrderType
    client_oid: str
    source: Source
    force: TimeInForce = TimeInForce.GTC
    reduce_only: bool = False
    purpose: str = ""


class CancelScope(enum.StrEnum):
    """One order (Bitget cancel-order), every order of a symbol or every order
    (batch-cancel-orders without an id list)."""

    ORDER = "order"
    SYMBOL = "symbol"
    ALL = "all"


class CancelIntent(NamedTuple):
    """A cancel request; `symbol` is needed for ORDER and SYMBOL, `client_oid` for ORDER."""

    scope: CancelScope
    source: Source
    symbol: str | None = None
    client_oid: str | None = None


class ClosePositionsIntent(NamedTuple):
    """Bitget's flash close (close-positions) of one symbol's position, or of all (None)."""

    source: Source
    symbol: str | None = None


RiskRequest = OrderIntent | CancelIntent | ClosePositionsIntent


class DenialReason(enum.IntEnum):
    """Why the gateway refused a request; the values index the per-reason denial counts."""

    UNKNOWN_SYMBOL = 0
    INVALID_INTENT = 1
    DUPLICATE_CLIENT_OID = 2
    TRADING_PAUSED = 3
    TRADING_HALTED = 4
    REDUCING_ONLY = 5
    FEED_UNHEALTHY = 6
    NO_MARKET_DATA = 7
    STALE_MARKET_DATA = 8
    ORDER_SIZE = 9
    SLIPPAGE = 10
    POSITION_LIMIT = 11
    NOTIONAL_LIMIT = 12
    NET_DELTA_LIMIT = 13
    MAX_OPEN_ORDERS = 14
    ORDER_RATE = 15
    ENDPOINT_RATE = 16
    SYMBOL_PAUSED = 17
    """The symbol alone is stood aside (the operator's pause, the venue's status)."""


class RiskDecision(NamedTuple):
    """The gateway's answer: approved, or denied with a reason code and a short text."""

    approved: bool
    reason: DenialReason | None
    text: str


APPROVED = RiskDecision(True, None, "")
"""The one approval instance: approving allocates nothing."""
