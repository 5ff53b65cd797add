"""The fast path after the parser: book -> features -> Laya -> decision, per books15 frame.

`MarketPipeline` is the `FeedSink` of every feed (live, simulated, replayed), so all sources
run the same code. It is called synchronously on the engine loop, does no I/O and no logging,
and times each stage into fixed histograms (five clock reads a frame). Trade frames need no
work here: the parser already put their trades on the tape, and the feature extractor reads
them at the next book.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from engine.book import IncrementalBook, OrderBook
from engine.config import MarketPipelineConfig
from engine.feed.events import (
    BookResyncNeeded,
    BookSnapshot,
    BookUpdate,
    RecordingEnded,
)
from engine.feed.sink import FeedNotice
from engine.feed.tape import MarketTape, Trades
from engine.latency import LatencyHistogram
from engine.laya.classifier import LayaClassifier, choose_verdict
from engine.laya.decide import DecisionStage, QuoteGate, QuoteIntent
from engine.laya.features import FEATURE_NAMES, FeatureExtractor, FeatureExtractorConfig

if TYPE_CHECKING:  # the scorecard labels with the lab, whose dataset builds pipelines
    from engine.laya.scorecard import ScorecardQueue

STAGES = ("book", "features", "infer", "decide")
TIMED_STAGES = ("parse", *STAGES, "total", "trade")
"""Every stage the bench and the console time: the parser, the pipeline's stages, their total
from receipt to decision, and a trade frame's parse."""
_STAND_ASIDE = QuoteIntent.STAND_ASIDE
_OBI5 = FEATURE_NAMES.index("obi_5")


def _unscored(book: OrderBook, snapshot: BookSnapshot) -> tuple:
    """A book without a verdict for the scorecard's queue: its mid still counts for labels."""
    return (book.updates, snapshot, None, 0, None)


class LayaFault(NamedTuple):
    """Laya could not classify a book; that symbol's quotes were pulled."""

    symbol: str
    reason: str
    at_ns: int


class LayaWarmingUp(NamedTuple):
    """Laya stands aside on `symbol` until its feature windows hold `seconds` of market data."""

    symbol: str
    seconds: float
    reason: str
    at_ns: int


class LayaStoodAside(NamedTuple):
    """Laya stands aside on `symbol` for the run: its model would not start (`reason`)."""

    symbol: str
    reason: str
    at_ns: int


class LayaReady(NamedTuple):
    """Laya's verdicts on `symbol` count again."""

    symbol: str
    at_ns: int


class LayaStillWarmingUp(NamedTuple):
    """When the recording ended or the run stopped (`when`), Laya was still standing aside on
    `symbol`: it had `have_s` of the `need_s` seconds of market data it waits for, so it gave
    no verdict on it since."""

    symbol: str
    have_s: float
    need_s: float
    when: str
    at_ns: int

    @property
    def text(self) -> str:
        return (
            f"Laya was still warming up on {self.symbol} when {self.when}: {self.have_s:,.1f} "
            f"of {self.need_s:g} s of market data, so no verdicts ([laya] warmup_s sets it)"
        )


class EventLog:
    """Bounded log of discrete events, never merged. Overflow policy: drop the oldest and count
    it in `dropped`, so a reader that fell behind sees exactly how much it missed."""

    def __init__(self, capacity: int) -> None:
        self._events: deque[tuple[int, object]] = deque(maxlen=capacity)
        self._next_id = 0
        self.dropped = 0
        self.capacity = capacity

    def __len__(self) -> int:
        return len(self._events)

    def append(self, event: object) -> None:
        if len(self._events) == self._events.maxlen:
            self.dropped += 1
        self._events.append((self._next_id, event))
        self._next_id += 1

    def since(self, last_seen_id: int) -> tuple[list[tuple[int, object]], int]:
        """Events with id > last_seen_id in order, and how many of those were already dropped."""
        events = [item for item in self._events if item[0] > last_seen_id]
        first_available = events[0][0] if events else self._next_id
        return events, max(0, first_available - last_seen_id - 1)


def book_shelf(symbols: Iterable[str]) -> dict[str, OrderBook]:
    """An empty book for each symbol: the pipeline writes them, the desk reads them."""
    return {symbol: OrderBook(symbol) for symbol in symbols}


def feature_extractor(
    symbols: Sequence[str], tape: MarketTape, leader: str | None = None
) -> FeatureExtractor:
    """Laya's feature extractor for every one of `symbols` on `tape` (the parser's trades);
    their cross features read `leader` (the book's hedge; None: the last symbol, where the
    hedge comes, so a pair reads each other), see `FeatureExtractorConfig`."""
    return FeatureExtractor(FeatureExtractorConfig(symbols=tuple(symbols), leader=leader), tape)


@dataclass(frozen=True, slots=True)
class PipelineSinks:
    """Who takes what the pipeline decides, each called synchronously on the engine loop (None:
    nobody): `on_decided(snapshot, intent)` after each decision (with CANCEL_ALL when Laya failed
    on that book), `on_trades` for each trade frame, `on_notice` for each feed event, and
    `on_verdict(snapshot, verdict, probabilities, features)` for each non-HOLD verdict, after
    `on_decided` (Kev's queue)."""

    on_decided: Callable[[BookSnapshot, QuoteIntent], None] | None = None
    on_trades: Callable[[Trades], None] | None = None
    on_notice: Callable[[FeedNotice], None] | None = None
    on_verdict: Callable[[BookSnapshot, int, list[float], np.ndarray], None] | None = None


class MarketPipeline:
    """Books per symbol, Laya's features and verdicts, the decision stage and the event log.

    Without a classifier the pipeline stops after the features (market data tools, tests).
    `intents` holds the latest quote intent per symbol for the strategy.

    `scores`, when given, gets each book Laya saw, with its verdict where it gave one (the
    scorecard's queue, engine/laya/scorecard.py, reading back `features`: the extractor the
    node builds for both; else the pipeline's own). `books` likewise, for the trading desk.
    `sinks` take what the pipeline decides (`PipelineSinks`). `events` lets the node share one
    log.
    """

    def __init__(
        self,
        config: MarketPipelineConfig,
        tape: MarketTape,
        classifier: LayaClassifier | Mapping[str, LayaClassifier] | None = None,
        on_resync: Callable[[str], None] | None = None,
        clock: Callable[[], int] = time.perf_counter_ns,
        *,
        events: EventLog | None = None,
        scores: ScorecardQueue | None = None,
        features: FeatureExtractor | None = None,
        books: Mapping[str, OrderBook] | None = None,
        sinks: PipelineSinks | None = None,
    ) -> None:
        self.config = config
        sinks = sinks if sinks is not None else PipelineSinks()
        self.books = dict(books) if books is not None else book_shelf(config.symbols)
        if set(self.books) != set(config.symbols):
            raise ValueError(f"books of {sorted(self.books)} for a pipeline of {config.symbols}")
        self._incremental = {
            symbol: IncrementalBook(symbol, config.depth) for symbol in config.symbols
        }
        self.features = (
            features if features is not None else feature_extractor(config.symbols, tape)
        )
        self.classifiers: dict[str, LayaClassifier] = (
            dict(classifier)
            if isinstance(classifier, Mapping)
            else dict.fromkeys(config.symbols, classifier)
            if classifier is not None
            else {}
        )
        """Each symbol's classifier ([laya.models]); none: the pipeline stops after the
        features."""
        # One lookup a book finds its book and its classifier; None: no verdicts (stood aside
        # when the symbol's model would not start, see `stand_aside`).
        self._lanes: dict[str, tuple[OrderBook, LayaClassifier | None]] = {
            symbol: (book, self.classifiers.get(symbol)) for symbol, book in self.books.items()
        }
        self.stood_aside: dict[str, str] = {}
        """Symbols Laya stands aside on for good, with why (their model would not start)."""
        self.decisions = DecisionStage(config.verdict_stream_size)
        self.intents: dict[str, QuoteIntent] = dict.fromkeys(
            config.symbols, QuoteIntent.KEEP_QUOTING
        )
        self.latency = {stage: LatencyHistogram() for stage in STAGES}
        self.laya_faults = 0
        # Only Laya warms up; the other gates act on the book from the first frame.
        self._warmup_ms = config.warmup_ms if config.gate is QuoteGate.LAYA else 0
        self._gated = config.gate is not QuoteGate.LAYA
        self._last_book_ms: dict[str, int] = {}
        self.warming: dict[str, int] = {}
        """Symbols Laya stands aside on, with the exchange ms their verdicts count from."""
        self.events = events if events is not None else EventLog(config.event_log_size)
        self._on_resync = on_resync
        self._clock = clock
        self._scores = scores
        self._score_features = scores is not None and scores.with_features
        if scores is not None and scores.features is not self.features:
            # The scorer reads each book's mid and top-5 imbalance back from the extractor.
            raise ValueError("the scorecard reads another feature extractor than the pipeline's")
        self._on_decided = sinks.on_decided
        self._on_trades = sinks.on_trades
        self._on_notice = sinks.on_notice
        self._on_verdict = sinks.on_verdict

    def on_market(self, frame: BookSnapshot | BookUpdate | Trades) -> None:
        kind = type(frame)
        if kind is BookSnapshot:
            self._apply(frame)
        elif kind is BookUpdate:
            incremental = self._incremental.get(frame.symbol)
            if incremental is None:
                return
            result = incremental.apply(frame)
            if type(result) is BookSnapshot:
                self._apply(result)
            elif result is not None:
                self.on_feed_event(result)
        elif kind is Trades and self._on_trades is not None:
            self._on_trades(frame)

    def _apply(self, snapshot: BookSnapshot) -> None:
        lane = self._lanes.get(snapshot.symbol)
        if lane is None:
            return
        book, classifier = lane
        clock = self._clock
        latency = self.latency
        started = clock()
        book.apply(snapshot)
        booked = clock()
        features = self.features.on_book(snapshot, book.updates)  # numbered for the scorecard
        extracted = clock()
        latency["book"].record(booked - started)
        latency["features"].record(extracted - booked)
        if classifier is None or features is None:
            if features is not None and self.stood_aside:
                self._stand_aside(book, snapshot)
            return
        scores = self._scores
        if self._warmup_ms and self._warming_up(snapshot):
            self._stand_aside(book, snapshot)
            return
        try:
            probabilities = classifier.infer(features)
        except Exception as error:  # a runtime failure (e.g. CUDA lost) must not stop the engine
            self._laya_failed(snapshot, error)
            if scores is not None:
                scores.append(_unscored(book, snapshot))
            return
        inferred = clock()
        row = probabilities.tolist()[0]
        verdict = choose_verdict(row, classifier.thresholds)
        intent = self.decisions.decide(
            snapshot.symbol, snapshot.exchange_ts_ms, verdict, row[verdict]
        )
        if self._gated:
            intent = self._gate_intent(features)
        self.intents[snapshot.symbol] = intent
        decided = clock()
        # The trading hook runs before the histograms: on EMERGENCY its cancel leaves first.
        on_decided = self._on_decided
        if on_decided is not None:
            on_decided(snapshot, intent)
        if verdict and self._on_verdict is not None:
            self._on_verdict(snapshot, verdict, row, features)
        if scores is not None:  # scored off the fast path (engine/laya/scorecard.py)
            scores.append(
                (
                    book.updates,
                    snapshot,
                    row,
                    verdict,
                    features.copy() if self._score_features else None,
                )
            )
        latency["infer"].record(inferred - extracted)
        latency["decide"].record(decided - inferred)

    def _stand_aside(self, book: OrderBook, snapshot: BookSnapshot) -> None:
        if self._scores is not None:
            self._scores.append(_unscored(book, snapshot))
        self.intents[snapshot.symbol] = _STAND_ASIDE
        if self._on_decided is not None:
            self._on_decided(snapshot, _STAND_ASIDE)

    def stand_aside(self, symbol: str, reason: str, at_ns: int) -> None:
        """No verdicts on `symbol` from now on (its model would not start): no quotes, and
        the event log says why."""
        book, _ = self._lanes[symbol]
        self._lanes[symbol] = (book, None)
        self.stood_aside[symbol] = reason
        self.events.append(LayaStoodAside(symbol, reason, at_ns))

    def _gate_intent(self, features: np.ndarray) -> QuoteIntent:
        if self.config.gate is QuoteGate.NONE:
            return QuoteIntent.KEEP_QUOTING
        imbalance = float(features[0, _OBI5])
        threshold = self.config.imbalance_gate
        if imbalance > threshold:
            return QuoteIntent.PULL_ASKS
        if imbalance < -threshold:
            return QuoteIntent.PULL_BIDS
        return QuoteIntent.KEEP_QUOTING

    def _warming_up(self, snapshot: BookSnapshot) -> bool:
        symbol = snapshot.symbol
        now_ms = snapshot.exchange_ts_ms
        warmup_ms = self._warmup_ms
        last_ms = self._last_book_ms.get(symbol)
        self._last_book_ms[symbol] = now_ms
        if last_ms is None or now_ms - last_ms > warmup_ms:
            reason = "first book" if last_ms is None else f"no book for {now_ms - last_ms:,} ms"
            self.warming[symbol] = now_ms + warmup_ms
            self.events.append(LayaWarmingUp(symbol, warmup_ms / 1000, reason, snapshot.recv_ns))
            return True
        ready_ms = self.warming.get(symbol)
        if ready_ms is None:
            return False
        if now_ms < ready_ms:
            return True
        del self.warming[symbol]
        self.events.append(LayaReady(symbol, snapshot.recv_ns))
        return False

    def _laya_failed(self, snapshot: BookSnapshot, error: Exception) -> None:
        """Without a verdict the book cannot be judged: pull the symbol's quotes and say why."""
        self.laya_faults += 1
        self.intents[snapshot.symbol] = QuoteIntent.CANCEL_ALL
        self.events.append(
            LayaFault(snapshot.symbol, f"{type(error).__name__}: {error}", snapshot.recv_ns)
        )
        if self._on_decided is not None:
            self._on_decided(snapshot, QuoteIntent.CANCEL_ALL)

    def on_feed_event(self, event: FeedNotice) -> None:
        self.events.append(event)
        if self._on_notice is not None:
            self._on_notice(event)
        if type(event) is BookResyncNeeded and self._on_resync is not None:
            self._on_resync(event.symbol)
        elif type(event) is RecordingEnded:
            self.report_warm_up("the recording ended", event.at_ns)

    def warm_up_left_s(self) -> dict[str, float]:
        """Market seconds each symbol Laya stands aside on still has to wait."""
        return {
            symbol: (ready_ms - self._last_book_ms[symbol]) / 1000
            for symbol, ready_ms in self.warming.items()
        }

    def report_warm_up(self, when: str, at_ns: int) -> None:
        """A `LayaStillWarmingUp` event for each symbol still warming up `when` the market
        data ends, so a run without verdicts says why."""
        need_s = self._warmup_ms / 1000
        for symbol, left_s in self.warm_up_left_s().items():
            self.events.append(LayaStillWarmingUp(symbol, need_s - left_s, need_s, when, at_ns))
