"""The verdicts a candidate's probabilities give at per-class thresholds, and the thresholds
tuned for macro-F1, within a budget of market time with our quotes pulled."""

from __future__ import annotations

import numpy as np

from engine.lab.dataset import Dataset
from engine.lab.evaluate import CLASS_COUNT, classification_metrics
from engine.laya.verdict import Verdict

_THRESHOLD_GRID = np.round(np.arange(0.0, 0.96, 0.025), 3)
_THRESHOLD_ROUNDS = 4
_PULL_RATE_PENALTY = 4.0
"""Macro-F1 given up per unit of pull rate over the budget: enough that the search keeps to
the budget whenever any thresholds can."""


# Column order in which `choose_verdicts` breaks probability ties, as `choose_verdict` does.
_TIE_ORDER = np.array([Verdict.EMERGENCY, Verdict.HOLD, Verdict.LEAN_BUY, Verdict.LEAN_SELL])


def choose_verdicts(probabilities: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """`classifier.choose_verdict` for every row at once: the most probable class among those
    reaching their threshold; ties to EMERGENCY, then HOLD; LEAN_BUY tied with LEAN_SELL is
    HOLD; no eligible class is HOLD."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    eligible = probabilities >= np.asarray(thresholds, dtype=np.float64)
    scores = np.where(eligible, probabilities, -np.inf)[:, _TIE_ORDER]
    verdicts = _TIE_ORDER[np.argmax(scores, axis=1)]
    best = scores.max(axis=1)
    verdicts[np.isneginf(best)] = Verdict.HOLD
    buy, sell = scores[:, 2], scores[:, 3]
    verdicts[(verdicts == Verdict.LEAN_BUY) & (sell == buy)] = Verdict.HOLD
    return verdicts


def tune_thresholds(
    probabilities: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    max_pull_rate: float | None = None,
    hold_ms: np.ndarray | None = None,
    emergency_cooldown_ms: float = 0.0,
    tie_sides: bool = False,
) -> tuple[float, ...]:
    """Per-class thresholds maximising macro-F1 of `choose_verdicts` on (out-of-session)
    frames; with `max_pull_rate`, the share of market time our quotes are pulled is kept at
    or below it where reachable.

    That time: each frame's verdict holds for its `hold_ms` (till the symbol's next book; 1
    each without), a non-HOLD verdict pulls a side for it, and EMERGENCY pulls both for at
    least `emergency_cooldown_ms` (the strategy's cooldown): on a feed that sends a book every
    few milliseconds, a few EMERGENCY frames a second stop all quoting.

    Coordinate ascent over a 0.025 grid from all-zero thresholds (plain argmax); time over the
    budget is charged against macro-F1 so the search moves inside it. `weights` are per-frame
    weights in the confusion matrix and the time. `tie_sides`: LEAN_BUY and LEAN_SELL share
    one threshold (a model that reads both sides alike; apart, they fit the trend of the
    sessions tuned on).
    """
    labels = np.asarray(labels)
    frame_weights = np.ones(labels.shape) if weights is None else np.asarray(weights)
    held = np.ones(labels.shape) if hold_ms is None else np.asarray(hold_ms, np.float64)
    held_weights = frame_weights * held
    cooldown_weights = frame_weights * np.maximum(held, emergency_cooldown_ms)
    total = held_weights.sum()

    def score(thresholds: np.ndarray) -> float:
        predictions = choose_verdicts(probabilities, thresholds)
        macro_f1 = classification_metrics(labels, predictions, frame_weights).macro_f1
        if max_pull_rate is None:
            return macro_f1
        emergency = predictions == Verdict.EMERGENCY
        pulled = held_weights[(predictions != Verdict.HOLD) & ~emergency].sum()
        pulled += cooldown_weights[emergency].sum()
        return macro_f1 - _PULL_RATE_PENALTY * max(0.0, pulled / total - max_pull_rate)

    coordinates = (
        [[Verdict.HOLD], [Verdict.LEAN_BUY, Verdict.LEAN_SELL], [Verdict.EMERGENCY]]
        if tie_sides
        else [[verdict] for verdict in Verdict]
    )
    thresholds = np.zeros(CLASS_COUNT)
    best = score(thresholds)
    for _ in range(_THRESHOLD_ROUNDS):
        improved = False
        for verdicts in coordinates:
            for value in _THRESHOLD_GRID:
                trial = thresholds.copy()
                trial[verdicts] = value
                trial_score = score(trial)
                if trial_score > best + 1e-12:
                    best, thresholds, improved = trial_score, trial, True
        if not improved:
            break
    return tuple(float(value) for value in thresholds)


_MAX_HOLD_MS = 1_000.0
"""A verdict holds till the symbol's next book, for at most this long (a feed gap)."""


def hold_ms(session: Dataset) -> np.ndarray:
    """Per labelled frame of the session, how long its verdict holds: the exchange time to
    the same symbol's next labelled book, at most `_MAX_HOLD_MS` (the last: that)."""
    rows = session.subset(session.labelled)
    held = np.full(len(rows), _MAX_HOLD_MS)
    for symbol in np.unique(rows.symbol_index):
        mine = np.flatnonzero(rows.symbol_index == symbol)
        gaps = np.diff(rows.exchange_ts_ms[mine]).astype(np.float64)
        held[mine[:-1]] = np.minimum(gaps, _MAX_HOLD_MS)
    return held
