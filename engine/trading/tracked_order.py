"""An order as the executor tracks it: its role, its state and the frozen view the UI reads."""

from __future__ import annotations

import enum
from typing import NamedTuple

from engine.bitget.orders import OrderSide
from engine.risk.intents import OrderIntent, Source

FILL_TOLERANCE = 1e-9
"""The share of an order's size left unfilled that still counts as complete."""


class OrderRole(enum.StrEnum):
    BID = "bid"
    ASK = "ask"
    HEDGE = "hedge"
    CLOSE = "close"
    OPERATOR = "operator"


ROLE_LETTER = {
    OrderRole.BID: "b",
    OrderRole.ASK: "a",
    OrderRole.HEDGE: "h",
    OrderRole.CLOSE: "c",
    OrderRole.OPERATOR: "o",
}
"""The letter a role puts in a clientOid."""


class OrderState(enum.StrEnum):
    JOURNALING = "journaling"
    SENDING = "sending"
    LIVE = "live"
    PARTIALLY_FILLED = "partially_filled"
    UNKNOWN = "unknown"
    FILLED = "filled"
    CANCELED = "canceled"
    REJECTED = "rejected"

    @property
    def terminal(self) -> bool:
        return self in (OrderState.FILLED, OrderState.CANCELED, OrderState.REJECTED)


IN_FLIGHT = (OrderState.JOURNALING, OrderState.SENDING)
"""Not at the venue yet, as far as the executor knows."""


class TrackedOrder:
    """One order's life as the executor knows it."""

    __slots__ = (
        "acknowledged",
        "cancel_requested",
        "created_ns",
        "filled",
        "gateway_open",
        "intent",
        "order_id",
        "reason",
        "role",
        "state",
        "updated_ns",
    )

    def __init__(self, intent: OrderIntent, role: OrderRole, now_ns: int) -> None:
        self.intent = intent
        self.role = role
        self.state = OrderState.JOURNALING
        self.order_id: str | None = None
        self.filled = 0.0
        self.acknowledged = False
        self.cancel_requested = False
        self.gateway_open = True
        """The gateway still reserves it: released exactly once, by whichever comes first."""
        self.created_ns = now_ns
        self.updated_ns = now_ns
        self.reason = ""

    @property
    def remaining(self) -> float:
        return max(0.0, self.intent.size - self.filled)

    @property
    def complete(self) -> bool:
        return self.filled >= self.intent.size * (1.0 - FILL_TOLERANCE)


class OrderView(NamedTuple):
    """A frozen copy of one tracked order for the UI."""

    client_oid: str
    order_id: str | None
    symbol: str
    side: OrderSide
    price: float | None
    size: float
    filled: float
    state: OrderState
    role: OrderRole
    source: Source
    reduce_only: bool
    created_ns: int
    reason: str


def order_view(order: TrackedOrder) -> OrderView:
    intent = order.intent
    return OrderView(
        intent.client_oid,
        order.order_id,
        intent.symbol,
        intent.side,
        intent.price,
        intent.size,
        order.filled,
        order.state,
        order.role,
        intent.source,
        intent.reduce_only,
        order.created_ns,
        order.reason,
    )
