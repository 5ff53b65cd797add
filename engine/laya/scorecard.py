"""Laya's live scorecard: how well Laya, the imbalance rule and a shadow model ranked the sides
that were then run over, per symbol, judged on the user's own feed.

The fast path appends each book to a `ScorecardQueue` (one append of what it holds already: the
book's number, the book, Laya's probabilities and verdict; the feature kernel keeps the book's
mid and top-5 imbalance under its number); the scorer drains it every
`drain_every_s` of the engine clock's time (market time in a replay: few books wait, so the
fast path's memory stays warm) and every `score_every_s` labels the frames whose horizon has
passed with the lab's own labels (`engine.laya.labels.label_frames`, each symbol's live
model's label parameters, on the symbol's mids since the session started) and updates, per
model:

- the per-side AUC (the lab's `ranking_auc` of the lab's `side_scores`; the rule ranks by the
  top-5 imbalance its gate reads, the feature `obi_5`, the ask by +OBI5 and the bid by -OBI5)
  over the last `window_s` and, from binned counts, over the whole session;
- the precision of its pulls: of the sides it pulled, the share then run over;
- the markout of the sides it kept and of those it pulled: the mid's move over the horizon
  against a quote at the mid (an ask loses what the mid rose), in bps.

Laya's pulls are its verdicts' (LEAN_BUY the ask, LEAN_SELL the bid, EMERGENCY both), whatever
the gate; the rule's are the imbalance gate's; a shadow model (`[laya] shadow_model`) is scored
on every frame and never acts. A shadow model that fails stops being scored and the view says
why; the engine goes on.

The labels match the lab's on the same frames while the kept mids reach back to the session's
first book (`history_s`, an hour and a half by default); later, the label clock of sigma starts
at the first kept book.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
from array import array
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.clock import EngineClock, Periodic
from engine.journal import EntryKind, Journal
from engine.laya.classifier import LayaClassifier, choose_verdict
from engine.laya.config import LayaClassifierConfig
from engine.laya.labels import UNLABELLED, LabelConfig, LabelResult, label_frames
from engine.laya.ranking import ranking_auc, side_scores
from engine.validation import require_count

if TYPE_CHECKING:
    from engine.laya.features import FeatureExtractor

QUEUE_OVERFLOW = "drop the oldest book, counted in the scorecard's `dropped`"
"""What the scorecard's queue does when the scorer falls behind: the fast path never waits."""
_PULLS_ASK = (False, True, False, True)
"""Indexed by Verdict (HOLD, LEAN_BUY, LEAN_SELL, EMERGENCY): LEAN_BUY and EMERGENCY pull the
ask."""
_PULLS_BID = (False, False, True, True)
"""... LEAN_SELL and EMERGENCY the bid."""
_MODELS = ("laya", "rule", "shadow")


def shadow_classifier_config(
    live: LayaClassifierConfig, shadow: str | os.PathLike[str]
) -> LayaClassifierConfig:
    """The shadow model's classifier: the live one's feature set, its own thresholds, on the
    CPU (it runs batches off the fast path, where a GPU buys nothing)."""
    return dataclasses.replace(
        live, model_path=Path(shadow), prefer_gpu=False, thresholds=None, warmup_runs=1
    )


@dataclass(frozen=True, slots=True)
class LayaScorecardConfig:
    """`imbalance_gate`: where the rule pulls (MarketPipelineConfig.imbalance_gate).
    `window_s`: the rolling AUC's market time; `history_s`: the mids kept for the labels (at
    least the label's sigma floor window and horizon); `auc_bins`: the session AUC's score bins;
    `trend_points`: the rolling AUCs kept for the pane's sparkline, one a score pass."""

    symbols: tuple[str, ...]
    imbalance_gate: float = 0.5
    window_s: float = 900.0
    drain_every_s: float = 1.0
    score_every_s: float = 10.0
    journal_every_s: float = 60.0
    history_s: float = 5_400.0
    queue_size: int = 65_536
    auc_bins: int = 4_096
    trend_points: int = 60

    def __post_init__(self) -> None:
        if not self.symbols:
            raise ValueError("LayaScorecardConfig.symbols must name at least one symbol")
        for name in ("window_s", "drain_every_s", "score_every_s", "journal_every_s", "history_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"LayaScorecardConfig.{name} must be > 0 s, got {value!r}")
        for name in ("queue_size", "auc_bins", "trend_points"):
            require_count("LayaScorecardConfig", name, getattr(self, name))


class ScorecardQueue(deque):
    """Books between the fast path and the scorer: (the book's number for its symbol
    (`OrderBook.updates`), the `BookSnapshot`, Laya's probabilities, its verdict, the features
    copied when `with_features` (a shadow model's) else None); the probabilities are None where
    Laya gave no verdict (warm-up, a fault: the book's mid still counts for the labels). The
    book's mid and top-5 imbalance feature are read back by its number from `features`, the
    appending pipeline's extractor (the snapshot's levels are reused by the parser). A bounded
    deque, so the fast path's append is deque's own; overflow: `QUEUE_OVERFLOW`, counted by the
    scorer from the gaps in the books' numbers, and so is a book whose record the extractor no
    longer holds (`BOOK_RECORDS` later books of its symbol)."""

    __slots__ = ("features", "with_features")

    def __init__(
        self, capacity: int, features: FeatureExtractor, with_features: bool = False
    ) -> None:
        super().__init__((), capacity)
        self.features = features
        """The extractor of the pipeline that appends (it refuses a queue of another's)."""
        self.with_features = with_features

    def drain(self) -> list[tuple]:
        books = list(self)
        self.clear()
        return books


@dataclass(frozen=True, slots=True)
class ModelScore:
    """One model's figures on one symbol (NaN: not enough labelled frames of both kinds)."""

    ask_auc: float
    bid_auc: float
    """Over the last `window_s` of labelled frames."""
    session_ask_auc: float
    session_bid_auc: float
    pulls: int
    """Sides pulled on labelled frames."""
    pull_precision: float
    kept_markout_bps: float
    pulled_markout_bps: float

    def as_dict(self) -> dict[str, float | int | None]:
        return {
            name: None if isinstance(value, float) and math.isnan(value) else value
            for name, value in (
                ("ask_auc", self.ask_auc),
                ("bid_auc", self.bid_auc),
                ("session_ask_auc", self.session_ask_auc),
                ("session_bid_auc", self.session_bid_auc),
                ("pulls", self.pulls),
                ("pull_precision", self.pull_precision),
                ("kept_markout_bps", self.kept_markout_bps),
                ("pulled_markout_bps", self.pulled_markout_bps),
            )
        }


@dataclass(frozen=True, slots=True)
class SymbolScore:
    symbol: str
    labelled: int
    """Frames with a verdict whose label has matured (and is not unlabelled)."""
    laya: ModelScore
    rule: ModelScore
    shadow: ModelScore | None
    trend: tuple[tuple[float, float], ...]
    """(Laya's, the rule's) rolling AUC, the mean of both sides, one a score pass."""

    def as_dict(self) -> dict[str, object]:
        return {
            "symbol": self.symbol,
            "labelled": self.labelled,
            "laya": self.laya.as_dict(),
            "rule": self.rule.as_dict(),
            "shadow": self.shadow.as_dict() if self.shadow is not None else None,
        }


@dataclass(frozen=True, slots=True)
class ScorecardView:
    """The scorecard as of its last score pass, safe to hand to another thread."""

    symbols: tuple[SymbolScore, ...]
    window_s: float
    shadow_model: str | None
    shadow_fault: str | None
    dropped: int
    """Books the queue dropped (`QUEUE_OVERFLOW`)."""
    fault: str | None = None
    """Why the scoring stopped, if it did (the figures are those before)."""

    def as_dict(self) -> dict[str, object]:
        return {
            "window_s": self.window_s,
            "shadow_model": self.shadow_model,
            "shadow_fault": self.shadow_fault,
            "dropped": self.dropped,
            "fault": self.fault,
            "symbols": [score.as_dict() for score in self.symbols],
        }


class _SessionAuc:
    """Per-side AUC over a whole session from counts of scores in `bins` equal bins of [0, 1]
    (ties within a bin count half): constant memory, one bincount per batch."""

    def __init__(self, bins: int) -> None:
        self._bins = bins
        self._positive = np.zeros(bins, np.int64)
        self._negative = np.zeros(bins, np.int64)

    def add(self, unit_scores: np.ndarray, positives: np.ndarray) -> None:
        bins = self._bins
        index = np.clip((np.asarray(unit_scores, np.float64) * bins).astype(np.int64), 0, bins - 1)
        self._positive += np.bincount(index[positives], minlength=bins)
        self._negative += np.bincount(index[~positives], minlength=bins)

    def auc(self) -> float:
        positive, negative = self._positive, self._negative
        pairs = int(positive.sum()) * int(negative.sum())
        if not pairs:
            return math.nan
        below = np.cumsum(negative) - negative
        return float((positive * (below + 0.5 * negative)).sum() / pairs)


class _ModelTally:
    """One model's running figures on one symbol."""

    def __init__(self, bins: int) -> None:
        self.session = (_SessionAuc(bins), _SessionAuc(bins))
        self.pulls = 0
        self.pulls_run_over = 0
        self.kept_markout = 0.0
        self.kept = 0
        self.pulled_markout = 0.0

    def add(
        self,
        unit_scores: tuple[np.ndarray, np.ndarray],
        pulled: tuple[np.ndarray, np.ndarray],
        runs: tuple[np.ndarray, np.ndarray],
        markouts: tuple[np.ndarray, np.ndarray],
    ) -> None:
        for side in (0, 1):
            self.session[side].add(unit_scores[side], runs[side])
            side_pulled = pulled[side]
            self.pulls += int(side_pulled.sum())
            self.pulls_run_over += int((side_pulled & runs[side]).sum())
            self.pulled_markout += float(markouts[side][side_pulled].sum())
            self.kept_markout += float(markouts[side][~side_pulled].sum())
            self.kept += int((~side_pulled).sum())

    def score(self, ask_auc: float, bid_auc: float) -> ModelScore:
        pulls, kept = self.pulls, self.kept
        return ModelScore(
            ask_auc,
            bid_auc,
            self.session[0].auc(),
            self.session[1].auc(),
            pulls,
            self.pulls_run_over / pulls if pulls else math.nan,
            self.kept_markout / kept if kept else math.nan,
            self.pulled_markout / pulls if pulls else math.nan,
        )


class _SymbolScorer:
    """One symbol: its mids since the oldest book a label still needs, its books waiting for
    their labels, and the models' tallies over the labelled ones."""

    _SCORES = ("laya_ask", "laya_bid", "rule", "shadow_ask", "shadow_bid")
    _PULLS = ("laya_ask", "laya_bid", "rule_ask", "rule_bid", "shadow_ask", "shadow_bid")

    def __init__(self, symbol: str, config: LayaScorecardConfig) -> None:
        self.symbol = symbol
        self.config = config
        self.ts_ms = array("q")
        self.mids = array("d")
        self.unscored = 0
        """Index of the first kept book whose label has not matured."""
        self.last_number = 0
        """The number (`OrderBook.updates`) of the last book taken."""
        self.pending: dict[str, list[float]] = {name: [] for name in self._SCORES}
        self.pending_pulls: dict[str, list[bool]] = {name: [] for name in self._PULLS}
        self.pending_scored: list[bool] = []
        self.tallies = {model: _ModelTally(config.auc_bins) for model in _MODELS}
        self.window: dict[str, np.ndarray] = {}
        self.labelled = 0
        self.trend: deque[tuple[float, float]] = deque(maxlen=config.trend_points)

    def add(
        self,
        ts_ms: int,
        mid: float,
        scores: tuple[float, float, float, float, float] | None,
        pulls: tuple[bool, bool, bool, bool, bool, bool] | None,
    ) -> None:
        if self.ts_ms and ts_ms < self.ts_ms[-1]:
            return  # the labels need time order; the parser refuses such books anyway
        self.ts_ms.append(ts_ms)
        self.mids.append(mid)
        self.pending_scored.append(scores is not None)
        for name, value in zip(self._SCORES, scores or (math.nan,) * 5, strict=True):
            self.pending[name].append(value)
        for name, pulled in zip(self._PULLS, pulls or (False,) * 6, strict=True):
            self.pending_pulls[name].append(pulled)

    def label_input(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Copies of the kept books' times and mids (the arrays grow and shrink, which a view
        of their buffer would forbid), for `label_frames` on another thread; None: no book."""
        if not self.ts_ms:
            return None
        return np.array(self.ts_ms, np.int64), np.array(self.mids, np.float64)

    def score(self, labels: LabelConfig, with_shadow: bool) -> None:
        """Labels the books whose horizon has passed and adds the scored ones to the tallies."""
        books = self.label_input()
        if books is not None:
            self.apply(books[0], label_frames(*books, labels), labels, with_shadow)

    def apply(
        self, ts: np.ndarray, result: LabelResult, labels: LabelConfig, with_shadow: bool
    ) -> None:
        """Tallies the books of `ts` (the kept books' times as `label_input` copied them; more
        may have come since) whose labels in `result` matured."""
        matured = int(np.searchsorted(ts, ts[-1] - labels.horizon_ms, side="right"))
        start = self.unscored
        if matured > start:
            self._tally(result, ts, start, matured, with_shadow)
            self.unscored = matured
        self._forget(ts, labels)
        self.trend.append((self._window_mean("laya"), self._window_mean("rule")))

    def _tally(
        self, result: LabelResult, ts: np.ndarray, start: int, stop: int, with_shadow: bool
    ) -> None:
        count = stop - start
        keep = np.array(self.pending_scored[:count], bool) & (
            result.labels[start:stop] != UNLABELLED
        )
        batch = {name: np.array(values[:count])[keep] for name, values in self.pending.items()}
        pulls = {
            name: np.array(values[:count], bool)[keep]
            for name, values in self.pending_pulls.items()
        }
        for values in (*self.pending.values(), *self.pending_pulls.values()):
            del values[:count]
        del self.pending_scored[:count]
        if not keep.any():
            return
        ask_run = result.ask_run[start:stop][keep]
        bid_run = result.bid_run[start:stop][keep]
        end_bps = result.end_bps[start:stop][keep]
        runs = (ask_run, bid_run)
        markouts = (-end_bps, end_bps)
        self.labelled += int(keep.sum())
        rule = batch["rule"]
        sides = {
            "laya": (batch["laya_ask"], batch["laya_bid"]),
            "rule": (rule, -rule),
            "shadow": (batch["shadow_ask"], batch["shadow_bid"]),
        }
        units = {
            "laya": sides["laya"],
            "rule": ((rule + 1.0) / 2.0, (1.0 - rule) / 2.0),
            "shadow": sides["shadow"],
        }
        for model in _MODELS if with_shadow else _MODELS[:2]:
            self.tallies[model].add(
                units[model], (pulls[model + "_ask"], pulls[model + "_bid"]), runs, markouts
            )
        self._extend_window(ts[start:stop][keep], sides, runs)

    def _extend_window(self, ts: np.ndarray, sides: dict, runs: tuple) -> None:
        fresh = {"ts": ts, "ask_run": runs[0], "bid_run": runs[1]}
        for model, (ask, bid) in sides.items():
            fresh[model + "_ask"], fresh[model + "_bid"] = ask, bid
        window = self.window
        if window:
            fresh = {name: np.concatenate((window[name], values)) for name, values in fresh.items()}
        since = fresh["ts"][-1] - round(self.config.window_s * 1000)
        first = int(np.searchsorted(fresh["ts"], since, side="right"))
        self.window = {name: values[first:] for name, values in fresh.items()}

    def _window_auc(self, model: str) -> tuple[float, float]:
        window = self.window
        if not window:
            return math.nan, math.nan
        return (
            ranking_auc(window[model + "_ask"], window["ask_run"]),
            ranking_auc(window[model + "_bid"], window["bid_run"]),
        )

    def _window_mean(self, model: str) -> float:
        return float(np.mean(self._window_auc(model)))

    def _forget(self, ts: np.ndarray, labels: LabelConfig) -> None:
        """Drops the mids no label still needs, beyond `history_s` (see the module docstring);
        `ts` is a copy of `ts_ms`."""
        keep_ms = max(
            round(self.config.history_s * 1000),
            labels.sigma_window_ms + labels.sigma_floor_window_ms + 2 * labels.horizon_ms,
        )
        first = min(int(np.searchsorted(ts, ts[-1] - keep_ms, side="left")), self.unscored)
        if first < len(ts) // 2:  # amortised: a copy when half of them can go
            return
        del self.ts_ms[:first]
        del self.mids[:first]
        self.unscored -= first

    def view(self, with_shadow: bool) -> SymbolScore:
        scores = {
            model: self.tallies[model].score(*self._window_auc(model))
            for model in (_MODELS if with_shadow else _MODELS[:2])
        }
        return SymbolScore(
            self.symbol,
            self.labelled,
            scores["laya"],
            scores["rule"],
            scores.get("shadow"),
            tuple(self.trend),
        )


class LayaScorecard:
    """Scores Laya, the imbalance rule and an optional shadow model per symbol, off the fast
    path (see the module docstring). `classifiers`: each symbol's live model (`[laya.models]`;
    its label parameters are that symbol's labels); `features`: the extractor of the pipeline
    that fills the queue; `shadow`, when given, a second model the
    scorecard starts and stops itself; `journal`, when given, gets the scorecard every
    `journal_every_s`."""

    def __init__(
        self,
        config: LayaScorecardConfig,
        classifiers: Mapping[str, LayaClassifier],
        clock: EngineClock,
        features: FeatureExtractor,
        *,
        shadow: LayaClassifier | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.config = config
        self.queue = ScorecardQueue(config.queue_size, features, with_features=shadow is not None)
        self._classifiers = classifiers
        self._clock = clock
        self._shadow = shadow
        self._journal = journal
        self._symbols = {symbol: _SymbolScorer(symbol, config) for symbol in config.symbols}
        self._labels: dict[str, LabelConfig] = {}
        """Each scored symbol's labels, its live model's (set at start)."""
        self._timers: list[Periodic] = []
        self.shadow_fault: str | None = None
        self.dropped = 0
        """Books the queue dropped (`QUEUE_OVERFLOW`)."""
        self.fault: str | None = None
        """Why the scoring stopped (None: it goes on)."""
        self._scoring: asyncio.Task[None] | None = None
        self._view = self._build_view()

    def start(self) -> None:
        """After the live classifiers started (each symbol's model's label parameters are its
        labels; a symbol whose model would not start, which Laya stands aside, is not scored);
        on the engine loop. Starts the shadow model (its `ModelMismatchError` and the like
        propagate: a shadow that cannot load is refused at start)."""
        for symbol in self._symbols:
            metadata = self._classifiers[symbol].model_metadata
            if metadata is not None:
                self._labels[symbol] = LabelConfig.from_metadata(metadata.label_parameters)
        if self._shadow is not None:
            self._shadow.start()
        config = self.config
        self._timers = [
            Periodic(config.drain_every_s, self.take),
            Periodic(config.journal_every_s, self._write_journal),
        ]
        self._scoring = asyncio.create_task(self._score_off_the_loop(), name="laya-scorecard")

    async def stop(self) -> None:
        """Stops the timers, then scores what matured by now (a replay's last books)."""
        for timer in self._timers:
            timer.cancel()
        if self._scoring is not None:
            self._scoring.cancel()
            await asyncio.gather(self._scoring, return_exceptions=True)
            self._scoring = None
            self.score()
        self._timers = []
        if self._shadow is not None:
            self._shadow.stop()

    def view(self) -> ScorecardView:
        """As of the last score pass."""
        return self._view

    def take(self) -> None:
        """Drains the queue into the symbols' books waiting for their labels (the shadow model
        scores them now)."""
        books = self.queue.drain()
        if not books:
            return
        extractor = self.queue.features
        shadow_rows = self._shadow_verdicts(books)
        gate = self.config.imbalance_gate
        for index, (number, snapshot, row, verdict, _) in enumerate(books):
            symbol = snapshot.symbol
            scorer = self._symbols.get(symbol)
            if scorer is None:
                continue
            self.dropped += max(0, number - scorer.last_number - 1)
            scorer.last_number = number
            recorded = extractor.recorded_book(symbol, number)
            if recorded is None:  # the extractor's record of it was overwritten
                self.dropped += 1
                continue
            mid, imbalance = recorded
            ts_ms = snapshot.exchange_ts_ms
            if row is None:
                scorer.add(ts_ms, mid, None, None)
                continue
            laya_ask, laya_bid = side_scores(np.array([row], np.float32))
            shadow_ask = shadow_bid = math.nan
            shadow_verdict = 0
            if shadow_rows is not None:
                shadow_ask, shadow_bid, shadow_verdict = shadow_rows[index]
            scorer.add(
                ts_ms,
                mid,
                (float(laya_ask[0]), float(laya_bid[0]), imbalance, shadow_ask, shadow_bid),
                (
                    _PULLS_ASK[verdict],
                    _PULLS_BID[verdict],
                    imbalance > gate,
                    imbalance < -gate,
                    _PULLS_ASK[shadow_verdict],
                    _PULLS_BID[shadow_verdict],
                ),
            )

    def score(self) -> None:
        """Takes the queue's books and scores those whose labels matured, here and now."""
        self.take()
        with_shadow = self._shadow is not None and self.shadow_fault is None
        for symbol, labels in self._labels.items():
            self._symbols[symbol].score(labels, with_shadow)
        self._view = self._build_view()

    async def _score_off_the_loop(self) -> None:
        """Every `score_every_s`: the labels (tens of milliseconds over an hour of books) on a
        worker thread, the tallies back on the loop. The clock holds still meanwhile (a replay
        plays nothing while it labels); a labelling that fails stops the scoring, said in the
        view, and the engine goes on."""
        labels = self._labels
        while True:
            await asyncio.sleep(self.config.score_every_s)
            self.take()
            inputs = {
                symbol: (books, labels[symbol])
                for symbol, scorer in self._symbols.items()
                if symbol in labels and (books := scorer.label_input()) is not None
            }
            try:
                results = await self._clock.real_wait(asyncio.to_thread(_label_each, inputs), None)
            except Exception as error:  # the scorecard must never stop the engine
                self.fault = f"{type(error).__name__}: {error}"
                self._view = self._build_view()
                return
            with_shadow = self._shadow is not None and self.shadow_fault is None
            for symbol, (ts, result) in results.items():
                self._symbols[symbol].apply(ts, result, labels[symbol], with_shadow)
            self._view = self._build_view()

    def _shadow_verdicts(self, books: list[tuple]) -> list[tuple[float, float, int]] | None:
        """The shadow model's (ask score, bid score, verdict) per book with features; None
        without a shadow or once it failed (the fault is kept, the engine goes on)."""
        shadow = self._shadow
        if shadow is None or self.shadow_fault is not None:
            return None
        rows = [index for index, book in enumerate(books) if book[2] is not None]
        result: list[tuple[float, float, int]] = [(math.nan, math.nan, 0)] * len(books)
        if not rows:
            return result
        features = np.concatenate([books[index][4] for index in rows])
        try:
            probabilities = np.asarray(shadow.infer(features), np.float32)
        except Exception as error:  # a model failing at run time must not stop the engine
            self.shadow_fault = f"{type(error).__name__}: {error}"
            return None
        ask, bid = side_scores(probabilities)
        thresholds = shadow.thresholds
        for position, index in enumerate(rows):
            verdict = choose_verdict(probabilities[position].tolist(), thresholds)
            result[index] = (float(ask[position]), float(bid[position]), int(verdict))
        return result

    def _build_view(self) -> ScorecardView:
        shadow = self._shadow
        with_shadow = shadow is not None and self.shadow_fault is None
        return ScorecardView(
            tuple(scorer.view(with_shadow) for scorer in self._symbols.values()),
            self.config.window_s,
            str(shadow.model_path) if shadow is not None else None,
            self.shadow_fault,
            self.dropped,
            self.fault,
        )

    def _write_journal(self) -> None:
        journal = self._journal
        if journal is None:
            return
        journal.append(EntryKind.LAYA_SCORECARD, self._view.as_dict(), self._clock.time_ns())


def _label_each(
    inputs: dict[str, tuple[tuple[np.ndarray, np.ndarray], LabelConfig]],
) -> dict[str, tuple[np.ndarray, LabelResult]]:
    """On a worker thread: each symbol's labels by its own label parameters (numpy lets the
    loop's thread run meanwhile)."""
    return {
        symbol: (ts, label_frames(ts, mids, labels))
        for symbol, ((ts, mids), labels) in inputs.items()
    }


def _pair(ask: float, bid: float) -> str:
    return "/".join("-" if math.isnan(value) else f"{value:.2f}" for value in (ask, bid))


def _bps(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:+.2f}"


def score_lines(score: SymbolScore, window_s: float) -> list[str]:
    """A symbol's scorecard in text, the models side by side (the backtest report's)."""
    models = [("Laya", score.laya), ("rule", score.rule)]
    if score.shadow is not None:
        models.append(("shadow", score.shadow))
    window = f"{window_s / 60:g} min"
    return [
        f"{score.symbol}: {score.labelled:,} labelled books; AUC ask/bid over {window} | session",
        *(
            f"  {name:<6} {_pair(model.ask_auc, model.bid_auc)} | "
            f"{_pair(model.session_ask_auc, model.session_bid_auc)}  pulls {model.pulls:,} "
            f"({'-' if math.isnan(model.pull_precision) else f'{model.pull_precision:.0%}'} "
            f"run over)  markout kept {_bps(model.kept_markout_bps)} / pulled "
            f"{_bps(model.pulled_markout_bps)} bps"
            for name, model in models
        ),
    ]
