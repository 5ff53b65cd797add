"""A simulated session the backtest tests share (written once: the simulator is deterministic),
and its runs under each compared gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.settings.reader import load_settings
from engine.sim.recording import simulate_recording
from engine.tools.backtest.metrics import SessionMetrics
from engine.tools.backtest.plan import COMPARED_GATES, backtest_specs, grid, run_specs

SHARED_REPLAY = Path(__file__).resolve().parents[4] / ".." / "shared" / "data" / "replay"


@pytest.fixture(scope="session")
def simulated_session(tmp_path_factory) -> Path:
    """Four minutes of the simulated BTCUSDT/ETHUSDT market, books every 100 ms."""
    path = tmp_path_factory.mktemp("backtest") / "simulated.bitget.gz"
    simulate_recording(path, 4.0, seed=11)
    return path


@pytest.fixture(scope="session")
def compared_runs(simulated_session) -> list[SessionMetrics]:
    """The simulated session under each compared gate (laya, none, imbalance), in this process."""
    settings = load_settings(environ={"HFT_CONSOLE_LAYA__PREFER_GPU": "false"})
    specs = backtest_specs(settings, [simulated_session], None, grid([]), COMPARED_GATES)
    return run_specs(specs, jobs=1)
