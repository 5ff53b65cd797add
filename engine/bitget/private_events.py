"""What the private stream (Bitget's `orders`, `fill` and `positions` channels) tells the engine.

The same events come from every venue: the simulator's and Bitget's private websocket, and the
in-process paper venue. Sizes are base coin, prices USDT, floats: these feed the risk gateway
and the strategy, which work in floats; the REST models keep Decimals for what is sent.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

from engine.bitget.orders import OrderSide, OrderStatus


class OrderUpdate(NamedTuple):
    """One push of the `orders` channel: the order's state after a create, fill or cancel."""

    symbol: str
    order_id: str
    client_oid: str
    side: OrderSide
    price: float | None
    size: float
    filled_size: float
    average_price: float | None
    status: OrderStatus
    reduce_only: bool
    updated_ms: int
    recv_ns: int
    cancel_reason: str = ""


class FillUpdate(NamedTuple):
    """One execution of the `fill` channel. `trade_id` is unique per fill: replays of the same
    fill (a reconnect, a REST reconciliation) carry the same id and must be applied once."""

    symbol: str
    order_id: str
    client_oid: str
    trade_id: str
    side: OrderSide
    price: float
    size: float
    fee: float
    """USDT paid (positive) or rebated (negative)."""
    maker: bool
    filled_ms: int
    recv_ns: int


class PositionEntry(NamedTuple):
    symbol: str
    size: float
    """Signed: long > 0, short < 0 (one-way mode)."""
    entry_price: float
    mark_price: float | None
    unrealized_pnl: float


class PositionsUpdate(NamedTuple):
    """A `positions` push: the full list of open positions (a symbol missing from it is flat)."""

    positions: tuple[PositionEntry, ...]
    updated_ms: int
    recv_ns: int


class PrivateStreamState(enum.StrEnum):
    CONNECTING = "connecting"
    LIVE = "live"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    """Login refused (bad key, signature, environment): retrying cannot help."""
    STOPPED = "stopped"


class PrivateStreamChanged(NamedTuple):
    """The private stream's state changed. After a reconnect (-> LIVE again) pushes may have
    been lost, so the executor reconciles open orders and positions over REST."""

    state: PrivateStreamState
    reason: str
    at_ns: int


PrivateEvent = OrderUpdate | FillUpdate | PositionsUpdate | PrivateStreamChanged
