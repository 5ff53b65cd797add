"""Kev's test kit: a risk gateway with fresh marks, and a real llama-server for the tiny model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.kev.config import LlamaServerConfig
from engine.kev.model_fetch import is_gguf, tiny_model_path
from engine.kev.server import LlamaServerError, LlamaServerProcess, find_llama_server, free_port
from engine.risk.gateway import RiskGateway
from support.risk import MIDS, T0, make_config


def make_gateway(now_ns: int = T0, hedge_ratio: float = 0.5, **config: Any) -> RiskGateway:
    """BTCUSDT traded, ETHUSDT the hedge (band 0.25-1.0), both marked at `now_ns`; `config`
    overrides the rest of `make_config`'s."""
    gateway = RiskGateway(make_config(hedge_ratio=hedge_ratio, **config))
    for symbol, mid in MIDS.items():
        gateway.on_mark(symbol, mid, mid, mid * 0.99999, mid * 1.00001, now_ns)
    gateway.drain_events()
    return gateway


def real_llama_server() -> tuple[Path, Path]:
    """The llama-server binary and the tiny GGUF model, or skip saying what is missing."""
    try:
        binary = find_llama_server()
    except LlamaServerError as error:
        pytest.skip(f"no llama-server: {error}")
    model = tiny_model_path()
    if not is_gguf(model):
        pytest.skip(f"the tiny model is not at {model}: run hft-console kev fetch-tiny-model")
    return binary, model


def tiny_llama_server(folder: Path, **settings: Any) -> LlamaServerProcess:
    """A llama-server process (not started) for the tiny model on one thread, logging into
    `folder`; `settings` override LlamaServerConfig's. Skips the test where either is absent."""
    binary, model = real_llama_server()
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
