"""A book on the in-process simulator for the tests: three quoted symbols following their
hedge, with risk limits and quote sizes in whole lots of about so many USDT."""

from __future__ import annotations

import math
from pathlib import Path

from engine.config import EngineConfig
from engine.laya.config import LayaClassifierConfig
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits
from engine.sim.contracts import sim_instrument
from engine.sim.market import sim_symbol
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.config import HedgeConfig, QuotingStrategyConfig, TradingConfig

QUOTED = ("SOLUSDT", "XRPUSDT", "LINKUSDT")
HEDGE = "BTCUSDT"


def lots_of(symbol: str, usdt: float) -> float:
    """Whole lots of `symbol` worth about `usdt` at the simulator's start price."""
    instrument = sim_instrument(symbol)
    lots = max(1, math.floor(usdt / sim_symbol(symbol).start_price / instrument.size_step))
    return instrument.size_of(lots)


def sim_book_engine(model: Path, journal: Path) -> EngineConfig:
    """The engine trading the book on its in-process simulator, Laya never EMERGENCY."""
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
