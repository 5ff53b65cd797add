"""How well scores rank the sides that were run over: the lab's evaluation and Laya's live
scorecard (engine/laya/scorecard.py) use these same two functions."""

from __future__ import annotations

import math

import numpy as np

from engine.laya.verdict import Verdict


def ranking_auc(scores: np.ndarray, positives: np.ndarray) -> float:
    """ROC AUC of `scores` for the `positives` mask (ties count half); NaN without both kinds.

    Threshold-free, so it tells whether a class probability ranks that class's frames above
    the others at all, which F1 at one threshold cannot on a handful of frames.
    """
    scores = np.asarray(scores, dtype=np.float64)
    positives = np.asarray(positives, dtype=bool)
    positive_count = int(positives.sum())
    negative_count = positives.size - positive_count
    if not positive_count or not negative_count:
        return math.nan
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    average_rank = np.cumsum(counts) - (counts - 1) / 2.0  # 1-based, ties share the mean rank
    rank_sum = average_rank[inverse][positives].sum()
    return float(
        (rank_sum - positive_count * (positive_count + 1) / 2.0) / (positive_count * negative_count)
    )


def side_scores(probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The probability that a verdict pulls the ask (LEAN_BUY or EMERGENCY), and the bid."""
    emergency = probabilities[:, Verdict.EMERGENCY]
    return (
        probabilities[:, Verdict.LEAN_BUY] + emergency,
        probabilities[:, Verdict.LEAN_SELL] + emergency,
    )
