"""Recordings of the simulated market: `MarketGenerator` written out in our recording format,
deterministic per seed, for benchmarks, soaks, datasets and tests."""

from __future__ import annotations

import dataclasses
import gzip
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from engine.feed.recording import contracts_line, encode_line, is_gzip_path
from engine.sim.frames import depth_frame, format_levels, trade_frame
from engine.sim.market import InformedBurst, MarketGenerator, MarketGeneratorConfig, SimTrade

SIMULATED_CHANNEL = "books15"
"""The depth channel a simulated recording carries, as the real recordings do."""
SIMULATED_DEPTH_LEVELS = 15
SIMULATED_LATENCY_NS = 20_000_000
"""Receive time = push time + this: a typical exchange-to-host delay, fixed so that files are
deterministic per seed and in receive order."""
_FRAME_SPACING_NS = 10_000
"""Spacing of frames pushed in the same tick, so receive times are distinct and ordered."""
_SIM_WARMUP_MS = 5_000
"""Simulated history run before writing, as the simulated exchange does, so books are settled."""


@dataclass(frozen=True, slots=True)
class SimulatedRecording:
    """A recording written by `simulate_recording` and the informed bursts it contains."""

    path: Path
    frames: int
    start_ms: int
    end_ms: int
    bursts: tuple[InformedBurst, ...]
    """Bursts that started inside the recorded span, oldest first."""


def simulate_recording(
    path: str | os.PathLike[str],
    minutes: float,
    seed: int,
    *,
    market: MarketGeneratorConfig | None = None,
    book_interval_ms: int = 100,
) -> SimulatedRecording:
    """Write `minutes` of the simulated market to `path` (gzip when it ends in .gz).

    Every `book_interval_ms` of simulated time: one `trade` frame per symbol that traded
    (newest print first, as Bitget sends), then a books15 snapshot per symbol, like the real
    recording's 100 ms cadence, after a contracts line of the simulated symbols. `seed`
    replaces `market.seed`. Refuses to overwrite a file.
    """
    if not (np.isfinite(minutes) and minutes > 0):
        raise ValueError(f"minutes must be > 0, got {minutes}")
    config = dataclasses.replace(market or MarketGeneratorConfig(), seed=seed)
    if book_interval_ms < config.step_ms or book_interval_ms % config.step_ms:
        raise ValueError(
            f"book_interval_ms ({book_interval_ms}) must be a multiple of the market step "
            f"({config.step_ms} ms)"
        )
    generator = MarketGenerator(config)
    start_ms = config.start_ms + _SIM_WARMUP_MS
    end_ms = start_ms + round(minutes * 60_000)
    generator.advance_to(start_ms)
    out = Path(path)
    frames = 0
    with _open_for_writing(out) as file:
        instruments = (generator.instrument(symbol) for symbol in generator.symbols)
        file.write(contracts_line(start_ms * 1_000_000 + SIMULATED_LATENCY_NS, instruments))
        for push_ms in range(start_ms + book_interval_ms, end_ms + 1, book_interval_ms):
            trades = generator.advance_to(push_ms)
            for offset, raw in enumerate(_tick_frames(generator, trades, push_ms)):
                recv_ns = push_ms * 1_000_000 + SIMULATED_LATENCY_NS + offset * _FRAME_SPACING_NS
                file.write(encode_line(recv_ns, raw))
                frames += 1
    bursts = tuple(burst for burst in generator.bursts if burst.start_ms >= start_ms)
    return SimulatedRecording(out, frames, start_ms, end_ms, bursts)


def _open_for_writing(path: Path) -> BinaryIO:
    if is_gzip_path(path):
        return gzip.GzipFile(path, "xb", compresslevel=4)
    return path.open("xb")


def _tick_frames(
    generator: MarketGenerator, trades: list[SimTrade], push_ms: int
) -> Iterator[bytes]:
    for symbol in generator.symbols:
        instrument = generator.instrument(symbol)
        own = [trade for trade in trades if trade.symbol == symbol]
        if own:
            yield trade_frame(
                symbol, reversed(own), instrument, action="update", push_ms=push_ms
            ).encode()
    for symbol in generator.symbols:
        instrument = generator.instrument(symbol)
        book = generator.book(symbol, SIMULATED_DEPTH_LEVELS)
        yield depth_frame(
            SIMULATED_CHANNEL,
            symbol,
            format_levels(book.bid_prices, book.bid_sizes, instrument),
            format_levels(book.ask_prices, book.ask_sizes, instrument),
            action="snapshot",
            seq=push_ms,
            pseq=0,
            checksum=0,
            ts_ms=book.ts_ms,
            push_ms=push_ms,
        ).encode()
