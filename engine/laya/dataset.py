"""Laya's training data: recordings -> per-frame features and labels, and the time split.

Features come from the live code path: every recording goes through `FrameParser` ->
`MarketPipeline` -> `FeatureExtractor` exactly as a replay does, so a model never sees
features computed any other way than in production. `simulate_recording` writes simulator
data in the standard recording format, without sockets, for training and tests.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from engine.feed.events import (
    ASK_PRICE,
    ASK_SIZE,
    BID_PRICE,
    BID_SIZE,
    BookSnapshot,
    BookUpdate,
    Trades,
)
from engine.feed.parse import FrameParser
from engine.feed.recording import RecordingReadStats, encode_line, is_gzip_path, iter_recording
from engine.laya.features import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import UNLABELLED, LabelConfig, label_frames
from engine.laya.verdict import Verdict
from engine.pipeline import MarketPipeline, MarketPipelineConfig
from engine.sim.frames import depth_frame, format_levels, trade_frame
from engine.sim.market import InformedBurst, MarketGenerator, MarketGeneratorConfig, SimTrade

DEPTH_CHANNEL = "books15"
"""The frames Laya classifies (and the dataset has a row for)."""
IMBALANCE_LEVELS = 5
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
    recording's 100 ms cadence. `seed` replaces `market.seed`. Refuses to overwrite a file.
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
            DEPTH_CHANNEL,
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


@dataclass(frozen=True, slots=True)
class DatasetConfig:
    """Which symbols to take from the recordings (traded first, then the hedge) and how to
    label their frames."""

    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    labels: LabelConfig = dataclasses.field(default_factory=LabelConfig)

    def __post_init__(self) -> None:
        if not 1 <= len(self.symbols) <= 2 or len(set(self.symbols)) != len(self.symbols):
            raise ValueError(
                "DatasetConfig.symbols takes the traded symbol and optionally a different "
                f"hedge, got {self.symbols!r}"
            )


@dataclass(frozen=True, slots=True, eq=False)
class Dataset:
    """One row per books15 frame of the configured symbols, in recording then receive order.

    `features` are exactly what the live extractor produced for the frame; `obi5` is the
    5-level order-book imbalance (for the imbalance baseline); `labels` are Verdict values or
    -1 (see `engine.laya.labels`).
    """

    recordings: tuple[str, ...]
    symbols: tuple[str, ...]
    recording_index: np.ndarray
    symbol_index: np.ndarray
    exchange_ts_ms: np.ndarray
    mid: np.ndarray
    obi5: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    sigma_bps: np.ndarray
    label_config: LabelConfig
    feature_set_version: str = FEATURE_SET_VERSION
    recording_problems: tuple[str | None, ...] = ()
    """What was wrong with each recording, in `recordings` order (None: nothing); a recording
    cut short or with malformed lines still gives the rows it holds."""

    def __len__(self) -> int:
        return int(self.labels.size)

    @property
    def labelled(self) -> np.ndarray:
        return self.labels != UNLABELLED

    @property
    def symbol_names(self) -> np.ndarray:
        """The symbol of every row, as strings."""
        return np.asarray(self.symbols, dtype=object)[self.symbol_index]

    def subset(self, rows: np.ndarray) -> Dataset:
        """The rows selected by a boolean mask or an index array, in their order."""
        return dataclasses.replace(
            self,
            recording_index=self.recording_index[rows],
            symbol_index=self.symbol_index[rows],
            exchange_ts_ms=self.exchange_ts_ms[rows],
            mid=self.mid[rows],
            obi5=self.obi5[rows],
            features=self.features[rows],
            labels=self.labels[rows],
            sigma_bps=self.sigma_bps[rows],
        )

    def class_counts(self) -> dict[str, int]:
        """Labelled rows per class name."""
        counts = np.bincount(self.labels[self.labelled].astype(np.int64), minlength=4)
        return {verdict.name: int(counts[verdict]) for verdict in Verdict}


def order_book_imbalance(snapshot: BookSnapshot, levels: int = IMBALANCE_LEVELS) -> float:
    """(bid size - ask size) / (bid size + ask size) over the top `levels` of each side."""
    bid = float(snapshot.levels[BID_SIZE, : min(levels, snapshot.n_bids)].sum())
    ask = float(snapshot.levels[ASK_SIZE, : min(levels, snapshot.n_asks)].sum())
    return (bid - ask) / (bid + ask)


def build_dataset(
    recordings: Sequence[str | os.PathLike[str]],
    config: DatasetConfig | None = None,
    on_frames: Callable[[int], None] | None = None,
) -> Dataset:
    """Features and labels of every books15 frame of the recordings.

    Each recording is replayed by a fresh parser and pipeline (state never carries from one
    file to the next), frame by frame as `ReplayFeed` does. `on_frames(n)` reports progress
    every few thousand raw frames. Raises RecordingUnreadable for a recording without a frame.
    """
    config = config or DatasetConfig()
    if not recordings:
        raise ValueError("build_dataset needs at least one recording")
    replayed = [
        _replay(Path(path), index, config.symbols, on_frames)
        for index, path in enumerate(recordings)
    ]
    parts = [columns for columns, _ in replayed]
    problems = tuple(problem for _, problem in replayed)
    columns = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    count = columns["mid"].size
    labels = np.full(count, UNLABELLED, dtype=np.int8)
    sigma = np.full(count, np.nan)
    for recording in range(len(recordings)):
        for symbol in range(len(config.symbols)):
            rows = np.flatnonzero(
                (columns["recording_index"] == recording) & (columns["symbol_index"] == symbol)
            )
            if rows.size:
                result = label_frames(
                    columns["exchange_ts_ms"][rows], columns["mid"][rows], config.labels
                )
                labels[rows] = result.labels
                sigma[rows] = result.sigma_bps
    return Dataset(
        recordings=tuple(os.fspath(path) for path in recordings),
        symbols=config.symbols,
        labels=labels,
        sigma_bps=sigma,
        label_config=config.labels,
        recording_problems=problems,
        **columns,
    )


_PROGRESS_EVERY = 4096


def _replay(
    path: Path,
    recording: int,
    symbols: tuple[str, ...],
    on_frames: Callable[[int], None] | None,
) -> tuple[dict[str, np.ndarray], str | None]:
    """The recording's rows, and what was wrong with it (None: nothing)."""
    parser = FrameParser(symbols)
    pipeline = MarketPipeline(MarketPipelineConfig(symbols=symbols), parser.tape)
    extractor = pipeline.features
    symbol_rows = {symbol: row for row, symbol in enumerate(symbols)}
    feature_rows: list[np.ndarray] = []
    symbol_index: list[int] = []
    timestamps: list[int] = []
    mids: list[float] = []
    imbalances: list[float] = []
    stats = RecordingReadStats()
    frames = 0
    for recv_ns, raw in iter_recording(path, stats):
        frames += 1
        if on_frames is not None and frames % _PROGRESS_EVERY == 0:
            on_frames(_PROGRESS_EVERY)
        event = parser.parse(raw, recv_ns)
        kind = type(event)
        if kind is BookSnapshot or kind is BookUpdate or kind is Trades:
            pipeline.on_market(event)
        if kind is not BookSnapshot or event.channel != DEPTH_CHANNEL:
            continue
        row = symbol_rows.get(event.symbol)
        if row is None:
            continue
        # The extractor's output buffer is overwritten by the next book: keep a copy.
        feature_rows.append(extractor.features[0].copy())
        symbol_index.append(row)
        timestamps.append(event.exchange_ts_ms)
        mids.append(0.5 * (event.levels[BID_PRICE, 0] + event.levels[ASK_PRICE, 0]))
        imbalances.append(order_book_imbalance(event))
    if on_frames is not None:
        on_frames(frames % _PROGRESS_EVERY)
    problem = stats.problem(path)
    if problem is not None:
        problem.raise_if_unreadable()
    count = len(mids)
    columns = {
        "recording_index": np.full(count, recording, dtype=np.int16),
        "symbol_index": np.asarray(symbol_index, dtype=np.int8),
        "exchange_ts_ms": np.asarray(timestamps, dtype=np.int64),
        "mid": np.asarray(mids, dtype=np.float64),
        "obi5": np.asarray(imbalances, dtype=np.float64),
        "features": (
            np.stack(feature_rows) if feature_rows else np.zeros((0, FEATURE_COUNT), np.float32)
        ),
    }
    return columns, problem.text if problem is not None else None


@dataclass(frozen=True, slots=True)
class TimeSplitConfig:
    """How each recording's timeline is cut: [fit | validation] train, then hold-out.

    The first `train_fraction` of a recording's exchange-time span is training time, the rest
    hold-out; the last `validation_fraction` of the training time is the validation slice
    (threshold tuning, early stopping). Frames within `gap_ms` before a cut are dropped, so no
    label horizon crosses into the next period; it must be at least the label horizon.
    """

    train_fraction: float = 0.7
    validation_fraction: float = 0.2
    gap_ms: int = LabelConfig().horizon_ms

    def __post_init__(self) -> None:
        if not 0.0 < self.train_fraction < 1.0:
            raise ValueError(
                f"TimeSplitConfig.train_fraction must be in (0, 1), got {self.train_fraction}"
            )
        if not 0.0 < self.validation_fraction < 1.0:
            raise ValueError(
                "TimeSplitConfig.validation_fraction must be in (0, 1), "
                f"got {self.validation_fraction}"
            )
        if self.gap_ms < 0:
            raise ValueError(f"TimeSplitConfig.gap_ms must be >= 0, got {self.gap_ms}")


@dataclass(frozen=True, slots=True, eq=False)
class TimeSplit:
    """Boolean frame masks; `train` is `fit | validation`. Gap frames are in none of them."""

    fit: np.ndarray
    validation: np.ndarray
    holdout: np.ndarray

    @property
    def train(self) -> np.ndarray:
        return self.fit | self.validation


def split_by_time(
    recording_index: np.ndarray, exchange_ts_ms: np.ndarray, config: TimeSplitConfig
) -> TimeSplit:
    """Cut every recording's timeline separately (recordings may cover different days)."""
    recording_index = np.asarray(recording_index)
    ts = np.asarray(exchange_ts_ms, dtype=np.int64)
    fit = np.zeros(ts.shape, dtype=bool)
    validation = np.zeros(ts.shape, dtype=bool)
    holdout = np.zeros(ts.shape, dtype=bool)
    gap = config.gap_ms
    for recording in np.unique(recording_index):
        rows = recording_index == recording
        first, last = int(ts[rows].min()), int(ts[rows].max())
        train_end = first + config.train_fraction * (last - first)
        fit_end = first + (1.0 - config.validation_fraction) * (train_end - first)
        fit |= rows & (ts <= fit_end - gap)
        validation |= rows & (ts > fit_end) & (ts <= train_end - gap)
        holdout |= rows & (ts > train_end)
    return TimeSplit(fit, validation, holdout)
