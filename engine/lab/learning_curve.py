"""How the shipped candidate's out-of-sample ranking grows with the training data: per fold,
fitted on the first hours of the fold's training market time (`TrainConfig.learning_hours`),
scored on the left-out session or block by per-side AUC, beside the imbalance rule's (raw
top-5 imbalance)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.lab.candidates import CandidateSpec
from engine.lab.dataset import Dataset
from engine.lab.evaluate import ranking_auc, side_scores
from engine.lab.fit import Training, fit_network
from engine.lab.folds import FoldReport
from engine.lab.train_config import TrainConfig

_HOUR_MS = 3_600_000


@dataclass(frozen=True, slots=True)
class LearningPoint:
    """Per-side AUC on the left-out data, mean over the folds, of the candidate trained on
    `hours` of market time (None: all of each fold's) and of the imbalance rule."""

    hours: float | None
    folds: int
    ask_auc: float
    bid_auc: float
    rule_ask_auc: float
    rule_bid_auc: float


def _first_hours(sessions: Sequence[Dataset], hours: float) -> list[Dataset]:
    """The first `hours` of market time of the sessions, taken in order."""
    left = hours * _HOUR_MS
    taken = []
    for session in sessions:
        if left <= 0:
            break
        ts = session.exchange_ts_ms
        start = int(ts.min())
        taken.append(session.subset(ts < start + left))
        left -= int(ts.max()) - start
    return taken


def _market_ms(sessions: Sequence[Dataset]) -> int:
    return sum(int(s.exchange_ts_ms.max() - s.exchange_ts_ms.min()) for s in sessions)


def learning_curve(
    units: Sequence[Dataset],
    folds: FoldReport,
    name: str,
    spec: CandidateSpec,
    epochs: int,
    config: TrainConfig,
    simulated: Sequence[Dataset] = (),
    on_fit: Callable[[], None] | None = None,
) -> tuple[LearningPoint, ...]:
    """The curve for candidate `name` (its `spec`, fitted for `epochs`) over the folds of
    `units` (the sessions or blocks `folds` left out, in order). A point is measured only on
    the folds with at least the training time it asks for, and labels in it; "all" is the
    fold table's own row."""
    points = []
    for hours in config.learning_hours:
        ask, bid, rule_ask, rule_bid = [], [], [], []
        for index, left_out in enumerate(units):
            train = [unit for k, unit in enumerate(units) if k != index]
            if _market_ms(train) < hours * _HOUR_MS:
                continue
            first = [part for part in _first_hours(train, hours) if part.labelled.any()]
            if not first:
                continue  # those hours are all label warm-up
            fitted, _ = fit_network(
                spec,
                Training(tuple(first), tuple(simulated), config.simulation.share),
                None,
                epochs,
                config,
                None,
            )
            if on_fit is not None:
                on_fit()
            test = left_out.subset(left_out.labelled)
            scores = side_scores(fitted.probabilities(np.asarray(test.features)))
            ask.append(ranking_auc(scores[0], test.ask_run))
            bid.append(ranking_auc(scores[1], test.bid_run))
            rule_ask.append(ranking_auc(test.obi5, test.ask_run))
            rule_bid.append(ranking_auc(-test.obi5, test.bid_run))
        if ask:
            points.append(
                LearningPoint(hours, len(ask), *map(_mean, (ask, bid, rule_ask, rule_bid)))
            )
    rows = [fold.row(name) for fold in folds.folds]
    rules = [fold.row("imbalance") for fold in folds.folds]
    points.append(
        LearningPoint(
            None,
            len(rows),
            _mean([row.ask_auc.value for row in rows]),
            _mean([row.bid_auc.value for row in rows]),
            _mean([row.ask_auc.value for row in rules]),
            _mean([row.bid_auc.value for row in rules]),
        )
    )
    return tuple(points)


def _mean(values: Sequence[float]) -> float:
    finite = [value for value in values if not math.isnan(value)]
    return float(np.mean(finite)) if finite else math.nan


def learning_curve_table(points: Sequence[LearningPoint]) -> list[str]:
    """The curve in markdown."""
    lines = [
        "| training hours | folds | ask AUC | imbalance ask AUC | bid AUC | imbalance bid AUC |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {'all' if point.hours is None else f'{point.hours:g}'} | {point.folds} | "
        f"{point.ask_auc:.3f} | {point.rule_ask_auc:.3f} | {point.bid_auc:.3f} | "
        f"{point.rule_bid_auc:.3f} |"
        for point in points
    ]
    return lines
