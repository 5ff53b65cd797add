"""The fast path's numba kernels are compiled by `compile_fast_path`, not by the first frame."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine.warmup import compile_fast_path

PROBE = """
from engine.feed.frame_kernel import scan_frame
from engine.feed.tape import admit_trade
from engine.laya.features import compute_features
kernels = (scan_frame, admit_trade, compute_features)
before = [len(kernel.signatures) for kernel in kernels]
from engine.warmup import compile_fast_path
compile_fast_path(("BTCUSDT", "ETHUSDT"))
print(before, [len(kernel.signatures) for kernel in kernels])
"""


def test_every_fast_path_kernel_is_compiled_before_the_first_frame():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=240, check=True
    )
    before, after = result.stdout.strip().split("] [")
    assert before == "[0, 0, 0"
    assert all(int(count) >= 1 for count in after.rstrip("]").split(", "))


@pytest.mark.parametrize("symbols", [("BTCUSDT",), ("BTCUSDT", "ETHUSDT"), ("SOLUSDT", "XRPUSDT")])
def test_the_synthetic_frames_pass_the_parser_for_any_symbols(symbols):
    """A rejected warm-up frame would leave its kernels uncompiled; the warm-up refuses that."""
    assert compile_fast_path(symbols) >= 0.0
