"""Fixtures: two short simulated sessions to train on."""

from __future__ import annotations

import pytest

from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording


@pytest.fixture(scope="session")
def sessions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("laya-train")
    market = MarketGeneratorConfig(burst_rate_per_min=3.0)
    return [
        simulate_recording(folder / f"session-{seed}.gz", 2.5, seed=seed, market=market).path
        for seed in (5, 6)
    ]
