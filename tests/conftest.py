"""Fixtures shared across the suite."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.model import LayaModelMetadata, export_mlp

# Laya stands aside for 30 s of market data after start ([laya] warmup_s): the consoles and
# headless runs the tests start, in this process or in children, act on their first book.
# Set at import, before any test module copies the environment for its subprocesses.
os.environ["HFT_CONSOLE_LAYA__WARMUP_S"] = "0"
# Their journals (and its lock: one engine per journal) go to a data directory of this run's
# own, never the user's, where two test runs at once would refuse each other's engines.
_DATA_HOME = tempfile.mkdtemp(prefix="hft-console-tests-")
os.environ["XDG_DATA_HOME"] = _DATA_HOME
atexit.register(shutil.rmtree, _DATA_HOME, ignore_errors=True)

LABEL_PARAMETERS = {
    "horizon_ms": 1000,
    "sigma_window_ms": 300_000,
    "emergency_sigma": 3,
    "lean_sigma": 1,
}


@pytest.fixture(scope="session")
def laya_model(tmp_path_factory) -> Path:
    """A real Laya model file with small random weights (128-16-4): for wiring tests that need
    any valid model, independent of the shipped one."""
    rng = np.random.default_rng(7)
    layers = [
        (rng.normal(0, 0.1, (FEATURE_COUNT, 16)), np.zeros(16)),
        (rng.normal(0, 0.1, (16, 4)), np.zeros(4)),
    ]
    metadata = LayaModelMetadata(
        FEATURE_SET_VERSION,
        FEATURE_COUNT,
        LABEL_PARAMETERS,
        (0.0, 0.0, 0.0, 0.0),
        {"purpose": "test fixture"},
    )
    return export_mlp(tmp_path_factory.mktemp("laya") / "random.onnx", layers, metadata)
