"""One backtest: a recording played through a paper-trading `EngineNode` on its market clock.

The run is deterministic: the same recording and configuration give the same orders, fills
and PnL to the last digit, because every wait of the engine is on the recording's time (the
journal does not fsync nor make the engine wait for its commits, and Kev is off unless asked
for). What the run leaves behind is its journal (orders, acks, fills, verdict actions, state
changes) and the mid of every book, for the metrics.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.config import EngineConfig
from engine.feed.events import BookSnapshot
from engine.feed.recording import (
    RecordingProblem,
    RecordingReadStats,
    check_recording,
    encode_line,
    iter_recording,
)
from engine.feed.replay import ReplayFeed
from engine.feed.tape import Trades
from engine.journal import JournalEntry, read_journal
from engine.laya.decide import QuoteIntent
from engine.laya.scorecard import ScorecardView
from engine.market.contracts import MarketContracts
from engine.market.instruments import Instrument
from engine.node import EngineNode, engine_clock
from engine.pipeline import LayaStillWarmingUp, PipelineSinks
from engine.tools.soak import rss_kb
from engine.trading.config import TradingMode

_PROGRESS_EVERY_BOOKS = 512
"""The progress callback is considered every this many books (a clock read each time)."""
RSS_MARK_FRAMES = 100_000
"""Memory is read once this many frames have played, and at the end: growth in between."""


@dataclass(frozen=True, slots=True)
class MarketWindow:
    """The market time `[start_ns, end_ns)` a backtest trades in. The recording plays from its
    first frame, so the books, the features and Laya are warm at `start_ns`; the desk (and its
    paper venue) sees no book nor trade before it, and the run ends before the first frame at
    or after `end_ns`, as if the recording ended there."""

    start_ns: int
    end_ns: int

    def __post_init__(self) -> None:
        if not self.start_ns < self.end_ns:
            raise ValueError(f"a market window ends after it starts, got {self}")


@dataclass(frozen=True, slots=True)
class BacktestSpec:
    """One run: `engine` (a replay of `recording` with paper trading) under the name `label`
    (the variant or grid point it stands for), over the whole recording or over `window`."""

    recording: Path
    engine: EngineConfig
    label: str = "laya"
    window: MarketWindow | None = None
    contracts: MarketContracts | None = None
    """Where each symbol's contract and fees came from, for the report (None: not said)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "recording", Path(self.recording))
        engine = self.engine
        if engine.replay_path is None or Path(engine.replay_path) != self.recording:
            raise ValueError("a backtest's engine must replay its recording")
        if engine.trading is None or engine.trading.mode is not TradingMode.PAPER:
            raise ValueError("a backtest trades on paper: engine.trading.mode must be PAPER")
        if engine.replay_speed is not None:
            raise ValueError("a backtest runs at full speed (replay_speed None)")
        if self.window is not None and engine.kev_client is not None:
            raise ValueError("a backtest over a market window runs without Kev")


@dataclass(frozen=True, slots=True)
class BacktestProgress:
    label: str
    recording: str
    frames: int
    fraction: float
    """Of the recording's bytes read."""
    market_s: float
    """Market time played since the first frame."""
    frames_per_s: float


@dataclass(frozen=True, slots=True)
class MidSeries:
    """A symbol's mid at each of its books: market epoch ns (sorted) and price."""

    at_ns: np.ndarray
    mid: np.ndarray

    def at(self, times_ns: np.ndarray) -> np.ndarray:
        """The mid in force at each time (the last book at or before it); NaN before the first
        book or after the last one (the future is unknown there)."""
        index = np.searchsorted(self.at_ns, times_ns, side="right") - 1
        values = self.mid[np.clip(index, 0, None)]
        inside = (index >= 0) & (times_ns <= self.at_ns[-1])
        return np.where(inside, values, np.nan)


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What one backtest left: its journal, the mids, and the run's own figures."""

    label: str
    recording: str
    symbols: tuple[str, ...]
    quoted: tuple[str, ...]
    """The book's quoted symbols, in its order (a pair's one)."""
    start_ns: int
    """The first frame's market time (a window's start)."""
    end_ns: int
    """The last frame's market time."""
    entries: tuple[JournalEntry, ...]
    mids: dict[str, MidSeries]
    frames: int
    market_frames: int
    wall_s: float
    cpu_s: float
    """The process's CPU time while the recording played (all its threads): on a shared
    machine frames per CPU second moves less than frames per real second."""
    verdicts: dict[str, int]
    recording_problem: str | None
    rss_kb_at_100k: int | None
    """The resident set once 100,000 frames had played (None for a shorter run), in kB."""
    rss_kb_end: int
    venue: dict[str, object]
    """The paper venue's own figures at the end (requests, fills, balance, equity)."""
    laya_warming: tuple[LayaStillWarmingUp, ...] = ()
    """The symbols Laya was still warming up on when the recording ended: no verdicts since
    (a recording shorter than `[laya] warmup_s` gets none at all)."""
    instruments: tuple[Instrument, ...] = ()
    """The contracts the run traded on (EngineConfig.instruments)."""
    contracts: MarketContracts | None = None
    """... and where each came from, with the fees that applied, where the plan said."""
    kev_offered: int = 0
    """Non-HOLD verdicts offered to Kev (0 without Kev): what a run whose Kev never answered
    left unanswered."""
    scorecard: ScorecardView | None = None
    """Laya's scorecard at the end (engine/laya/scorecard.py)."""
    hedge: str | None = None
    """The book's hedge (None: not hedged)."""
    delta_weights: Mapping[str, float] = field(default_factory=dict)
    """Each traded symbol's weight in the net delta, as the risk gateway counts it at the
    start (RiskGatewayConfig.delta_weight); what moved it later is in the journal (its
    `hedge_ratio` and `beta SYMBOL` limit changes)."""

    @property
    def span_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


class _ProgressReport:
    """The run's progress, said at most every `interval_s` from `begin` on."""

    def __init__(
        self,
        spec: BacktestSpec,
        progress: Callable[[BacktestProgress], None] | None,
        interval_s: float,
    ) -> None:
        self._spec = spec
        self._progress = progress
        self._interval_s = interval_s
        self._size = max(1, os.path.getsize(spec.recording))
        self._feed: ReplayFeed | None = None
        self._started = self._shown = 0.0

    def begin(self, feed: ReplayFeed) -> None:
        self._feed = feed
        self._started = self._shown = time.perf_counter()

    def __call__(self) -> None:
        feed = self._feed
        now = time.perf_counter()
        if self._progress is None or feed is None or now - self._shown < self._interval_s:
            return
        self._shown = now
        stats = feed.stats
        self._progress(
            BacktestProgress(
                self._spec.label,
                str(self._spec.recording),
                stats.frames,
                min(1.0, stats.recording.bytes_read / self._size),
                stats.recorded_span_s,
                stats.frames / max(now - self._started, 1e-9),
            )
        )


class _MidRecorder:
    """Between the pipeline and the desk (`around`): notes each book's mid, and reports
    progress. Before a window's start (`opens_ns`) the books warm the pipeline alone: no mid
    noted, nothing to the desk, no trade to the paper venue, no progress counted; the first book
    or trade at or after it opens the window for the rest of the run."""

    def __init__(
        self,
        symbols: tuple[str, ...],
        progress: Callable[[], None],
        frames: Callable[[], int],
        now_ns: Callable[[], int],
        opens_ns: int | None = None,
    ) -> None:
        # Compact arrays, 16 bytes a book: a million-frame run keeps every mid in a few MB.
        self.times: dict[str, array[int]] = {symbol: array("q") for symbol in symbols}
        self.mids: dict[str, array[float]] = {symbol: array("d") for symbol in symbols}
        self._progress = progress
        self._frames = frames
        self._now_ns = now_ns
        self._opens_ns = opens_ns
        self._desk = PipelineSinks()
        self._books = 0
        self.rss_kb_at_100k: int | None = None

    def around(self, desk: PipelineSinks) -> PipelineSinks:
        """The sinks the pipeline gets: the recorder's, in front of the desk's."""
        self._desk = desk
        gates_trades = self._opens_ns is not None and desk.on_trades is not None
        return dataclasses.replace(
            desk,
            on_decided=self.on_decided,
            on_trades=self.on_trades if gates_trades else desk.on_trades,
        )

    def on_decided(self, snapshot: BookSnapshot, intent: QuoteIntent) -> None:
        if self._opens_ns is not None:
            if snapshot.recv_ns < self._opens_ns:
                return
            self._opens_ns = None
        levels = snapshot.levels
        times = self.times.get(snapshot.symbol)
        if times is not None and snapshot.n_bids and snapshot.n_asks:
            times.append(snapshot.recv_ns)
            self.mids[snapshot.symbol].append(0.5 * (levels.item(0, 0) + levels.item(2, 0)))
        desk_on_book = self._desk.on_decided
        if desk_on_book is not None:
            desk_on_book(snapshot, intent)
        self._books += 1
        if not self._books % _PROGRESS_EVERY_BOOKS:
            if self.rss_kb_at_100k is None and self._frames() >= RSS_MARK_FRAMES:
                self.rss_kb_at_100k = rss_kb()
            self._progress()

    def on_trades(self, trades: Trades) -> None:
        if self._opens_ns is not None:
            # The replay moves the clock to each frame's receive time before playing it.
            if self._now_ns() < self._opens_ns:
                return
            self._opens_ns = None
        desk_on_trades = self._desk.on_trades
        assert desk_on_trades is not None  # `around` gates trades only where the desk takes them
        desk_on_trades(trades)

    def series(self) -> dict[str, MidSeries]:
        return {
            symbol: MidSeries(
                np.frombuffer(times, np.int64).copy(), np.frombuffer(self.mids[symbol]).copy()
            )
            for symbol, times in self.times.items()
            if times
        }


def recording_before(path: Path, end_ns: int, out: Path) -> RecordingProblem | None:
    """The frames of the recording at `path` received before `end_ns`, written to `out` (plain
    text: read once); returns what was wrong with the part read, as the replay would say."""
    stats = RecordingReadStats()
    with out.open("wb") as file:
        for recv_ns, raw in iter_recording(path, stats):
            if recv_ns >= end_ns:
                break
            file.write(encode_line(recv_ns, raw))
    return stats.problem(path)


def journal_config_for(engine: EngineConfig, folder: Path) -> EngineConfig:
    """`engine` with its journal in `folder`, not durable (a backtest's)."""
    assert engine.trading is not None
    trading = dataclasses.replace(
        engine.trading, journal_path=folder / "journal.sqlite", journal_durable=False
    )
    return dataclasses.replace(engine, trading=trading)


def run_backtest(
    spec: BacktestSpec,
    progress: Callable[[BacktestProgress], None] | None = None,
    progress_interval_s: float = 0.25,
    *,
    scratch_in: Path | None = None,
) -> SessionRecord:
    """Play `spec` to the end of its recording, its journal in a scratch folder made in
    `scratch_in` (default: the system's); raises RecordingUnreadable (checked before the
    engine starts) or whatever stops the engine from starting."""
    check_recording(spec.recording)
    with tempfile.TemporaryDirectory(prefix="hft-backtest-", dir=scratch_in) as scratch:
        engine = journal_config_for(spec.engine, Path(scratch))
        cut_problem = None
        if spec.window is not None:  # the engine replays the part before the window's end
            cut = Path(scratch) / "window.bitget"
            cut_problem = recording_before(spec.recording, spec.window.end_ns, cut)
            engine = dataclasses.replace(engine, replay_path=str(cut))
        report = _ProgressReport(spec, progress, progress_interval_s)
        clock = engine_clock(engine)
        recorder = _MidRecorder(
            engine.symbols,
            report,
            lambda: node.parser.stats.frames,  # the node's, built next: called once it plays
            clock.time_ns,
            spec.window.start_ns if spec.window is not None else None,
        )
        node = EngineNode(engine, clock=clock, wrap_sinks=recorder.around)
        record = clock.run(_play(spec, node, recorder, report))
        assert engine.trading is not None and engine.trading.journal_path is not None
        entries = tuple(read_journal(engine.trading.journal_path))
    if cut_problem is not None:  # said of the recording, not of the scratch copy
        record = dataclasses.replace(record, recording_problem=cut_problem.text)
    return dataclasses.replace(record, entries=entries)


async def _play(
    spec: BacktestSpec, node: EngineNode, recorder: _MidRecorder, report: _ProgressReport
) -> SessionRecord:
    await node.start()
    feed = node.feed
    assert isinstance(feed, ReplayFeed) and node.desk is not None
    started = time.perf_counter()
    cpu_started = time.process_time()
    report.begin(feed)
    pipeline = node.pipeline
    try:
        stats = await feed.wait()
        wall_s = time.perf_counter() - started
        cpu_s = time.process_time() - cpu_started
    finally:
        await node.stop()
    problem = feed.problem()
    events, _ = node.events.since(-1)
    trading = node.desk.config
    return SessionRecord(
        label=spec.label,
        recording=str(spec.recording),
        symbols=node.config.symbols,
        quoted=trading.quoted,
        hedge=trading.hedge_symbol,
        delta_weights={symbol: trading.risk.delta_weight(symbol) for symbol in trading.symbols},
        start_ns=stats.first_recv_ns if spec.window is None else spec.window.start_ns,
        end_ns=stats.last_recv_ns,
        entries=(),
        mids=recorder.series(),
        frames=stats.frames,
        market_frames=stats.market_frames,
        wall_s=wall_s,
        cpu_s=cpu_s,
        verdicts=pipeline.decisions.counts(),
        recording_problem=problem.text if problem is not None else None,
        rss_kb_at_100k=recorder.rss_kb_at_100k,
        rss_kb_end=rss_kb(),
        venue=node.desk.venue.stats(),
        laya_warming=tuple(event for _, event in events if isinstance(event, LayaStillWarmingUp)),
        kev_offered=node.kev.status().offered if node.kev is not None else 0,
        instruments=node.config.instruments,
        contracts=spec.contracts,
        scorecard=node.scorecard.view(),
    )
