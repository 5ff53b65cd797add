"""Fitting one candidate: epochs and thresholds chosen on sessions it was not fitted on (an
inner leave-one-session-out), then the final fit on all of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from engine.lab.candidates import CandidateSpec, FittedCandidate, mirrored
from engine.lab.dataset import Dataset
from engine.lab.evaluate import CLASS_COUNT
from engine.lab.folds import labelled_rows, session_weights
from engine.lab.mlp import class_weights, fit_mlp, standardisation
from engine.lab.thresholds import hold_ms, tune_thresholds
from engine.lab.train_config import TrainConfig
from engine.laya.features import FEATURE_NAMES


@dataclass(frozen=True, slots=True, eq=False)
class Training:
    """The sessions a fit learns from: recorded ones weigh 1 each, simulated ones `share`."""

    recorded: tuple[Dataset, ...]
    simulated: tuple[Dataset, ...]
    share: float

    def rows(self) -> tuple[Dataset, np.ndarray]:
        sessions = (*self.recorded, *self.simulated)
        weights = session_weights(sessions)
        cut = sum(int(session.labelled.sum()) for session in self.recorded)
        weights[cut:] *= self.share
        return labelled_rows(sessions), weights


def fit_network(
    spec: CandidateSpec,
    training: Training,
    validation: Dataset | None,
    epochs: int,
    config: TrainConfig,
    on_epoch: Callable[[int, float], None] | None,
) -> tuple[FittedCandidate, np.ndarray | None]:
    """The spec fitted on `training` (mirror images added); with a `validation` session, early
    stopping on it and its labelled frames' probabilities. Thresholds are left at zero."""
    rows, weights = training.rows()
    features, labels, weights = mirrored(rows.features, rows.labels.astype(np.int64), weights)
    inputs = np.array([FEATURE_NAMES.index(name) for name in spec.inputs])
    columns = features[:, inputs].astype(np.float64)
    mean, scale = standardisation(columns, weights)
    per_class = class_weights(labels, config.class_weight_power, weights)
    checked = None
    if validation is not None:
        held = validation.subset(validation.labelled)
        held_labels = held.labels.astype(np.int64)
        checked = (
            ((np.asarray(held.features)[:, inputs] - mean) / scale).astype(np.float32),
            held_labels,
            per_class[held_labels],
        )
    network = fit_mlp(
        ((columns - mean) / scale).astype(np.float32),
        labels,
        per_class[labels] * weights / weights.mean(),
        checked,
        dataclasses.replace(spec.network, epochs=epochs),
        on_epoch,
    )
    zeros = (0.0,) * CLASS_COUNT
    fitted = FittedCandidate(
        spec, network, inputs, mean, scale, zeros, zeros, zeros, network.best_epoch, ""
    )
    probabilities = None if checked is None else network.predict_proba(checked[0])
    return fitted, probabilities


def fit_candidate(
    spec: CandidateSpec,
    recorded: Sequence[Dataset],
    config: TrainConfig,
    simulated: Sequence[Dataset] = (),
    on_epoch: Callable[[int, float], None] | None = None,
) -> FittedCandidate:
    """Fit `spec` on the sessions, with epochs and thresholds chosen out of session.

    With two or more recorded sessions: fitted on all but one, early-stopped on the one left
    out, for each; those left-out predictions (every session weighing the same) tune both
    operating points, and the mean best epoch is how long the final fit on all of them runs.
    With one, the thresholds are tuned on its own (in-sample) predictions after
    `spec.network.epochs` epochs.
    """
    share = config.simulation.share
    if len(recorded) >= 2:
        probabilities, labels, weights, held, epochs = [], [], [], [], []
        for index, session in enumerate(recorded):
            others = tuple(s for k, s in enumerate(recorded) if k != index)
            inner, predicted = fit_network(
                spec,
                Training(others, tuple(simulated), share),
                session,
                spec.network.epochs,
                config,
                on_epoch,
            )
            probabilities.append(predicted)
            labels.append(session.labels[session.labelled].astype(np.int64))
            weights.append(session_weights([session]))
            held.append(hold_ms(session))
            epochs.append(inner.epochs)
        final_epochs = max(1, round(float(np.mean(epochs))))
        thresholds_from = "out-of-session predictions (inner leave-one-session-out)"
    else:
        final_epochs = spec.network.epochs
        thresholds_from = "in-sample predictions (one recorded session)"
    fitted, _ = fit_network(
        spec,
        Training(tuple(recorded), tuple(simulated), share),
        None,
        final_epochs,
        config,
        on_epoch,
    )
    if len(recorded) < 2:
        rows = labelled_rows(recorded)
        probabilities = [fitted.probabilities(rows.features)]
        labels = [rows.labels.astype(np.int64)]
        weights = [session_weights(recorded)]
        held = [hold_ms(recorded[0])]
    stacked, truth, frame_weights, frame_hold = (
        np.concatenate(part) for part in (probabilities, labels, weights, held)
    )
    f1 = tune_thresholds(stacked, truth, frame_weights, tie_sides=True)
    gate = tune_thresholds(
        stacked,
        truth,
        frame_weights,
        config.gate_pull_rate,
        frame_hold,
        config.emergency_cooldown_ms,
        tie_sides=True,
    )
    return dataclasses.replace(
        fitted,
        f1_thresholds=f1,
        gate_thresholds=gate,
        thresholds=f1,
        thresholds_from=thresholds_from,
    )
