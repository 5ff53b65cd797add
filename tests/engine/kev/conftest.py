"""Fixtures: a scripted llama-server on loopback, a real one with the tiny model, and a risk
gateway with fresh marks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from scripted_llama import ScriptedLlama

from engine.kev.model_fetch import is_gguf, tiny_model_path
from engine.kev.server import (
    LlamaServerConfig,
    LlamaServerError,
    LlamaServerProcess,
    find_llama_server,
    free_port,
)
from engine.risk import (
    OverrideBounds,
    RiskGateway,
    RiskGatewayConfig,
    RiskLimits,
    SymbolLimits,
)

BTC = "BTCUSDT"
ETH = "ETHUSDT"
MIDS = {BTC: 60_000.0, ETH: 3_000.0}
T0 = 1_700_006_400_000_000_000
"""2023-11-15 00:00:00 UTC, in ns."""
MS = 1_000_000


def make_gateway(now_ns: int = T0, hedge_ratio: float = 0.5) -> RiskGateway:
    """BTCUSDT traded, ETHUSDT the hedge (band 0.25-1.0), both marked at `now_ns`."""
    limits = RiskLimits(
        symbols=(
            SymbolLimits(BTC, max_position=1.0, max_notional=90_000, max_order_size=0.5),
            SymbolLimits(ETH, max_position=20.0, max_notional=90_000, max_order_size=5.0),
        ),
        max_net_delta=80_000,
        daily_loss_soft=500,
        daily_loss_hard=1_000,
    )
    bounds = OverrideBounds({BTC: 2.0, ETH: 40.0}, 160_000, 50, 10, 300)
    gateway = RiskGateway(
        RiskGatewayConfig(
            limits,
            bounds,
            hedge_symbol=ETH,
            hedge_ratio=hedge_ratio,
            hedge_ratio_band=(0.25, 1.0),
        )
    )
    for symbol, mid in MIDS.items():
        gateway.on_mark(symbol, mid, mid, mid * 0.99999, mid * 1.00001, now_ns)
    gateway.drain_events()
    return gateway


@pytest.fixture
async def scripted() -> AsyncIterator[ScriptedLlama]:
    server = ScriptedLlama()
    await server.start()
    yield server
    await server.stop()


def tiny_llama_server(folder: Path, **settings: Any) -> LlamaServerProcess:
    """A llama-server process (not started) for the tiny model on one thread, logging into
    `folder`; `settings` override LlamaServerConfig's. Skips the test where either is absent."""
    try:
        binary = find_llama_server()
    except LlamaServerError as error:
        pytest.skip(f"no llama-server: {error}")
    model = tiny_model_path()
    if not is_gguf(model):
        pytest.skip(f"the tiny model is not at {model}: run hft-console kev fetch-tiny-model")
    return LlamaServerProcess(
        LlamaServerConfig(
            model=str(model),
            binary=str(binary),
            port=free_port(),
            threads=1,
            ready_timeout_s=120,
            pid_path=str(folder / "llama-server.pid"),
            log_path=str(folder / "llama-server.log"),
            **settings,
        )
    )


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory) -> Iterator[LlamaServerProcess]:
    """A real llama-server with the tiny model, on one thread (the other core stays for the
    test process, as a GPU box leaves the CPU to the engine), for the whole session."""
    server = tiny_llama_server(tmp_path_factory.mktemp("llama-server"))
    server.start()
    yield server
    server.stop()
