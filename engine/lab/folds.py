"""Leave-one-session-out validation: each predictor fitted on every session but one and scored
on the one left out, with block-bootstrap intervals, against three baselines.

A slice of one session holds a few dozen EMERGENCY frames from a handful of moves, so choosing
a model or a threshold on it is noise; a session of another venue or year is the test that
matters. Every fold scores, on the same frames of the left-out session:

- majority: the most frequent label of the training sessions;
- imbalance: LEAN_BUY when the top-5 imbalance exceeds tau, LEAN_SELL below -tau;
- imbalance + jump: the same, and EMERGENCY when `jump_sigmas_5s` reaches j;
- each candidate (fitted by the caller on the training sessions alone).

Scores: macro-F1 and per-class F1 (`engine.lab.evaluate`), and the per-side ranking AUC: how
well the score for pulling the ask (P(LEAN_BUY) + P(EMERGENCY): the verdicts that pull it)
ranks the frames whose ask was run over, and the same for the bid. Intervals resample whole
blocks of exchange time (`BootstrapConfig.block_ms`), the same blocks for every predictor of a
fold, because labels a few seconds apart are not independent. Baseline parameters are fitted
on the training sessions, each session weighing the same however many frames it has.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from engine.lab.candidates import GATE_SUFFIX, IMBALANCE_RULE
from engine.lab.dataset import Dataset
from engine.lab.evaluate import (
    CLASS_COUNT,
    JUMP_FEATURE,
    ClassificationMetrics,
    classification_metrics,
    fit_imbalance_jump,
    fit_imbalance_tau,
    imbalance_jump_rule,
    imbalance_rule,
    ranking_auc,
    side_scores,
)
from engine.laya.features import CROSS_FEATURES, FEATURE_NAMES
from engine.laya.labels import UNLABELLED
from engine.laya.verdict import CLASS_NAMES, Verdict


@dataclass(frozen=True, slots=True)
class BootstrapConfig:
    """Block bootstrap of a left-out session: `resamples` draws of its `block_ms` blocks."""

    block_ms: int = 30_000
    resamples: int = 500
    level: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        if self.block_ms < 1 or self.resamples < 1:
            raise ValueError("BootstrapConfig needs block_ms >= 1 and resamples >= 1")
        if not 0.0 < self.level < 1.0:
            raise ValueError(f"BootstrapConfig.level must be in (0, 1), got {self.level}")


class Predictor(Protocol):
    """A fitted candidate: class probabilities of feature rows, and its thresholds."""

    thresholds: tuple[float, ...]

    def probabilities(self, features: np.ndarray) -> np.ndarray: ...

    def verdicts(self, features: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, slots=True)
class Interval:
    value: float
    low: float
    high: float

    def text(self) -> str:
        if math.isnan(self.value):
            return "-"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True, slots=True, eq=False)
class Scores:
    """One predictor on one left-out session, with bootstrap intervals."""

    name: str
    metrics: ClassificationMetrics
    macro_f1: Interval
    f1: tuple[Interval, ...]
    ask_auc: Interval
    bid_auc: Interval
    pull_rate: float
    """The share of frames whose verdict pulls at least one side (not HOLD)."""

    def as_dict(self) -> dict[str, object]:
        def pack(interval: Interval) -> list[float | None]:
            return [
                None if math.isnan(v) else v for v in (interval.value, interval.low, interval.high)
            ]

        return {
            "name": self.name,
            "macro_f1": pack(self.macro_f1),
            "f1": {name: pack(self.f1[k]) for k, name in enumerate(CLASS_NAMES)},
            "ask_auc": pack(self.ask_auc),
            "bid_auc": pack(self.bid_auc),
            "pull_rate": self.pull_rate,
            "confusion": self.metrics.confusion.tolist(),
        }


@dataclass(frozen=True, slots=True, eq=False)
class Fold:
    """The scores of every predictor on one left-out session."""

    left_out: str
    trained_on: tuple[str, ...]
    frames: int
    class_counts: dict[str, int]
    baseline_parameters: dict[str, float]
    rows: tuple[Scores, ...]

    def row(self, name: str) -> Scores:
        """The scores of predictor `name`; the imbalance rule shipped at its gate thresholds is
        the baseline's row (it ranks as the top-5 imbalance does at any operating point)."""
        if name == IMBALANCE_RULE.name + GATE_SUFFIX:
            name = IMBALANCE_RULE.name
        return next(row for row in self.rows if row.name == name)


@dataclass(frozen=True, slots=True, eq=False)
class FoldReport:
    folds: tuple[Fold, ...]
    bootstrap: BootstrapConfig
    predictors: dict[str, dict[str, Predictor]] = field(default_factory=dict)
    """Per left-out session, the candidates fitted without it (for the backtest)."""

    def names(self) -> tuple[str, ...]:
        return tuple(row.name for row in self.folds[0].rows) if self.folds else ()

    def as_dict(self) -> dict[str, object]:
        return {
            "bootstrap": {
                "block_ms": self.bootstrap.block_ms,
                "resamples": self.bootstrap.resamples,
                "level": self.bootstrap.level,
            },
            "folds": [
                {
                    "left_out": fold.left_out,
                    "trained_on": list(fold.trained_on),
                    "frames": fold.frames,
                    "class_counts": fold.class_counts,
                    "baseline_parameters": fold.baseline_parameters,
                    "rows": [row.as_dict() for row in fold.rows],
                }
                for fold in self.folds
            ],
        }


def session_name(dataset: Dataset) -> str:
    return Path(dataset.recordings[0]).name


_HOUR_MS = 3_600_000


def market_time_blocks(session: Dataset, block_ms: int, purge_ms: int) -> list[Dataset]:
    """One long session cut into blocks of `block_ms` of market time (the remainder joins the
    last), each a session of its own for leave-one-block-out. Frames within `purge_ms` (the
    label horizon) of a cut, on either side, lose their label: a label looks ahead, so neither
    a left-out block nor its neighbours learn from the other's moves. Raises ValueError for a
    session shorter than two blocks."""
    ts = session.exchange_ts_ms
    name = session_name(session)
    start = int(ts.min()) if len(session) else 0
    span = int(ts.max()) - start if len(session) else 0
    count = span // block_ms
    if count < 2:
        raise ValueError(
            f"{name} spans {span / _HOUR_MS:.2f} h of market time: too short to split into two "
            f"validation blocks of {block_ms / _HOUR_MS:g} h; give a longer recording or two or "
            "more recordings"
        )
    cuts = start + block_ms * np.arange(1, count, dtype=np.int64)
    block = np.searchsorted(cuts, ts, side="right")
    nearest = np.minimum(
        np.abs(ts - cuts[np.maximum(block - 1, 0)]), np.abs(cuts[np.minimum(block, count - 2)] - ts)
    )
    purged = nearest <= purge_ms
    whole = dataclasses.replace(
        session,
        labels=np.where(purged, UNLABELLED, session.labels).astype(session.labels.dtype),
        ask_run=session.ask_run & ~purged,
        bid_run=session.bid_run & ~purged,
    )
    bounds = [0.0, *((cuts - start) / _HOUR_MS), span / _HOUR_MS]
    return [
        dataclasses.replace(
            whole.subset(block == k),
            recordings=(f"{name} [{bounds[k]:.4g}-{bounds[k + 1]:.4g} h]",),
        )
        for k in range(count)
    ]


def session_weights(sessions: Sequence[Dataset]) -> np.ndarray:
    """Per labelled frame of the sessions (in order), a weight giving each session total 1."""
    return np.concatenate(
        [
            np.full(int(session.labelled.sum()), 1.0 / max(1, int(session.labelled.sum())))
            for session in sessions
        ]
    )


def labelled_rows(sessions: Sequence[Dataset]) -> Dataset:
    """The labelled frames of the sessions, one dataset (features loaded into memory)."""
    parts = [session.subset(session.labelled) for session in sessions]
    first = parts[0]
    return Dataset(
        recordings=tuple(itertools.chain.from_iterable(part.recordings for part in parts)),
        symbols=first.symbols,
        recording_symbols=tuple(itertools.chain.from_iterable(p.recording_symbols for p in parts)),
        recording_index=np.concatenate([np.full(len(p), k, np.int16) for k, p in enumerate(parts)]),
        symbol_index=np.concatenate([p.symbol_index for p in parts]),
        exchange_ts_ms=np.concatenate([p.exchange_ts_ms for p in parts]),
        mid=np.concatenate([p.mid for p in parts]),
        obi5=np.concatenate([p.obi5 for p in parts]),
        features=np.concatenate([np.asarray(p.features) for p in parts]),
        labels=np.concatenate([p.labels for p in parts]),
        ask_run=np.concatenate([p.ask_run for p in parts]),
        bid_run=np.concatenate([p.bid_run for p in parts]),
        sigma_bps=np.concatenate([p.sigma_bps for p in parts]),
        label_config=first.label_config,
    )


class _Blocks:
    """The left-out session's labelled frames grouped into blocks of exchange time, and the
    bootstrap draws of those blocks (shared by every predictor of the fold)."""

    def __init__(self, ts: np.ndarray, config: BootstrapConfig) -> None:
        block = (ts - ts.min()) // config.block_ms
        _, self.of_row = np.unique(block, return_inverse=True)
        self.count = int(self.of_row.max()) + 1
        order = np.argsort(self.of_row, kind="stable")
        bounds = np.searchsorted(self.of_row[order], np.arange(self.count + 1))
        self.rows = [order[bounds[k] : bounds[k + 1]] for k in range(self.count)]
        rng = np.random.default_rng(config.seed)
        self.draws = rng.integers(0, self.count, size=(config.resamples, self.count))
        self.tail = (1.0 - config.level) / 2.0

    def interval(self, value: float, samples: np.ndarray) -> Interval:
        samples = samples[~np.isnan(samples)]
        if math.isnan(value) or not samples.size:
            return Interval(value, math.nan, math.nan)
        low, high = np.quantile(samples, [self.tail, 1.0 - self.tail])
        return Interval(value, float(low), float(high))

    def classification(self, labels: np.ndarray, verdicts: np.ndarray):
        """(macro-F1 interval, per-class F1 intervals, metrics) of the verdicts."""
        metrics = classification_metrics(labels, verdicts)
        cells = labels.astype(np.int64) * CLASS_COUNT + verdicts.astype(np.int64)
        per_block = np.zeros((self.count, CLASS_COUNT * CLASS_COUNT))
        np.add.at(per_block, (self.of_row, cells), 1.0)
        confusion = per_block[self.draws].sum(axis=1).reshape(-1, CLASS_COUNT, CLASS_COUNT)
        f1 = np.stack([ClassificationMetrics(matrix).f1 for matrix in confusion])
        macro = self.interval(metrics.macro_f1, f1.mean(axis=1))
        per_class = tuple(self.interval(float(metrics.f1[k]), f1[:, k]) for k in range(CLASS_COUNT))
        return macro, per_class, metrics

    def auc(self, scores: np.ndarray, positives: np.ndarray) -> Interval:
        value = ranking_auc(scores, positives)
        samples = np.array(
            [
                ranking_auc(scores[rows], positives[rows])
                for rows in (np.concatenate([self.rows[k] for k in draw]) for draw in self.draws)
            ]
        )
        return self.interval(value, samples)


def _scores(
    name: str,
    session: Dataset,
    blocks: _Blocks,
    verdicts: np.ndarray,
    ask: np.ndarray,
    bid: np.ndarray,
) -> Scores:
    labels = session.labels.astype(np.int64)
    macro, per_class, metrics = blocks.classification(labels, verdicts)
    return Scores(
        name=name,
        metrics=metrics,
        macro_f1=macro,
        f1=per_class,
        ask_auc=blocks.auc(ask, session.ask_run),
        bid_auc=blocks.auc(bid, session.bid_run),
        pull_rate=float(np.mean(verdicts != Verdict.HOLD)),
    )


def score_fold(
    train_sessions: Sequence[Dataset],
    left_out: Dataset,
    candidates: dict[str, Predictor],
    config: BootstrapConfig,
) -> Fold:
    """The baselines (fitted on `train_sessions`) and `candidates` on `left_out`."""
    train = labelled_rows(train_sessions)
    weights = session_weights(train_sessions)
    test = left_out.subset(left_out.labelled)
    blocks = _Blocks(test.exchange_ts_ms, config)
    majority = int(np.argmax(np.bincount(train.labels, weights=weights, minlength=CLASS_COUNT)))
    tau = fit_imbalance_tau(train.obi5, train.labels, weights=weights)
    rule_tau, jump_at = fit_imbalance_jump(
        train.obi5, train.features[:, JUMP_FEATURE], train.labels, weights
    )
    obi, jump = test.obi5, np.asarray(test.features[:, JUMP_FEATURE], np.float64)
    constant = np.zeros(len(test))
    jumped = 2.0 * (jump >= jump_at)
    rows = [
        _scores("majority", test, blocks, np.full(len(test), majority), constant, constant),
        _scores("imbalance", test, blocks, imbalance_rule(obi, tau), obi, -obi),
        _scores(
            "imbalance + jump",
            test,
            blocks,
            imbalance_jump_rule(obi, jump, rule_tau, jump_at),
            obi + jumped,
            -obi + jumped,
        ),
    ]
    features = np.asarray(test.features)
    for name, predictor in candidates.items():
        probabilities = predictor.probabilities(features)
        ask, bid = side_scores(probabilities)
        rows.append(_scores(name, test, blocks, predictor.verdicts(features), ask, bid))
    return Fold(
        left_out=session_name(left_out),
        trained_on=tuple(session_name(session) for session in train_sessions),
        frames=len(test),
        class_counts=test.class_counts(),
        baseline_parameters={
            "majority": float(majority),
            "imbalance_tau": tau,
            "rule_tau": rule_tau,
            "rule_jump_sigmas": jump_at,
        },
        rows=tuple(rows),
    )


def leave_one_session_out(
    sessions: Sequence[Dataset],
    fit: Callable[[Sequence[Dataset]], dict[str, Predictor]],
    config: BootstrapConfig | None = None,
    extra_training: Sequence[Dataset] = (),
    on_fold: Callable[[str], None] | None = None,
) -> FoldReport:
    """Every session left out once: `fit` the candidates on the others (plus
    `extra_training`, e.g. simulated data, never scored), score all on the one left out."""
    config = config or BootstrapConfig()
    if len(sessions) < 2:
        raise ValueError("leave-one-session-out needs at least two sessions")
    folds = []
    predictors = {}
    for index, left_out in enumerate(sessions):
        if on_fold is not None:
            on_fold(session_name(left_out))
        train = [session for k, session in enumerate(sessions) if k != index]
        candidates = fit([*train, *extra_training])
        predictors[session_name(left_out)] = candidates
        folds.append(score_fold(train, left_out, candidates, config))
    return FoldReport(tuple(folds), config, predictors)


def fold_table(report: FoldReport) -> list[str]:
    """The fold table in markdown: every predictor on every left-out session."""
    level = f"{report.bootstrap.level:.0%}"
    lines = [
        f"| left out | predictor | macro-F1 [{level}] | "
        + " | ".join(f"F1 {name}" for name in CLASS_NAMES)
        + f" | ask AUC [{level}] | bid AUC [{level}] | pulls |",
        "|---|---|---|" + "---|" * len(CLASS_NAMES) + "---|---|---|",
    ]
    for fold in report.folds:
        for row in fold.rows:
            lines.append(
                f"| {fold.left_out} | {row.name} | {row.macro_f1.text()} | "
                + " | ".join(f"{interval.value:.3f}" for interval in row.f1)
                + f" | {row.ask_auc.text()} | {row.bid_auc.text()} | {row.pull_rate:.0%} |"
            )
    return lines


def ks_statistic(a: np.ndarray, b: np.ndarray) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical
    distribution functions (0: the same distribution, 1: no overlap). Scale-free, so features
    of any unit compare."""
    a = np.sort(np.asarray(a, dtype=np.float64))
    b = np.sort(np.asarray(b, dtype=np.float64))
    if not a.size or not b.size:
        return math.nan
    grid = np.concatenate([a, b])
    gap = (
        np.searchsorted(a, grid, side="right") / a.size
        - np.searchsorted(b, grid, side="right") / b.size
    )
    return float(np.abs(gap).max())


def feature_shift(sessions: Sequence[Dataset]) -> tuple[tuple[str, ...], np.ndarray]:
    """The KS statistic of every feature between every pair of sessions (labelled frames),
    [features, pairs], with the pairs' names. A cross feature is compared only between
    sessions that both have a leader (a pair's hedge, a book's; without one it is 0 by
    design)."""
    pairs = list(itertools.combinations(range(len(sessions)), 2))
    names = tuple(f"{session_name(sessions[a])} / {session_name(sessions[b])}" for a, b in pairs)
    samples = [np.asarray(session.features[session.labelled]) for session in sessions]
    hedged = [
        all(len(symbols) > 1 for symbols in session.recording_symbols) for session in sessions
    ]
    shift = np.full((len(FEATURE_NAMES), len(pairs)), np.nan)
    for column, (a, b) in enumerate(pairs):
        for feature, name in enumerate(FEATURE_NAMES):
            if name in CROSS_FEATURES and not (hedged[a] and hedged[b]):
                continue
            shift[feature, column] = ks_statistic(samples[a][:, feature], samples[b][:, feature])
    return names, shift
