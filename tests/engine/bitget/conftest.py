"""Fixtures: the real simulated exchange, a scripted loopback server, and started clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any

import pytest
from scripted_exchange import ScriptedExchange
from support.bitget import FAST_RETRIES, sim_credentials
from support.sim import StartSim, sim_config, sim_starter

from engine.bitget.credentials import Credentials
from engine.bitget.rest import BitgetRestClient, BitgetRestConfig
from engine.sim.server import SimExchange


@pytest.fixture
async def start_sim() -> AsyncIterator[StartSim]:
    async with sim_starter(partial(sim_config, 11)) as start:
        yield start


@pytest.fixture
async def sim(start_sim: Callable[..., Awaitable[SimExchange]]) -> SimExchange:
    return await start_sim()


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedExchange]:
    exchange = ScriptedExchange()
    await exchange.start()
    try:
        yield exchange
    finally:
        await exchange.stop()


@pytest.fixture
async def start_client() -> AsyncIterator[Callable[..., Awaitable[BitgetRestClient]]]:
    """Start clients: `start_client(base_url, credentials, wall_clock_ns=..., **config)`."""
    started: list[BitgetRestClient] = []

    async def start(
        base_url: str, credentials: Credentials, wall_clock_ns: Any = None, **overrides: Any
    ) -> BitgetRestClient:
        config = BitgetRestConfig(base_url=base_url, **{**FAST_RETRIES, **overrides})
        extra = {"wall_clock_ns": wall_clock_ns} if wall_clock_ns is not None else {}
        client = BitgetRestClient(config, credentials, **extra)
        await client.start()
        started.append(client)
        return client

    yield start
    for client in started:
        await client.stop()


@pytest.fixture
async def client(
    sim: SimExchange, start_client: Callable[..., Awaitable[BitgetRestClient]]
) -> BitgetRestClient:
    return await start_client(sim.rest_url, sim_credentials(sim))
