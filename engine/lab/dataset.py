"""Laya's training data: recordings -> per-frame features and labels, and the time split.

Features come from the live code path: every recording goes through `FrameParser` ->
`MarketPipeline` -> `FeatureExtractor` exactly as a replay does, so a model never sees
features computed any other way than in production.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.config import MarketPipelineConfig
from engine.feed.events import (
    ASK_PRICE,
    ASK_SIZE,
    BID_PRICE,
    BID_SIZE,
    BookSnapshot,
    BookUpdate,
)
from engine.feed.parse import FrameParser
from engine.feed.recording import (
    RecordingReadStats,
    check_recording,
    iter_recording,
    recording_instruments,
    recording_symbols,
    require_recording_symbols,
)
from engine.feed.tape import Trades
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import UNLABELLED, LabelConfig, label_frames
from engine.laya.verdict import Verdict
from engine.pipeline import MarketPipeline, feature_extractor

DEPTH_CHANNEL = "books15"
"""The frames Laya classifies (and the dataset has a row for)."""
IMBALANCE_LEVELS = 5


@dataclass(frozen=True, slots=True)
class DatasetConfig:
    """Which symbols to take from the recordings and how to label their frames. `symbols`
    are a book's as the engine subscribes them: the quoted ones, then the hedge, the leader
    every symbol's cross features read (a pair: the traded symbol, then its hedge); None:
    each recording's own (`recording_symbols_of`). Frames in the first `warmup_ms` of a
    symbol's books, and as long after a gap as long, get no label: Laya stands aside there
    (`[laya] warmup_s`), so no verdict is ever judged on them."""

    symbols: tuple[str, ...] | None = None
    labels: LabelConfig = dataclasses.field(default_factory=LabelConfig)
    warmup_ms: int = 30_000

    def __post_init__(self) -> None:
        if self.symbols is not None:
            if not self.symbols:
                raise ValueError("DatasetConfig.symbols must name at least one symbol")
            twice = next((s for s in self.symbols if self.symbols.count(s) > 1), None)
            if twice is not None:
                raise ValueError(f"{twice} is listed twice in {', '.join(self.symbols)}")
        if self.warmup_ms < 0:
            raise ValueError(f"DatasetConfig.warmup_ms must be >= 0, got {self.warmup_ms}")


@dataclass(frozen=True, slots=True, eq=False)
class Dataset:
    """One row per books15 frame of the recordings' symbols, in recording then receive order.

    `features` are exactly what the live extractor produced for the frame (read from a file
    the build spooled them to); `obi5` is the 5-level order-book imbalance (for the
    imbalance baseline); `labels` are Verdict values or -1, `ask_run` / `bid_run` the labelled
    frames whose ask / bid was run over (see `engine.laya.labels`). `symbols` are every
    recording's symbols in order of appearance, `symbol_index` points into them;
    `recording_symbols` are each recording's own.
    """

    recordings: tuple[str, ...]
    symbols: tuple[str, ...]
    recording_symbols: tuple[tuple[str, ...], ...]
    recording_index: np.ndarray
    symbol_index: np.ndarray
    exchange_ts_ms: np.ndarray
    mid: np.ndarray
    obi5: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    ask_run: np.ndarray
    bid_run: np.ndarray
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
            ask_run=self.ask_run[rows],
            bid_run=self.bid_run[rows],
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
    on_bytes: Callable[[int], None] | None = None,
) -> Dataset:
    """Features and labels of every books15 frame of the recordings' symbols.

    Each recording is replayed by a fresh parser and pipeline (state never carries from one
    file to the next), frame by frame as `ReplayFeed` does. The features stream to a spool
    file (memory holds one chunk of them, and ~40 bytes a frame for the labels); `on_bytes(n)`
    reports the recording bytes read (compressed), for a progress bar over their sizes.
    Raises RecordingUnreadable for a recording without a frame, ValueError (before replaying
    any) for one that lacks a symbol asked for, or later for one without a books15 frame of
    them (each naming those it has).
    """
    config = config or DatasetConfig()
    if not recordings:
        raise ValueError("build_dataset needs at least one recording")
    symbols: list[str] = []
    per_recording: list[tuple[str, ...]] = []
    for path in recordings:
        check_recording(path)
        chosen = config.symbols or recording_symbols_of(path)
        if not chosen:
            raise ValueError(f"{os.fspath(path)}: no books or trades in its first frames")
        if config.symbols:
            require_symbols(path, chosen)
        per_recording.append(chosen)
        symbols += [symbol for symbol in chosen if symbol not in symbols]
    spool = _FeatureSpool()
    columns: dict[str, list[np.ndarray]] = {}
    problems = []
    try:
        for index, path in enumerate(recordings):
            part, problem = _replay(
                Path(path), index, per_recording[index], symbols, spool, on_bytes
            )
            if not part["mid"].size:
                found = recording_symbols(path)
                raise ValueError(
                    f"{os.fspath(path)} has no books15 frames of "
                    f"{', '.join(per_recording[index])}: it has {', '.join(found) or 'none'}"
                )
            problems.append(problem)
            for name, values in part.items():
                columns.setdefault(name, []).append(values)
    except BaseException:
        spool.discard()
        raise
    joined = {name: np.concatenate(parts) for name, parts in columns.items()}
    count = joined["mid"].size
    labels = np.full(count, UNLABELLED, dtype=np.int8)
    ask_run = np.zeros(count, dtype=bool)
    bid_run = np.zeros(count, dtype=bool)
    sigma = np.full(count, np.nan)
    for recording in range(len(recordings)):
        for symbol in range(len(symbols)):
            rows = np.flatnonzero(
                (joined["recording_index"] == recording) & (joined["symbol_index"] == symbol)
            )
            if rows.size:
                ts = joined["exchange_ts_ms"][rows]
                result = label_frames(ts, joined["mid"][rows], config.labels)
                ready = ~warming_up(ts, config.warmup_ms)
                labels[rows] = np.where(ready, result.labels, UNLABELLED)
                ask_run[rows] = result.ask_run & ready
                bid_run[rows] = result.bid_run & ready
                sigma[rows] = result.sigma_bps
    return Dataset(
        recordings=tuple(os.fspath(path) for path in recordings),
        symbols=tuple(symbols),
        recording_symbols=tuple(per_recording),
        features=spool.finish(),
        labels=labels,
        ask_run=ask_run,
        bid_run=bid_run,
        sigma_bps=sigma,
        label_config=config.labels,
        recording_problems=tuple(problems),
        **joined,
    )


def recording_symbols_of(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """A recording's own book, its leader last: every symbol it has books or trades for.

    A pair keeps its busiest first, as the backtest takes it (each reads the other, whichever
    leads). A book keeps the order of its contracts line (the simulator's: the quoted symbols,
    then the hedge; `hft-console record`'s: its --symbols'), so its leader is the last listed
    and reads the first; without one (older recordings), its busiest leads, reading the next.
    """
    found = recording_symbols(path)
    if len(found) <= 2:
        return found
    listed = [symbol for symbol in recording_instruments(path) if symbol in found]
    if not listed:
        return (*found[1:], found[0])
    unlisted = [symbol for symbol in found if symbol not in listed]
    return (*listed[:-1], *unlisted, listed[-1])


def require_symbols(path: str | os.PathLike[str], symbols: tuple[str, ...]) -> None:
    """A ValueError naming the symbols `path` lacks (the leader, the last, as such) and those
    it has: a book without its leader would read cross features off one that never moves."""
    require_recording_symbols(path, symbols, leader=symbols[-1] if len(symbols) > 1 else None)


def warming_up(exchange_ts_ms: np.ndarray, warmup_ms: int) -> np.ndarray:
    """The frames (one symbol's, in time order) on which the pipeline's Laya stands aside:
    those less than `warmup_ms` after its first book, or after a gap longer than that."""
    ts = np.asarray(exchange_ts_ms, dtype=np.int64)
    if not warmup_ms or not ts.size:
        return np.zeros(ts.shape, dtype=bool)
    restart = np.concatenate(([True], np.diff(ts) > warmup_ms))
    start = np.maximum.accumulate(np.where(restart, np.arange(ts.size), 0))
    return ts < ts[start] + warmup_ms


_SPOOL_ROWS = 8192


class _FeatureSpool:
    """Feature rows appended in chunks to an unlinked temporary file, then mapped read-only:
    building holds one chunk in memory, however long the recordings."""

    def __init__(self) -> None:
        # Open across appends: finish() or discard() closes it.
        self._file = tempfile.TemporaryFile(prefix="laya-features-")  # noqa: SIM115
        self._chunk = np.empty((_SPOOL_ROWS, FEATURE_COUNT), dtype=np.float32)
        self._used = 0
        self.rows = 0

    def append(self, row: np.ndarray) -> None:
        self._chunk[self._used] = row
        self._used += 1
        if self._used == _SPOOL_ROWS:
            self._flush()

    def _flush(self) -> None:
        self._file.write(self._chunk[: self._used].tobytes())
        self.rows += self._used
        self._used = 0

    def discard(self) -> None:
        self._file.close()

    def finish(self) -> np.ndarray:
        """Every row appended, as a read-only float32 [rows, FEATURE_COUNT] array."""
        self._flush()
        self._file.flush()
        if not self.rows:
            self._file.close()
            return np.zeros((0, FEATURE_COUNT), np.float32)
        mapped = np.memmap(self._file, np.float32, "r", shape=(self.rows, FEATURE_COUNT))
        self._file.close()  # the mapping keeps the (unlinked) file's pages
        return mapped


_PROGRESS_EVERY = 4096


def _replay(
    path: Path,
    recording: int,
    symbols: tuple[str, ...],
    all_symbols: list[str],
    spool: _FeatureSpool,
    on_bytes: Callable[[int], None] | None,
) -> tuple[dict[str, np.ndarray], str | None]:
    """The recording's rows (features into `spool`), and what was wrong with it (None:
    nothing). Every symbol's cross features read the last of `symbols`, the book's leader, as
    the engine's do. `symbol_index` points into `all_symbols`."""
    parser = FrameParser(symbols)
    extractor = feature_extractor(symbols, parser.tape, leader=symbols[-1])
    pipeline = MarketPipeline(
        MarketPipelineConfig(symbols=symbols), parser.tape, features=extractor
    )
    symbol_rows = {symbol: all_symbols.index(symbol) for symbol in symbols}
    symbol_index = array("b")
    timestamps = array("q")
    mids = array("d")
    imbalances = array("d")
    stats = RecordingReadStats()
    frames = 0
    reported = 0
    for recv_ns, raw in iter_recording(path, stats):
        frames += 1
        if on_bytes is not None and frames % _PROGRESS_EVERY == 0:
            on_bytes(stats.bytes_read - reported)
            reported = stats.bytes_read
        event = parser.parse(raw, recv_ns)
        kind = type(event)
        if kind is BookSnapshot or kind is BookUpdate or kind is Trades:
            pipeline.on_market(event)
        if kind is not BookSnapshot or event.channel != DEPTH_CHANNEL:
            continue
        row = symbol_rows.get(event.symbol)
        if row is None:
            continue
        # The extractor's output buffer is overwritten by the next book: the spool copies it.
        spool.append(extractor.features[0])
        symbol_index.append(row)
        timestamps.append(event.exchange_ts_ms)
        mids.append(0.5 * (event.levels[BID_PRICE, 0] + event.levels[ASK_PRICE, 0]))
        imbalances.append(order_book_imbalance(event))
    if on_bytes is not None:
        on_bytes(stats.bytes_read - reported)
    problem = stats.problem(path)
    if problem is not None:
        problem.raise_if_unreadable()
    columns = {
        "recording_index": np.full(len(mids), recording, dtype=np.int16),
        "symbol_index": np.frombuffer(symbol_index, dtype=np.int8).copy(),
        "exchange_ts_ms": np.frombuffer(timestamps, dtype=np.int64).copy(),
        "mid": np.frombuffer(mids, dtype=np.float64).copy(),
        "obi5": np.frombuffer(imbalances, dtype=np.float64).copy(),
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
