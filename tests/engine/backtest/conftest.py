"""A simulated session the backtest tests share (written once: the simulator is deterministic)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.laya.dataset import simulate_recording

SHARED_REPLAY = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "replay"


@pytest.fixture(scope="session")
def simulated_session(tmp_path_factory) -> Path:
    """Four minutes of the simulated BTCUSDT/ETHUSDT market, books every 100 ms."""
    path = tmp_path_factory.mktemp("backtest") / "simulated.bitget.gz"
    simulate_recording(path, 4.0, seed=11)
    return path
