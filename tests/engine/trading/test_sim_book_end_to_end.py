"""The whole engine trading a book on its in-process simulator: three quoted symbols that follow
their hedge through a common factor. Each symbol's quotes rest at the exchange, fills on any
of them are hedged on the book's net delta, and the kill leaves every symbol flat."""

from __future__ import annotations

import math

import pytest
from support.waiting import eventually

from engine.config import EngineConfig
from engine.laya.config import LayaClassifierConfig
from engine.node import EngineNode
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits
from engine.sim.contracts import sim_instrument
from engine.sim.market import sim_symbol
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.commands import Command, Kill
from engine.trading.config import HedgeConfig, QuotingStrategyConfig, TradingConfig

QUOTED = ("SOLUSDT", "XRPUSDT", "LINKUSDT")
HEDGE = "BTCUSDT"


def lots_of(symbol: str, usdt: float) -> float:
    """Whole lots of `symbol` worth about `usdt` at the simulator's start price."""
    instrument = sim_instrument(symbol)
    lots = max(1, math.floor(usdt / sim_symbol(symbol).start_price / instrument.size_step))
    return instrument.size_of(lots)


def book_config(model, journal) -> EngineConfig:
    symbols = (*QUOTED, HEDGE)
    limits = RiskLimits(
        symbols=tuple(
            SymbolLimits(
                symbol,
                max_position=lots_of(symbol, 1_000),
                max_notional=2_000,
                max_order_size=lots_of(symbol, 500),
            )
            for symbol in symbols
        ),
        max_net_delta=2_500,
        daily_loss_soft=500,
        daily_loss_hard=1_000,
    )
    bounds = OverrideBounds(
        max_position={symbol: lots_of(symbol, 2_000) for symbol in symbols},
        max_net_delta=5_000,
        max_slippage_bps=20,
        max_orders_per_second=10,
        max_orders_per_minute=400,
    )
    trading = TradingConfig(
        strategies=tuple(
            QuotingStrategyConfig(symbol, quote_size=lots_of(symbol, 100), half_spread_bps=0.05)
            for symbol in QUOTED
        ),
        hedge=HedgeConfig(HEDGE, deadband_usdt=40.0),
        risk=RiskGatewayConfig(
            limits=limits,
            bounds=bounds,
            hedge_symbol=HEDGE,
            hedge_ratio=1.0,
            hedge_ratio_band=(0.5, 1.0),
        ),
        instruments=tuple(sim_instrument(symbol) for symbol in symbols),
        journal_path=journal,
    )
    laya = LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=NEVER_EMERGENCY)
    return EngineConfig(symbols=symbols, laya=laya, trading=trading, status_interval_s=0.05)


@pytest.mark.timeout(120)
async def test_a_book_quotes_each_symbol_hedges_and_the_kill_leaves_all_flat(laya_model, tmp_path):
    node = EngineNode(book_config(laya_model, tmp_path / "journal.sqlite"))
    await node.start()
    try:
        sim = node.sim
        assert sim is not None
        desk = node.desk

        def resting() -> set[str]:
            return {order.symbol for order in sim.open_orders()}

        await eventually(lambda: resting() >= set(QUOTED), 30, "quotes on every symbol")
        assert HEDGE not in resting()  # the hedge is never quoted

        def positions() -> dict[str, float]:
            return {p.symbol: p.size for p in desk.executor.risk_view().positions if p.size}

        await eventually(
            lambda: HEDGE in positions() and len(positions()) >= 2,
            60,
            "fills on the book and a hedge against them",
        )
        status = node.status()
        assert status.trading is not None
        shown = {position.symbol for position in status.trading.risk.positions}
        assert shown == {*QUOTED, HEDGE}
        result = await node.execute(Command(Kill("test: end of the book")))
        assert result.ok, result.message
        assert sim.open_orders() == []
        assert {p.symbol: p.size for p in sim.positions() if p.size} == {}
    finally:
        await node.stop()
