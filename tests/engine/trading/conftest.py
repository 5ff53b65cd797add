"""Fixtures for trading tests: the simulated exchange, fast."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from support.sim import running_sim, sim_config

from engine.sim.server import SimExchange


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    """The simulated exchange on loopback, pushing books every 30 ms."""
    async with running_sim(sim_config(5)) as exchange:
        yield exchange
