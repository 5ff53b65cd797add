"""What the trading side tells the console: one event per fact, never merged.

These go into the node's event log next to the feed's and the risk gateway's events. Each is
a past-tense fact stamped with epoch nanoseconds.
"""

from __future__ import annotations

from typing import NamedTuple

from engine.bitget.orders import OrderSide
from engine.units import coin


class OrderAcknowledged(NamedTuple):
    client_oid: str
    order_id: str | None
    symbol: str
    side: OrderSide
    price: float | None
    size: float
    role: str
    at_ns: int


class OrderRejectedByVenue(NamedTuple):
    """The venue refused an order the gateway approved, or it was withdrawn before sending
    (`code` empty: the reason says why)."""

    client_oid: str
    symbol: str
    code: str
    reason: str
    at_ns: int


class OrderCancelled(NamedTuple):
    client_oid: str
    symbol: str
    reason: str
    at_ns: int


class OrderFilled(NamedTuple):
    client_oid: str
    symbol: str
    side: OrderSide
    price: float
    size: float
    fee: float
    maker: bool
    trade_id: str
    at_ns: int


class VerdictActed(NamedTuple):
    """Laya's verdict made the engine act: cancel everything (EMERGENCY) or pull a side."""

    symbol: str
    intent: str
    action: str
    at_ns: int


class OrderMissingAtVenue(NamedTuple):
    """An order we had open is not open at the venue (it ended while we were not hearing)."""

    client_oid: str
    symbol: str
    detail: str
    at_ns: int


class UnknownOrderAtVenue(NamedTuple):
    """The venue has an open order we do not track (from a previous run, or placed by hand)."""

    client_oid: str
    order_id: str
    symbol: str
    detail: str
    at_ns: int


class ReconciliationDone(NamedTuple):
    """Open orders and positions compared with the venue (and the journal, at start)."""

    reason: str
    venue_orders: int
    missing: int
    unknown: int
    positions_synced: int
    at_ns: int


class CommandExecuted(NamedTuple):
    """An operator command and its outcome (kill, flatten, pause, resume, rearm, overrides)."""

    command: str
    ok: bool
    message: str
    elapsed_ms: float
    at_ns: int


class HedgeCapChanged(NamedTuple):
    """The hedge reached its cap with the book's net delta still outside the deadband
    (`capped`: `unhedged` USDT of it left), or is back under it, hedging fully again. Said once
    each way: a hedge at its cap is a state, its orders are sized to it, none is denied."""

    symbol: str
    capped: bool
    position_cap: float
    """The gateway's cap on the hedge's position, either way (base coin, whole lots:
    `RiskGateway.position_cap`)."""
    unhedged: float
    at_ns: int

    @property
    def text(self) -> str:
        cap = coin(self.symbol, self.position_cap)
        if self.capped:
            return (
                f"{self.symbol} hedge at its cap {cap}: {self.unhedged:+,.0f} USDT of the book's "
                "net delta left unhedged"
            )
        return f"{self.symbol} hedge back under its cap {cap}: hedging the book's net delta fully"


class TradingFault(NamedTuple):
    """Something the operator must know: a journal that cannot write, a venue that fails."""

    reason: str
    at_ns: int


TradingEvent = (
    OrderAcknowledged
    | OrderRejectedByVenue
    | OrderCancelled
    | OrderFilled
    | VerdictActed
    | OrderMissingAtVenue
    | UnknownOrderAtVenue
    | ReconciliationDone
    | CommandExecuted
    | HedgeCapChanged
    | TradingFault
)
