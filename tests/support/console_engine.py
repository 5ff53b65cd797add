"""The real engine for the console's tests: the simulated exchange on loopback, on the test's
loop, and the engine configured to trade on it (in its own process, started by the test)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from console.engine.config import EngineAdapterConfig
from engine.laya.classifier import LayaClassifierConfig
from engine.node import EngineConfig
from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchange, SimExchangeConfig
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.config import QuotingStrategyConfig, TradingConfig

FAST = EngineAdapterConfig(publish_hz=20, gpu=None)


@pytest.fixture(name="sim")
async def sim_exchange() -> AsyncIterator[SimExchange]:
    """The fixture `sim` (imported under this name, the tests' parameter never shadows it)."""
    exchange = SimExchange(
        SimExchangeConfig(
            book_interval_ms=30, warmup_ms=2_000, market=MarketGeneratorConfig(seed=5)
        )
    )
    await exchange.start()
    try:
        yield exchange
    finally:
        await exchange.stop()


def sim_engine(sim: SimExchange, model: Path, journal: Path) -> EngineConfig:
    """The engine on `sim` (started apart), quoting close to the touch, Laya never EMERGENCY."""
    trading = TradingConfig(
        strategy=QuotingStrategyConfig(half_spread_bps=0.05, emergency_cooldown_ms=200),
        journal_path=journal,
        rest_url=sim.rest_url,
    )
    laya = LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=NEVER_EMERGENCY)
    return EngineConfig(live_url=sim.ws_url, laya=laya, trading=trading, status_interval_s=0.05)


async def eventually(condition: Callable[[], bool], timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.02)
