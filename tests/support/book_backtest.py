"""A book's backtest for the tests: several quoted symbols of a recording and their hedge (or
a leader watched), built as the engine's configs, sized at each symbol's first mid."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from engine.config import EngineConfig
from engine.contract_sources import RecordedMarket
from engine.laya.config import LayaClassifierConfig
from engine.laya.decide import QuoteGate
from engine.market.instruments import instrument_for
from engine.risk.limits import SymbolLimits
from engine.tools.backtest.session import BacktestSpec
from engine.trading.config import (
    HedgeConfig,
    QuotingStrategyConfig,
    TradingConfig,
    TradingMode,
    default_risk_config,
)

BOOK_QUOTED = ("ETHUSDT", "SOLUSDT", "XRPUSDT")
"""A simulated book's quoted symbols; BTCUSDT, the simulator's leader, hedges them."""
QUOTE_USDT = 120.0
"""A quote's size, USDT (the settings' quote_size_usdt): whole lots at the first mid."""


def book_spec(
    recording: Path,
    quoted: tuple[str, ...],
    hedge: str | None,
    gate: QuoteGate,
    *,
    leader: str | None = None,
    betas: dict[str, float] | None = None,
) -> BacktestSpec:
    """A paper backtest of `quoted` hedged on `hedge` (or, with no hedge, `leader` watched) on
    `recording`, built as the engine's configs: each quoted symbol quotes `QUOTE_USDT` in whole
    lots at its first mid, each symbol capped at a few quotes; the default risk limits else."""
    watched = hedge or leader
    symbols = (*quoted, watched) if watched else quoted
    market = RecordedMarket.read(recording, symbols)
    # A recording's stored contracts, else the built-in ones (the shared recordings store none).
    instruments = tuple(
        market.instruments.get(symbol) or instrument_for(symbol) for symbol in symbols
    )
    strategies, caps = [], []
    for instrument in instruments:
        mid = market.first_mids[instrument.symbol]
        quote = instrument.size_of(max(1, instrument.to_lots(QUOTE_USDT / mid)))
        caps.append(SymbolLimits(instrument.symbol, 4 * quote, 6 * QUOTE_USDT, 4 * quote))
        if instrument.symbol in quoted:
            strategies.append(QuotingStrategyConfig(instrument.symbol, quote_size=quote))
    default = default_risk_config()
    risk = dataclasses.replace(
        default,
        limits=dataclasses.replace(default.limits, symbols=tuple(caps)),
        bounds=dataclasses.replace(
            default.bounds, max_position={cap.symbol: 2 * cap.max_position for cap in caps}
        ),
        hedge_symbol=hedge,
        betas=betas or {},
    )
    trading = TradingConfig(
        mode=TradingMode.PAPER,
        strategies=tuple(strategies),
        hedge=HedgeConfig(hedge) if hedge else None,
        risk=risk,
        instruments=instruments,
    )
    engine = EngineConfig(
        symbols=symbols,
        replay_path=str(recording),
        replay_speed=None,
        laya=LayaClassifierConfig(prefer_gpu=False),
        laya_warmup_s=30.0,  # the settings' [laya] warmup_s
        quote_gate=gate,
        trading=trading,
        status_interval_s=10.0,
        kev_client=None,
        instruments=instruments,
    )
    return BacktestSpec(recording, engine, gate.value)
