"""Fixtures that run the real simulated exchange on loopback and connect clients to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import websockets
from sim_clients import WAIT_S, BitgetRest, PublicSocket, sim_config

from engine.sim.server import SimExchange


@pytest.fixture
async def start_sim() -> AsyncIterator[Callable[..., Awaitable[SimExchange]]]:
    """Start exchanges with config overrides; all are stopped after the test."""
    started: list[SimExchange] = []

    async def start(**overrides: Any) -> SimExchange:
        exchange = SimExchange(sim_config(**overrides))
        await exchange.start()
        started.append(exchange)
        return exchange

    yield start
    for exchange in started:
        await exchange.stop()


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    exchange = SimExchange(sim_config())
    await exchange.start()
    try:
        yield exchange
    finally:
        await exchange.stop()


@pytest.fixture
async def rest(sim: SimExchange) -> AsyncIterator[BitgetRest]:
    async with httpx.AsyncClient(base_url=sim.rest_url, timeout=WAIT_S * 2) as client:
        yield BitgetRest(sim, client)


@pytest.fixture
async def public_ws(sim: SimExchange) -> AsyncIterator[PublicSocket]:
    async with websockets.connect(sim.ws_url) as connection:
        yield PublicSocket(connection)
