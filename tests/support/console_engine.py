"""The real engine for the console's tests: the simulated exchange on loopback, on the test's
loop, and the engine configured to trade on it (in its own process, started by the test)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from console.engine.config import EngineAdapterConfig
from engine.config import EngineConfig
from engine.laya.config import LayaClassifierConfig
from engine.sim.server import SimExchange
from engine.tools.bench.trading import NEVER_EMERGENCY
from engine.trading.config import QuotingStrategyConfig, TradingConfig
from support.sim import running_sim, sim_config

FAST = EngineAdapterConfig(publish_hz=20, gpu=None)
ENGINE_WAIT_S = 15.0
"""How long a test waits on the engine process (it starts, connects and quotes first)."""


@pytest.fixture(name="sim")
async def sim_exchange() -> AsyncIterator[SimExchange]:
    """The fixture `sim` (imported under this name, the tests' parameter never shadows it)."""
    async with running_sim(sim_config(5)) as exchange:
        yield exchange


def sim_engine(sim: SimExchange, model: Path, journal: Path) -> EngineConfig:
    """The engine on `sim` (started apart), quoting close to the touch, Laya never EMERGENCY."""
    trading = TradingConfig(
        strategies=(QuotingStrategyConfig(half_spread_bps=0.05, emergency_cooldown_ms=200),),
        journal_path=journal,
        rest_url=sim.rest_url,
    )
    laya = LayaClassifierConfig(model_path=model, prefer_gpu=False, thresholds=NEVER_EMERGENCY)
    return EngineConfig(live_url=sim.ws_url, laya=laya, trading=trading, status_interval_s=0.05)
