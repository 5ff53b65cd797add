"""The fast path's numba kernels are compiled by `compile_fast_path`, not by the first frame."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import numpy as np
import pytest

from engine.warmup import InferenceWarmer, compile_fast_path

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


class _RecordingClassifier:
    """Stands in for LayaClassifier.infer: records what it was asked, can be made to fail."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.calls: list[np.ndarray] = []
        self._fail_after = fail_after

    def infer(self, features: np.ndarray) -> np.ndarray:
        if self._fail_after is not None and len(self.calls) >= self._fail_after:
            raise RuntimeError("CUDA device lost")
        self.calls.append(features)
        return np.full((1, 4), 0.25, np.float32)


async def test_the_warmer_runs_throwaway_inferences_while_idle_and_stops():
    classifier = _RecordingClassifier()
    warmer = InferenceWarmer((classifier,), 128, 0.002)
    warmer.start()
    await asyncio.sleep(0.1)
    await warmer.stop()
    runs = warmer.runs
    assert runs >= 5
    assert all(call.shape == (1, 128) and not call.any() for call in classifier.calls)
    await asyncio.sleep(0.02)
    assert warmer.runs == runs


async def test_a_failing_inference_stops_the_warmer_and_says_why():
    warmer = InferenceWarmer((_RecordingClassifier(fail_after=2),), 128, 0.001)
    warmer.start()
    await asyncio.sleep(0.1)
    assert warmer.runs == 2
    assert warmer.fault == "RuntimeError: CUDA device lost"
    await warmer.stop()


async def test_every_model_of_the_book_is_warmed_and_one_failing_leaves_the_others_warm():
    failing, warm = _RecordingClassifier(fail_after=2), _RecordingClassifier()
    warmer = InferenceWarmer((failing, warm), 128, 0.001)
    warmer.start()
    await asyncio.sleep(0.1)
    await warmer.stop()
    assert len(failing.calls) == 2 and len(warm.calls) >= 5
    assert warmer.runs == len(failing.calls) + len(warm.calls)
    assert warmer.fault == "RuntimeError: CUDA device lost"


def test_the_warmer_refuses_a_non_positive_interval():
    with pytest.raises(ValueError, match="interval_s must be > 0"):
        InferenceWarmer((_RecordingClassifier(),), 128, 0.0)
