"""The simulated Bitget exchange as the tests run it: on loopback, books every 30 ms after a
two-second warm-up, one seed per folder; started for a test and stopped after it."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchange, SimExchangeConfig

StartSim = Callable[..., Awaitable[SimExchange]]


def sim_config(seed: int, **overrides: Any) -> SimExchangeConfig:
    """Books every 30 ms after 2 s of warm-up, the market generated from `seed`; `overrides`
    replace any of SimExchangeConfig's settings."""
    settings: dict[str, Any] = {
        "book_interval_ms": 30,
        "warmup_ms": 2_000,
        "market": MarketGeneratorConfig(seed=seed),
    }
    settings.update(overrides)
    return SimExchangeConfig(**settings)


@contextlib.asynccontextmanager
async def running_sim(config: SimExchangeConfig) -> AsyncIterator[SimExchange]:
    """A started exchange on `config`, stopped on the way out."""
    exchange = SimExchange(config)
    await exchange.start()
    try:
        yield exchange
    finally:
        await exchange.stop()


@contextlib.asynccontextmanager
async def sim_starter(make_config: Callable[..., SimExchangeConfig]) -> AsyncIterator[StartSim]:
    """`start(**overrides)` starts an exchange on `make_config(**overrides)`; every one started
    is stopped on the way out."""
    started: list[SimExchange] = []

    async def start(**overrides: Any) -> SimExchange:
        exchange = SimExchange(make_config(**overrides))
        await exchange.start()
        started.append(exchange)
        return exchange

    try:
        yield start
    finally:
        for exchange in started:
            await exchange.stop()
