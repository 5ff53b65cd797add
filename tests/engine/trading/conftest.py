"""Fixtures for trading tests: the simulated exchange, fast, and the engine trading on it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sim_engine import engine_config
from support.sim import running_sim, sim_config

from engine.node import EngineNode
from engine.sim.server import SimExchange


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    """The simulated exchange on loopback, pushing books every 30 ms."""
    async with running_sim(sim_config(5)) as exchange:
        yield exchange


@pytest.fixture
async def node(sim, laya_model, tmp_path) -> AsyncIterator[EngineNode]:
    """The whole engine trading on `sim`, started apart (sim_engine.engine_config)."""
    engine = EngineNode(engine_config(sim, laya_model, tmp_path / "journal.sqlite"))
    await engine.start()
    try:
        yield engine
    finally:
        await engine.stop()
