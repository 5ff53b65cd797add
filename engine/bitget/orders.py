"""Bitget's order vocabulary, shared by the REST client, the risk gateway and the simulator."""

from __future__ import annotations

import enum


class OrderSide(enum.StrEnum):
    BUY = "buy"
    SELL = "sell"


class OrderType(enum.StrEnum):
    LIMIT = "limit"
    MARKET = "market"


class TimeInForce(enum.StrEnum):
    """Bitget's `force` values."""

    GTC = "gtc"
    IOC = "ioc"
    FOK = "fok"
    POST_ONLY = "post_only"
