"""Fixtures for trading tests: the simulated exchange, fast."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchange, SimExchangeConfig


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    """The simulated exchange on loopback, pushing books every 30 ms."""
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
