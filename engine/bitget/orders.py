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


class OrderType(enum.StrEnum):
    LIMIT = "limit"
    MARKET = "market"


class TimeInForce(enum.StrEnum):
    """Bitget's `force` values."""

    GTC = "gtc"
    IOC = "ioc"
    FOK = "fok"
    POST_ONLY = "post_only"
