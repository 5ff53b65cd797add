"""Compile the fast path's numba kernels before the first market frame.

numba compiles a kernel on its first call (or loads it from its on-disk cache). On a fresh
install that first call takes tens of seconds; made by the first real frame, it would block
the engine loop while feeds go stale and the kill switch waits. `compile_fast_path` makes those
first calls on synthetic frames through throwaway parser and pipeline objects, so no engine
state is touched.
"""

from __future__ import annotations

import time

import orjson

from engine.feed.parse import FrameParser
from engine.pipeline import MarketPipeline, MarketPipelineConfig

_BOOK_FRAMES = 3
_LEVELS = 15


def _book_frame(symbol: str, mid: float, ts_ms: int) -> bytes:
    tick = mid * 1e-5
    bids = [[f"{mid - tick * (i + 1):.2f}", f"{0.5 + i * 0.1:.3f}"] for i in range(_LEVELS)]
    asks = [[f"{mid + tick * (i + 1):.2f}", f"{0.5 + i * 0.1:.3f}"] for i in range(_LEVELS)]
    return orjson.dumps(
        {
            "action": "snapshot",
            "arg": {"instType": "USDT-FUTURES", "channel": "books15", "instId": symbol},
            "data": [{"asks": asks, "bids": bids, "checksum": 0, "seq": ts_ms, "ts": str(ts_ms)}],
            "ts": ts_ms,
        }
    )


def _trade_frame(symbol: str, price: float, ts_ms: int, trade_id: int) -> bytes:
    return orjson.dumps(
        {
            "action": "update",
            "arg": {"instType": "USDT-FUTURES", "channel": "trade", "instId": symbol},
            "data": [
                {
                    "ts": str(ts_ms),
                    "price": f"{price:.2f}",
                    "size": "0.010",
                    "side": "buy",
                    "tradeId": str(trade_id),
                }
            ],
            "ts": ts_ms,
        }
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
            for raw in (
                _trade_frame(symbol, mid, now_ms, step * 10 + index + 1),
                _book_frame(symbol, mid, now_ms),
            ):
                frame = parser.parse(raw, now_ms * 1_000_000)
                if frame is not None:
                    pipeline.on_market(frame)
    if any(parser.stats.rejected.values()):
        # A rejected frame never reaches the kernels behind it: they would compile on the
        # first market frame after all.
        raise RuntimeError(f"fast-path warm-up frames were rejected: {parser.stats.rejected}")
    return time.perf_counter() - started
