"""The book the risk, Kev, fuzz and security tests trade: two symbols (BTCUSDT traded, ETHUSDT
the hedge at ratio 0.5) with their limits and override bounds, fresh marks, and order intents
with generated client oids."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.risk.gateway import RiskGateway
from engine.risk.intents import OrderIntent, Source
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits

BTC = "BTCUSDT"
ETH = "ETHUSDT"
MIDS = {BTC: 60_000.0, ETH: 3_000.0}
HALF_SPREAD = {BTC: 0.5, ETH: 0.05}
T0 = 1_700_006_400_000_000_000
"""2023-11-15 00:00:00 UTC."""
SECOND = 1_000_000_000
MS = 1_000_000
BUY = OrderSide.BUY
SELL = OrderSide.SELL

_client_oids = itertools.count(1)


def make_limits(**overrides: Any) -> RiskLimits:
    limits = RiskLimits(
        symbols=(
            SymbolLimits(BTC, max_position=1.0, max_notional=90_000, max_order_size=0.5),
            SymbolLimits(ETH, max_position=20.0, max_notional=90_000, max_order_size=5.0),
        ),
        max_net_delta=80_000,
        daily_loss_soft=500,
        daily_loss_hard=1_000,
        max_slippage_bps=10,
        max_closing_slippage_bps=100,
        orders_per_second=5,
        orders_per_minute=100,
        max_open_orders=6,
    )
    return replace(limits, **overrides)


def make_bounds(**overrides: Any) -> OverrideBounds:
    bounds = OverrideBounds(
        max_position={BTC: 2.0, ETH: 40.0},
        max_net_delta=160_000,
        max_slippage_bps=50,
        max_orders_per_second=10,
        max_orders_per_minute=200,
    )
    return replace(bounds, **overrides)


def make_config(**overrides: Any) -> RiskGatewayConfig:
    config = RiskGatewayConfig(
        limits=make_limits(),
        bounds=make_bounds(),
        hedge_symbol=ETH,
        hedge_ratio=0.5,
        hedge_ratio_band=(0.25, 1.0),
        max_mark_age_ms=2_000,
    )
    return replace(config, **overrides)


def make_gateway(now_ns: int = T0, **config_overrides: Any) -> RiskGateway:
    """A gateway with fresh marks on both symbols at `now_ns`."""
    gateway = RiskGateway(make_config(**config_overrides))
    for symbol in MIDS:
        mark(gateway, symbol, now_ns)
    return gateway


def mark(
    gateway: RiskGateway,
    symbol: str,
    now_ns: int,
    mid: float | None = None,
    microprice: float | None = None,
    half_spread: float | None = None,
) -> None:
    mid = MIDS[symbol] if mid is None else mid
    half = HALF_SPREAD[symbol] if half_spread is None else half_spread
    gateway.on_mark(
        symbol, mid, mid if microprice is None else microprice, mid - half, mid + half, now_ns
    )


def limit(
    symbol: str,
    side: OrderSide,
    size: float,
    price: float | None = None,
    *,
    source: Source = Source.STRATEGY,
    reduce_only: bool = False,
    client_oid: str | None = None,
) -> OrderIntent:
    """A limit order at the mid unless a price is given."""
    return OrderIntent(
        symbol,
        side,
        size,
        MIDS[symbol] if price is None else price,
        OrderType.LIMIT,
        client_oid or f"t-{next(_client_oids)}",
        source,
        TimeInForce.GTC,
        reduce_only,
        "test",
    )


def market(
    symbol: str,
    side: OrderSide,
    size: float,
    *,
    source: Source = Source.STRATEGY,
    reduce_only: bool = False,
) -> OrderIntent:
    return OrderIntent(
        symbol,
        side,
        size,
        None,
        OrderType.MARKET,
        f"t-{next(_client_oids)}",
        source,
        TimeInForce.IOC,
        reduce_only,
        "test",
    )


def fill(
    gateway: RiskGateway,
    intent: OrderIntent,
    now_ns: int,
    size: float | None = None,
    price: float | None = None,
    fee: float = 0.0,
) -> None:
    """Fill `intent` (whole by default) at its limit price, or at the mid for a market order."""
    price = price if price is not None else intent.price or MIDS[intent.symbol]
    gateway.on_fill(
        intent.client_oid,
        intent.symbol,
        intent.side,
        intent.size if size is None else size,
        price,
        fee,
        now_ns,
    )


def open_position(gateway: RiskGateway, symbol: str, size: float, now_ns: int = T0) -> None:
    """Build a position through an approved, filled order (signed `size`)."""
    intent = limit(symbol, BUY if size > 0 else SELL, abs(size))
    decision = gateway.check(intent, now_ns)
    assert decision.approved, decision
    fill(gateway, intent, now_ns)


def position_of(gateway: RiskGateway, symbol: str) -> float:
    return next(p.size for p in gateway.snapshot().positions if p.symbol == symbol)
