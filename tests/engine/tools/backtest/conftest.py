"""A simulated session the backtest tests share (written once: the simulator is deterministic),
and its runs under each compared gate; a simulated book and a book's backtest."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.book_backtest import BOOK_QUOTED, book_spec

from engine.settings.reader import load_settings
from engine.sim.market import sim_book
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


@pytest.fixture(scope="session")
def simulated_book(tmp_path_factory) -> Path:
    """Three minutes of a simulated book: `BOOK_QUOTED` following BTCUSDT, books every 100 ms."""
    path = tmp_path_factory.mktemp("backtest") / "book.bitget.gz"
    simulate_recording(path, 3.0, seed=11, market=sim_book(BOOK_QUOTED, 11, "BTCUSDT"))
    return path


@pytest.fixture(scope="session")
def compared_book_runs(simulated_book) -> list[SessionMetrics]:
    """The simulated book, hedged on BTCUSDT, under each compared gate, in this process."""
    specs = [book_spec(simulated_book, BOOK_QUOTED, "BTCUSDT", gate) for gate in COMPARED_GATES]
    return run_specs(specs, jobs=1)
