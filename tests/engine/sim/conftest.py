"""Fixtures that run the real simulated exchange on loopback and connect clients to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import websockets
from sim_clients import WAIT_S, BitgetRest, PublicSocket, sim_config
from support.sim import StartSim, running_sim, sim_starter

from engine.sim.server import SimExchange


@pytest.fixture
async def start_sim() -> AsyncIterator[StartSim]:
    """Start exchanges with config overrides; all are stopped after the test."""
    async with sim_starter(sim_config) as start:
        yield start


@pytest.fixture
async def sim() -> AsyncIterator[SimExchange]:
    async with running_sim(sim_config()) as exchange:
        yield exchange


@pytest.fixture
async def rest(sim: SimExchange) -> AsyncIterator[BitgetRest]:
    async with httpx.AsyncClient(base_url=sim.rest_url, timeout=WAIT_S * 2) as client:
        yield BitgetRest(sim, client)


@pytest.fixture
async def public_ws(sim: SimExchange) -> AsyncIterator[PublicSocket]:
    async with websockets.connect(sim.ws_url) as connection:
        yield PublicSocket(connection)
