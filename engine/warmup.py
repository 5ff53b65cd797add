"""Keep the fast path ready: its numba kernels compiled before the first market frame, and
Laya's inference warm between frames.

numba compiles a kernel on its first call (or loads it from its on-disk cache). On a fresh
install that first call takes tens of seconds; made by the first real frame, it would block
the engine loop while feeds go stale and the kill switch waits. `compile_fast_path` makes those
first calls on synthetic frames through throwaway parser and pipeline objects, so no engine
state is touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

import numpy as np

from engine.bitget.orders import OrderSide
from engine.config import MarketPipelineConfig
from engine.feed.parse import FrameParser
from engine.laya.classifier import LayaClassifier
from engine.market.instruments import Instrument
from engine.pipeline import MarketPipeline
from engine.sim.frames import depth_frame, format_levels, trade_frame
from engine.sim.market import SimTrade

_BOOK_FRAMES = 3
_LEVELS = 15


def _frames(symbol: str, mid: float, ts_ms: int, trade_id: int) -> tuple[str, str]:
    """A trade and a books15 snapshot around `mid`, built as the simulator builds them."""
    instrument = Instrument(symbol, tick_size=0.01, size_step=0.001)
    steps = np.arange(1, _LEVELS + 1)
    sizes = 0.5 + 0.1 * steps
    bids = format_levels(mid - 0.01 * steps, sizes, instrument)
    asks = format_levels(mid + 0.01 * steps, sizes, instrument)
    trade = SimTrade(symbol, mid, 0.01, OrderSide.BUY, trade_id, ts_ms)
    return (
        trade_frame(symbol, (trade,), instrument, action="update", push_ms=ts_ms),
        depth_frame(
            "books15",
            symbol,
            bids,
            asks,
            action="snapshot",
            seq=ts_ms,
            pseq=0,
            checksum=0,
            ts_ms=ts_ms,
            push_ms=ts_ms,
        ),
    )


def compile_fast_path(symbols: tuple[str, ...]) -> float:
    """Parse and featurise a few synthetic frames per symbol; returns the seconds it took
    (long only the first time after an install, when numba has nothing cached)."""
    started = time.perf_counter()
    parser = FrameParser(symbols)
    pipeline = MarketPipeline(MarketPipelineConfig(symbols=symbols), parser.tape)
    ts_ms = 1_700_000_000_000
    for step in range(_BOOK_FRAMES):
        for index, symbol in enumerate(symbols):
            mid = 1_000.0 * (index + 1) + step
            now_ms = ts_ms + step * 100 + index
            for text in _frames(symbol, mid, now_ms, step * 10 + index + 1):
                frame = parser.parse(text.encode(), now_ms * 1_000_000)
                if frame is not None:
                    pipeline.on_market(frame)
    if any(parser.stats.rejected.values()):
        # A rejected frame never reaches the kernels behind it: they would compile on the
        # first market frame after all.
        raise RuntimeError(f"fast-path warm-up frames were rejected: {parser.stats.rejected}")
    return time.perf_counter() - started


class InferenceWarmer:
    """Keeps Laya's inference hot between frames: one throwaway run every `interval_s`.

    Measured on the development VM: a run after 10-20 ms of idling costs ~220 us against
    ~15 us back to back (caches and predictors gone cold), which dominated the EMERGENCY ->
    cancel reaction; a run every 5 ms keeps it near 40 us for well under 1% of a core. The
    runs go straight to the classifier, so no stage histogram or verdict sees them.
    """

    def __init__(
        self, classifiers: Sequence[LayaClassifier], feature_count: int, interval_s: float
    ) -> None:
        """`classifiers`: each model a symbol of the book runs on, each warmed every interval
        (any symbol's EMERGENCY cancels at once)."""
        if not interval_s > 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self._classifiers = list(classifiers)
        self._features = np.zeros((1, feature_count), dtype=np.float32)
        self._interval_s = interval_s
        self._task: asyncio.Task[None] | None = None
        self.runs = 0
        self.fault: str | None = None

    @property
    def warmed(self) -> tuple[LayaClassifier, ...]:
        """The models it keeps warm (one that failed is dropped)."""
        return tuple(self._classifiers)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._keep_warm(), name="laya-keep-warm")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _keep_warm(self) -> None:
        classifiers = self._classifiers
        features = self._features
        while classifiers:
            await asyncio.sleep(self._interval_s)
            for classifier in list(classifiers):
                try:
                    classifier.infer(features)
                except Exception as error:  # the real path reports its own faults: not warmed
                    self.fault = f"{type(error).__name__}: {error}"
                    classifiers.remove(classifier)
                    continue
                self.runs += 1
