"""Bitget's order vocabulary, shared by the REST client, the risk gateway, the matching engine
and the simulator."""

from __future__ import annotations

import enum


class OrderSide(enum.StrEnum):
    """An order's side, or a trade's aggressor side."""

    BUY = "buy"
    SELL = "sell"

    @property
    def sign(self) -> int:
        return 1 if self is OrderSide.BUY else -1

    @property
    def opposite(self) -> OrderSide:
        return OrderSide.SELL if self is OrderSide.BUY else OrderSide.BUY


class OrderStatus(enum.StrEnum):
    """Bitget's order lifecycle: live -> partially_filled -> filled, or live -> canceled (IOC,
    FOK and post-only refusals end as canceled)."""

    LIVE = "live"
    PARTIALLY_FILLED = "partially_filled"
    FILLED = "filled"
    CANCELED = "canceled"

    @property
    def terminal(self) -> bool:
        return self is OrderStatus.FILLED or self is OrderStatus.CANCELED


class OrderType(enum.StrEnum):
    LIMIT = "limit"
    MARKET = "market"


class TimeInForce(enum.StrEnum):
    """Bitget's `force` values."""

    GTC = "gtc"
    IOC = "ioc"
    FOK = "fok"
    POST_ONLY = "post_only"
