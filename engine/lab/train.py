"""Training Laya: recordings (a session each) -> candidates validated leave-one-session-out ->
the one that saves the most -> ONNX + model card.

Every candidate is a softmax model over HOLD, LEAN_BUY, LEAN_SELL and EMERGENCY, trained here
in numpy (weighted cross-entropy, Adam with decoupled weight decay) on the per-side labels:

- "rule": a calibrated rule, a linear softmax on the book's imbalance and the recent jumps
  (`RULE_FEATURES`), the signals that carried across venues in the study behind issue 14;
- "compact": the same and the market's activity against its own recent past
  (`COMPACT_FEATURES`);
- "linear": a linear softmax on every feature a model reads (`MODEL_FEATURES`);
- "mlp": 128 -> 32 -> 16 -> 4 on the same features.

All are exported as the `mlp` graph family (a linear model is one Gemm, the features it does
not read have zero weights), so the engine's path and the native kernel are the same whichever
ships. Training adds the mirror image of every frame (`MIRROR_SOURCE`: bids and asks swapped,
moves reversed, LEAN_BUY and LEAN_SELL swapped), so a model reads both sides alike, and weighs
every session the same however many frames its feed sent.

Nothing is chosen on a slice of one session. With several sessions, each candidate's epochs
and thresholds come from its predictions on sessions it was not fitted on (an inner leave-one-
session-out), and the candidates are compared leave-one-session-out (`engine.lab.folds`) and,
with `backtest`, by what their gate saves in the backtest on each left-out session
(`engine.lab.savings`). Two operating points per candidate: thresholds for macro-F1, and
thresholds for the gate (macro-F1 with our quotes pulled at most `gate_pull_rate` of the
market time, an EMERGENCY's cooldown included).

tqdm is the `train` extra and is imported inside the function that uses it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.lab.dataset import Dataset, DatasetConfig, build_dataset
from engine.lab.evaluate import (
    CLASS_COUNT,
    BurstWarningReport,
    burst_warnings,
    classification_metrics,
    started_classifier,
)
from engine.lab.folds import (
    BootstrapConfig,
    FoldReport,
    fold_table,
    labelled_rows,
    leave_one_session_out,
    session_name,
    session_weights,
)
from engine.laya.features import (
    FEATURE_COUNT,
    FEATURE_NAMES,
    FEATURE_SET_VERSION,
    MIRROR_SIGN,
    MIRROR_SOURCE,
    VENUE_SCALED_FEATURES,
)
from engine.laya.model import DEFAULT_MODEL_PATH, LayaModelMetadata, export_mlp
from engine.laya.verdict import CLASS_NAMES, Verdict
from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording

_THRESHOLD_GRID = np.round(np.arange(0.0, 0.96, 0.025), 3)
_THRESHOLD_ROUNDS = 4
_PULL_RATE_PENALTY = 4.0
"""Macro-F1 given up per unit of pull rate over the budget: enough that the search keeps to
the budget whenever any thresholds can."""
DEFAULT_SIM_SEED = 7
MODEL_FEATURES: tuple[str, ...] = tuple(
    name for name in FEATURE_NAMES if name not in VENUE_SCALED_FEATURES
)
"""What a learned candidate reads: every feature but those kept in the venue's units."""
RULE_FEATURES: tuple[str, ...] = (
    "obi_1",
    "obi_5",
    "log_top_size_ratio",
    "obi_5_ewma_5s",
    "jump_sigmas_1s",
    "jump_sigmas_5s",
)
"""The calibrated rule's inputs: the top-of-book imbalance (direction at 1 s comes from the
book) and the recent jumps in sigmas (a move makes another likely)."""
COMPACT_FEATURES: tuple[str, ...] = (
    *RULE_FEATURES,
    "range_1s_sigmas",
    "range_5s_sigmas",
    "log_vol_5s_over_sigma",
    "log_sigma_1s_z",
    "trade_rate_30s_z",
    "trade_intensity_1s",
    "trade_intensity_5s",
    "ms_since_trade_z",
)
"""The rule's inputs and how active the market is against its own recent past: how far it
moves in sigmas and how fast it trades, the scale-free measures that held up across venues."""
# Column order in which `choose_verdicts` breaks probability ties, as `choose_verdict` does.
_TIE_ORDER = np.array([Verdict.EMERGENCY, Verdict.HOLD, Verdict.LEAN_BUY, Verdict.LEAN_SELL])
_MIRROR_LABELS = np.array([Verdict.HOLD, Verdict.LEAN_SELL, Verdict.LEAN_BUY, Verdict.EMERGENCY])


@dataclass(frozen=True, slots=True)
class MlpConfig:
    """A softmax network and how it is fitted; no hidden layers is a linear softmax
    (multinomial logistic regression)."""

    hidden_layers: tuple[int, ...] = (32, 16)
    epochs: int = 40
    batch_size: int = 512
    learning_rate: float = 1e-3
    weight_decay: float = 1.0
    """Decoupled (AdamW) decay per step, relative to the learning rate."""
    patience: int = 5
    """Epochs without a better validation loss before stopping."""
    seed: int = 0

    def __post_init__(self) -> None:
        if any(width < 1 for width in self.hidden_layers):
            raise ValueError(
                f"MlpConfig.hidden_layers must be positive widths, got {self.hidden_layers}"
            )
        for name in ("epochs", "batch_size", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"MlpConfig.{name} must be >= 1, got {getattr(self, name)}")
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"MlpConfig.learning_rate must be > 0, got {self.learning_rate}")
        if not (math.isfinite(self.weight_decay) and self.weight_decay >= 0):
            raise ValueError(f"MlpConfig.weight_decay must be >= 0, got {self.weight_decay}")


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


def class_weights(
    labels: np.ndarray, power: float, weights: np.ndarray | None = None
) -> np.ndarray:
    """Per-class loss weights (N / (K * N_c)) ** power, normalised to mean 1 over frames;
    with `weights`, N and N_c are the frames' weights summed.

    power 1 fully balances the classes; lower powers temper the weight of very rare classes
    (EMERGENCY), whose few frames would otherwise dominate the gradient.
    """
    labels = np.asarray(labels, dtype=np.int64)
    frame_weights = np.ones(labels.shape) if weights is None else np.asarray(weights)
    counts = np.bincount(labels, weights=frame_weights, minlength=CLASS_COUNT)
    present = counts > 0
    result = np.zeros(CLASS_COUNT)
    result[present] = (counts.sum() / (present.sum() * counts[present])) ** power
    return result / np.average(result[labels], weights=frame_weights)


def standardisation(
    features: np.ndarray, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(Weighted) mean and scale (std, 1 where a feature is constant) of the training
    features."""
    mean = np.average(features, axis=0, weights=weights).astype(np.float64)
    scale = np.sqrt(np.average((features - mean) ** 2, axis=0, weights=weights))
    scale[~(scale > 1e-12)] = 1.0
    return mean, scale


@dataclass(frozen=True, slots=True, eq=False)
class MlpFit:
    """A fitted network: (weight [in, out], bias [out]) per layer, ReLU between, softmax
    last; `best_epoch` is the epoch kept."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    best_epoch: int

    def predict_proba(self, standardised: np.ndarray) -> np.ndarray:
        return _forward(self.layers, np.asarray(standardised, dtype=np.float32))[-1]

    @property
    def parameter_count(self) -> int:
        return sum(weight.size + bias.size for weight, bias in self.layers)


def _forward(
    layers: tuple[tuple[np.ndarray, np.ndarray], ...] | list[list[np.ndarray]], x: np.ndarray
) -> list[np.ndarray]:
    """Activations of every layer, the input first and the softmax probabilities last."""
    activations = [x]
    for index, (weight, bias) in enumerate(layers):
        z = activations[-1] @ weight + bias
        if index < len(layers) - 1:
            activations.append(np.maximum(z, 0.0))
        else:
            z = z - z.max(axis=1, keepdims=True)
            exp = np.exp(z)
            activations.append(exp / exp.sum(axis=1, keepdims=True))
    return activations


def _weighted_loss(probabilities: np.ndarray, labels: np.ndarray, weights: np.ndarray) -> float:
    picked = probabilities[np.arange(labels.size), labels]
    return float(-(weights * np.log(np.maximum(picked, 1e-12))).sum() / weights.sum())


def fit_mlp(
    fit_x: np.ndarray,
    fit_y: np.ndarray,
    fit_w: np.ndarray,
    validation: tuple[np.ndarray, np.ndarray, np.ndarray] | None,
    config: MlpConfig,
    on_epoch: Callable[[int, float], None] | None = None,
    classes: int = CLASS_COUNT,
) -> MlpFit:
    """Fit on standardised features with per-frame loss weights and labels 0..classes-1.

    With `validation` (features, labels, weights), keep the epoch with the lowest weighted
    validation loss, stopping after `patience` epochs without one; without, run all
    `config.epochs`. `on_epoch(epoch, loss)` reports progress (the validation loss, else the
    last batch's)."""
    rng = np.random.default_rng(config.seed)
    widths = [fit_x.shape[1], *config.hidden_layers, classes]
    params = [
        [
            (rng.standard_normal((fan_in, fan_out)) * math.sqrt(2.0 / fan_in)).astype(np.float32),
            np.zeros(fan_out, dtype=np.float32),
        ]
        for fan_in, fan_out in itertools.pairwise(widths)
    ]
    moments = [[np.zeros_like(p) for p in layer] for layer in params]
    squares = [[np.zeros_like(p) for p in layer] for layer in params]
    beta1, beta2, epsilon = 0.9, 0.999, 1e-8
    fit_x = np.asarray(fit_x, dtype=np.float32)
    fit_w = np.asarray(fit_w, dtype=np.float32)
    step = 0
    best_loss, best_epoch = math.inf, 0
    best_params = [[p.copy() for p in layer] for layer in params]
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(fit_y.size)
        batch_loss = 0.0
        for start in range(0, order.size, config.batch_size):
            rows = order[start : start + config.batch_size]
            activations = _forward(params, fit_x[rows])
            weights = fit_w[rows]
            batch_loss = _weighted_loss(activations[-1], fit_y[rows], weights)
            delta = activations[-1].copy()
            delta[np.arange(rows.size), fit_y[rows]] -= 1.0
            delta *= (weights / weights.sum())[:, None]
            step += 1
            correction1 = 1.0 - beta1**step
            correction2 = 1.0 - beta2**step
            for index in range(len(params) - 1, -1, -1):
                weight = params[index][0]
                gradients = (activations[index].T @ delta, delta.sum(axis=0))
                if index:
                    delta = (delta @ weight.T) * (activations[index] > 0)
                for k, gradient in enumerate(gradients):
                    moments[index][k] = beta1 * moments[index][k] + (1 - beta1) * gradient
                    squares[index][k] = beta2 * squares[index][k] + (1 - beta2) * gradient**2
                    update = (moments[index][k] / correction1) / (
                        np.sqrt(squares[index][k] / correction2) + epsilon
                    )
                    params[index][k] -= config.learning_rate * update
                weight -= config.learning_rate * config.weight_decay * weight
        if validation is None:
            if on_epoch is not None:
                on_epoch(epoch, batch_loss)
            best_epoch = epoch
            continue
        validation_x, validation_y, validation_w = validation
        loss = _weighted_loss(
            _forward(params, np.asarray(validation_x, np.float32))[-1], validation_y, validation_w
        )
        if on_epoch is not None:
            on_epoch(epoch, loss)
        if loss < best_loss - 1e-6:
            best_loss, best_epoch = loss, epoch
            best_params = [[p.copy() for p in layer] for layer in params]
        elif epoch - best_epoch >= config.patience:
            break
    kept = params if validation is None else best_params
    return MlpFit(tuple((weight, bias) for weight, bias in kept), best_epoch)


def mirrored(
    features: np.ndarray, labels: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frames and their mirror images (`MIRROR_SOURCE`), labels and weights alike."""
    image = np.asarray(features)[:, MIRROR_SOURCE] * MIRROR_SIGN
    return (
        np.concatenate([features, image]),
        np.concatenate([labels, _MIRROR_LABELS[labels]]),
        np.concatenate([weights, weights]),
    )


@dataclass(frozen=True, slots=True)
class CandidateSpec:
    """A candidate model: the features it reads and its network."""

    name: str
    inputs: tuple[str, ...]
    network: MlpConfig

    def __post_init__(self) -> None:
        unknown = [name for name in self.inputs if name not in FEATURE_NAMES]
        if not self.inputs or unknown or len(set(self.inputs)) != len(self.inputs):
            raise ValueError(
                f"candidate {self.name!r} must read distinct features of {FEATURE_SET_VERSION}, "
                f"got {unknown or self.inputs!r}"
            )

    def describe(self) -> str:
        widths = " -> ".join(str(w) for w in (len(self.inputs), *self.network.hidden_layers, 4))
        kind = "linear softmax" if not self.network.hidden_layers else "MLP (ReLU, softmax)"
        return f"{widths} {kind}"


LINEAR = MlpConfig(hidden_layers=(), epochs=20, learning_rate=3e-3, weight_decay=0.1)
CANDIDATES: tuple[CandidateSpec, ...] = (
    CandidateSpec("rule", RULE_FEATURES, LINEAR),
    CandidateSpec("compact", COMPACT_FEATURES, LINEAR),
    CandidateSpec("linear", MODEL_FEATURES, LINEAR),
    CandidateSpec("mlp", MODEL_FEATURES, MlpConfig()),
)
GATE_SUFFIX = " @gate"
"""A candidate at its gate thresholds (quotes pulled at most `gate_pull_rate` of the time)."""


@dataclass(frozen=True, slots=True, eq=False)
class FittedCandidate:
    """A fitted candidate: its network on the standardised `inputs` columns, and thresholds
    for macro-F1 and for the gate; `thresholds` are those in use."""

    spec: CandidateSpec
    network: MlpFit
    inputs: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    f1_thresholds: tuple[float, ...]
    gate_thresholds: tuple[float, ...]
    thresholds: tuple[float, ...]
    epochs: int
    thresholds_from: str
    """Which predictions the thresholds were tuned on (out-of-session, or in-sample)."""

    def probabilities(self, features: np.ndarray) -> np.ndarray:
        columns = np.asarray(features)[:, self.inputs]
        return self.network.predict_proba((columns - self.mean) / self.scale)

    def verdicts(self, features: np.ndarray) -> np.ndarray:
        return choose_verdicts(self.probabilities(features), self.thresholds)

    def at_gate(self) -> FittedCandidate:
        return dataclasses.replace(self, thresholds=self.gate_thresholds)

    def export(self, path: str | os.PathLike[str], metadata: LayaModelMetadata) -> Path:
        """The network as a Laya model reading all features (zero weights on the others)."""
        (first, bias), *rest = self.network.layers
        weight = np.zeros((FEATURE_COUNT, first.shape[1]))
        weight[self.inputs] = first
        mean = np.zeros(FEATURE_COUNT)
        scale = np.ones(FEATURE_COUNT)
        mean[self.inputs] = self.mean
        scale[self.inputs] = self.scale
        return export_mlp(
            path, [(weight, bias), *rest], metadata, input_mean=mean, input_scale=scale
        )


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Simulator data added to every fit (never scored).

    Bursts are denser than in the default market (0.3 a minute) so the informed-burst pattern
    has examples; `share` is the simulated session's total loss weight against one recorded
    session's.
    """

    minutes: float = 0.0
    seed: int = DEFAULT_SIM_SEED
    burst_rate_per_min: float = 2.0
    share: float = 1.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.minutes) and self.minutes >= 0):
            raise ValueError(f"SimulationConfig.minutes must be >= 0, got {self.minutes}")
        if not (math.isfinite(self.share) and self.share > 0):
            raise ValueError(f"SimulationConfig.share must be > 0, got {self.share}")
        if not (math.isfinite(self.burst_rate_per_min) and self.burst_rate_per_min >= 0):
            raise ValueError(
                f"SimulationConfig.burst_rate_per_min must be >= 0, got {self.burst_rate_per_min}"
            )


@dataclass(frozen=True, slots=True)
class TrainConfig:
    """Everything `train` does, with the defaults the shipped model was trained with.

    `candidate` forces the one to ship (a name of `candidates`, with GATE_SUFFIX for its gate
    thresholds); None chooses it: by what the gate saves in the backtest across the folds
    with `backtest`, else by the folds' mean macro-F1. `max_fills_lost`: a gate may lose at
    most this share of the no-gate run's fills on every left-out session to be chosen on
    savings.
    """

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    candidates: tuple[CandidateSpec, ...] = CANDIDATES
    candidate: str | None = None
    class_weight_power: float = 0.5
    gate_pull_rate: float = 0.1
    emergency_cooldown_ms: float = 1_000.0
    """The strategy's EMERGENCY cooldown (`[trading.strategy] emergency_cooldown_ms`), which the
    gate's time budget charges each EMERGENCY verdict."""
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    backtest: bool = False
    max_fills_lost: float = 0.2
    backtest_jobs: int = field(default_factory=lambda: os.cpu_count() or 1)
    burst_check_minutes: float = 0.0
    """Minutes of a fresh default simulated market to measure burst warnings on (0: skip)."""
    burst_check_seed: int = 1001
    latency_frames: int = 2000
    progress: bool = True

    def __post_init__(self) -> None:
        names = [spec.name for spec in self.candidates]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"TrainConfig.candidates must have distinct names, got {names}")
        if self.candidate is not None and self.candidate.removesuffix(GATE_SUFFIX) not in names:
            raise ValueError(
                f"TrainConfig.candidate {self.candidate!r} is none of {', '.join(names)} "
                f"(add {GATE_SUFFIX!r} for its gate thresholds)"
            )
        if not (math.isfinite(self.class_weight_power) and 0 <= self.class_weight_power <= 1):
            raise ValueError(
                f"TrainConfig.class_weight_power must be in [0, 1], got {self.class_weight_power}"
            )
        for name in ("gate_pull_rate", "max_fills_lost"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"TrainConfig.{name} must be in (0, 1], got {getattr(self, name)}")
        if not (math.isfinite(self.burst_check_minutes) and self.burst_check_minutes >= 0):
            raise ValueError(
                f"TrainConfig.burst_check_minutes must be >= 0, got {self.burst_check_minutes}"
            )
        if self.latency_frames < 1 or self.backtest_jobs < 1:
            raise ValueError("TrainConfig.latency_frames and backtest_jobs must be >= 1")

    def spec(self, name: str) -> CandidateSpec:
        return next(spec for spec in self.candidates if spec.name == name.removesuffix(GATE_SUFFIX))


def _progress_bar(enabled: bool, **options):
    """A tqdm bar (the `train` extra), or a stand-in that ignores updates."""
    if not enabled:
        return _NoProgress()
    from tqdm import tqdm

    return tqdm(file=sys.stderr, dynamic_ncols=True, **options)


class _NoProgress:
    """Stands in for a tqdm bar when progress is off."""

    def update(self, count: int = 1) -> None:
        return None

    def set_postfix_str(self, text: str) -> None:
        return None

    def set_description_str(self, text: str) -> None:
        return None

    def close(self) -> None:
        return None


@dataclass(frozen=True, slots=True, eq=False)
class _Training:
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


def _fit_network(
    spec: CandidateSpec,
    training: _Training,
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
            inner, predicted = _fit_network(
                spec,
                _Training(others, tuple(simulated), share),
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
    fitted, _ = _fit_network(
        spec,
        _Training(tuple(recorded), tuple(simulated), share),
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


def _candidate_fitter(
    config: TrainConfig, bar
) -> Callable[[Sequence[Dataset]], dict[str, FittedCandidate]]:
    """What each fold fits: every candidate at both operating points."""

    def fit(train_sessions: Sequence[Dataset]) -> dict[str, FittedCandidate]:
        recorded = [session for session in train_sessions if not _is_simulated(session)]
        simulated = [session for session in train_sessions if _is_simulated(session)]
        fitted = {}
        for spec in config.candidates:
            bar.set_description_str(f"fold: {spec.name}")
            candidate = fit_candidate(spec, recorded, config, simulated, lambda *_: bar.update())
            fitted[spec.name] = candidate
            fitted[spec.name + GATE_SUFFIX] = candidate.at_gate()
        return fitted

    return fit


_SIMULATED_PREFIX = "simulated-"


def _is_simulated(session: Dataset) -> bool:
    return session_name(session).startswith(_SIMULATED_PREFIX)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """One training recording as the model card lists it."""

    name: str
    simulated: bool
    symbols: tuple[str, ...]
    frames: int
    labelled: int
    minutes: float
    class_counts: dict[str, int]
    problem: str | None = None
    """What was wrong with the recording (cut short, malformed lines); None: nothing."""


def _summary(session: Dataset) -> SessionSummary:
    span = session.exchange_ts_ms.max() - session.exchange_ts_ms.min() if len(session) else 0
    return SessionSummary(
        name=session_name(session),
        simulated=_is_simulated(session),
        symbols=session.recording_symbols[0],
        frames=len(session),
        labelled=int(session.labelled.sum()),
        minutes=round(float(span) / 60_000, 2),
        class_counts=session.class_counts(),
        problem=session.recording_problems[0],
    )


@dataclass(frozen=True, slots=True)
class LatencySummary:
    """Per-frame `LayaClassifier.infer` time of the shipped model on one feature row."""

    provider: str
    frames: int
    p50_us: float
    p99_us: float


@dataclass(frozen=True, slots=True, eq=False)
class TrainReport:
    """What `train` produced and measured; `model_card` renders it."""

    model_path: Path
    card_path: Path
    model_bytes: int
    model_sha256: str
    sessions: tuple[SessionSummary, ...]
    config: TrainConfig
    folds: FoldReport | None
    savings: tuple | None
    """Per left-out session, the backtest of each fold's candidates (`engine.lab.savings`)."""
    choice: str
    choice_reason: str
    fitted: FittedCandidate
    latency: LatencySummary
    bursts: BurstWarningReport | None
    metadata: LayaModelMetadata


def _measure_latency(model_path: Path, features: np.ndarray, frames: int) -> LatencySummary:
    classifier = started_classifier(model_path)
    try:
        rows = np.ascontiguousarray(features[:frames], dtype=np.float32)
        buffer = np.zeros((1, FEATURE_COUNT), dtype=np.float32)
        samples = np.empty(rows.shape[0], dtype=np.int64)
        for index in range(rows.shape[0]):
            buffer[0] = rows[index]
            started = time.perf_counter_ns()
            classifier.infer(buffer)
            samples[index] = time.perf_counter_ns() - started
        provider = classifier.provider or "unknown"
    finally:
        classifier.stop()
    return LatencySummary(
        provider=provider,
        frames=int(samples.size),
        p50_us=float(np.percentile(samples, 50)) / 1000.0,
        p99_us=float(np.percentile(samples, 99)) / 1000.0,
    )


def choose_candidate(
    config: TrainConfig, folds: FoldReport | None, savings: tuple | None
) -> tuple[str, str]:
    """The candidate to ship and why (see `TrainConfig`)."""
    if config.candidate is not None:
        return config.candidate, "chosen by the configuration (TrainConfig.candidate)"
    names = [name for spec in config.candidates for name in (spec.name, spec.name + GATE_SUFFIX)]
    if savings:
        from engine.lab.savings import rank_by_savings

        return rank_by_savings(savings, names, config.max_fills_lost)
    if folds is None:
        first = config.candidates[0].name
        return first, (
            f"one recorded session: nothing to compare out of session, so the first candidate "
            f"({first}) ships at its macro-F1 thresholds"
        )
    means = {
        name: float(np.mean([fold.row(name).macro_f1.value for fold in folds.folds]))
        for spec in config.candidates
        for name in (spec.name,)
    }
    best = max(means, key=means.get)
    return best, (
        f"the highest macro-F1 over the left-out sessions, {means[best]:.3f} on average "
        "(no backtest asked for)"
    )


def train(
    recordings: Sequence[str | os.PathLike[str]],
    out_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    config: TrainConfig | None = None,
) -> TrainReport:
    """Train a Laya model on recordings (a session each, plus simulator data), validate the
    candidates leave-one-session-out, ship one, write its card next to it (suffix `.md`)."""
    config = config or TrainConfig()
    simulation = config.simulation
    if not recordings:
        raise ValueError("train needs at least one recording")
    out = Path(out_path)
    paths = [Path(path) for path in recordings]
    bar = _progress_bar(
        config.progress,
        desc="replaying recordings",
        unit="B",
        unit_scale=True,
        total=sum(path.stat().st_size for path in paths),
    )
    try:
        sessions = [build_dataset([path], config.dataset, bar.update) for path in paths]
    finally:
        bar.close()
    simulated: list[Dataset] = []
    if simulation.minutes > 0:
        with tempfile.TemporaryDirectory(prefix="laya-train-") as folder:
            market = MarketGeneratorConfig(burst_rate_per_min=simulation.burst_rate_per_min)
            name = f"{_SIMULATED_PREFIX}seed{simulation.seed}-{simulation.minutes:g}min.gz"
            recording = simulate_recording(
                Path(folder) / name, simulation.minutes, simulation.seed, market=market
            )
            simulated.append(build_dataset([recording.path], config.dataset))
    for session in sessions:
        if not session.labelled.any():
            raise ValueError(
                f"{session_name(session)} has no labelled frames: shorter than the label "
                f"warm-up ({config.dataset.labels.min_sigma_samples} returns) and Laya's "
                f"({config.dataset.warmup_ms / 1000:g} s)"
            )
    folds = savings = None
    if len(sessions) >= 2:
        bar = _progress_bar(config.progress, desc="folds", unit=" epochs")
        try:
            folds = leave_one_session_out(
                sessions,
                _candidate_fitter(config, bar),
                config.bootstrap,
                extra_training=simulated,
                on_fold=lambda name: bar.set_postfix_str(f"leaving out {name}"),
            )
        finally:
            bar.close()
        if config.backtest:
            from engine.lab.savings import fold_savings

            savings = fold_savings(
                folds,
                {
                    session_name(session): path
                    for session, path in zip(sessions, paths, strict=True)
                },
                jobs=config.backtest_jobs,
                progress=config.progress,
            )
    choice, reason = choose_candidate(config, folds, savings)
    bar = _progress_bar(config.progress, desc=f"training {choice}", unit=" epochs")
    try:
        fitted = fit_candidate(
            config.spec(choice), sessions, config, simulated, lambda *_: bar.update()
        )
    finally:
        bar.close()
    if choice.endswith(GATE_SUFFIX):
        fitted = fitted.at_gate()
    summaries = tuple(_summary(session) for session in (*sessions, *simulated))
    metadata = LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=config.dataset.labels.as_metadata(),
        thresholds=fitted.thresholds,
        training_summary=_training_summary(config, summaries, fitted, choice, folds),
        model_family="mlp",
    )
    fitted.export(out, metadata)
    held = labelled_rows(sessions)
    latency = _measure_latency(out, np.asarray(held.features), config.latency_frames)
    bursts = None
    if config.burst_check_minutes > 0:
        bursts = burst_warnings(out, config.burst_check_minutes, config.burst_check_seed)
    report = TrainReport(
        model_path=out,
        card_path=out.with_suffix(".md"),
        model_bytes=out.stat().st_size,
        model_sha256=hashlib.sha256(out.read_bytes()).hexdigest(),
        sessions=summaries,
        config=config,
        folds=folds,
        savings=savings,
        choice=choice,
        choice_reason=reason,
        fitted=fitted,
        latency=latency,
        bursts=bursts,
        metadata=metadata,
    )
    report.card_path.write_text(model_card(report))
    return report


def _training_summary(
    config: TrainConfig,
    summaries: tuple[SessionSummary, ...],
    fitted: FittedCandidate,
    choice: str,
    folds: FoldReport | None,
) -> dict[str, object]:
    """The model metadata's free-form training summary."""
    return {
        "recordings": [
            {
                "name": item.name,
                "simulated": item.simulated,
                "symbols": list(item.symbols),
                "frames": item.frames,
                "labelled": item.labelled,
                "minutes": item.minutes,
            }
            for item in summaries
        ],
        "candidate": choice,
        "inputs": list(fitted.spec.inputs),
        "architecture": [len(fitted.spec.inputs), *fitted.spec.network.hidden_layers, 4],
        "epochs": fitted.epochs,
        "thresholds_from": fitted.thresholds_from,
        "f1_thresholds": list(fitted.f1_thresholds),
        "gate_thresholds": list(fitted.gate_thresholds),
        "gate_pull_rate": config.gate_pull_rate,
        "class_weight_power": config.class_weight_power,
        "mirror_augmented": True,
        "warmup_ms": config.dataset.warmup_ms,
        "folds": None
        if folds is None
        else {
            fold.left_out: {
                row.name: {
                    "macro_f1": row.macro_f1.value,
                    "ask_auc": row.ask_auc.value,
                    "bid_auc": row.bid_auc.value,
                }
                for row in fold.rows
            }
            for fold in folds.folds
        },
    }


def _targets(report: TrainReport) -> list[str]:
    """The issue's targets for the shipped candidate, each met or missed by how much."""
    folds = report.folds
    if folds is None:
        return ["- One recorded session: no left-out session to measure the targets on."]
    name = report.choice
    lines = []
    for fold in folds.folds:
        row = fold.row(name)
        rule = fold.row("imbalance + jump")
        margin = row.macro_f1.value - rule.macro_f1.value
        lines.append(
            f"- {fold.left_out}: macro-F1 {row.macro_f1.text()} against the imbalance + jump "
            f"rule's {rule.macro_f1.value:.3f}: {margin:+.3f} (target +0.030: "
            f"{'met' if margin >= 0.03 else f'short by {0.03 - margin:.3f}'}); ask AUC "
            f"{row.ask_auc.text()}, bid AUC {row.bid_auc.text()} (target 0.70: "
            + ", ".join(
                f"{side} {'met' if value >= 0.7 else f'short by {0.7 - value:.3f}'}"
                for side, value in (("ask", row.ask_auc.value), ("bid", row.bid_auc.value))
            )
            + ")."
        )
    if report.savings:
        from engine.lab.savings import savings_targets

        lines += savings_targets(report.savings, name, report.config.max_fills_lost)
    return lines


def model_card(report: TrainReport) -> str:
    """The markdown model card written next to the model."""
    config = report.config
    labels = config.dataset.labels
    fitted = report.fitted
    lines = [
        f"# Laya model card: {report.model_path.name}",
        "",
        f"- Feature set `{report.metadata.feature_set_version}` ({FEATURE_COUNT} features, "
        f"`engine/laya/features.py`), classes {', '.join(CLASS_NAMES)}.",
        f"- Candidate `{report.choice}`: {fitted.spec.describe()} on "
        f"{len(fitted.spec.inputs)} features, {fitted.network.parameter_count} parameters, "
        f"{fitted.epochs} epochs; {report.model_bytes:,} bytes, sha256 "
        f"`{report.model_sha256[:16]}...`, created {report.metadata.created_utc}.",
        f"- Thresholds (probability each class must reach, in class order): "
        f"{', '.join(f'{value:.3f}' for value in fitted.thresholds)}, tuned on "
        f"{fitted.thresholds_from}.",
        f"- Inference: `LayaClassifier.infer` on one row, {report.latency.provider}, "
        f"p50 {report.latency.p50_us:.1f} us, p99 {report.latency.p99_us:.1f} us over "
        f"{report.latency.frames} frames.",
        "",
        "## Data",
        "",
        "| recording | kind | symbols | books15 frames | labelled | minutes | "
        + " | ".join(CLASS_NAMES)
        + " |",
        "|---|---|---|---|---|---|" + "---|" * len(CLASS_NAMES),
    ]
    lines += [
        f"| {item.name} | {'simulated' if item.simulated else 'recorded'} | "
        f"{', '.join(item.symbols)} | {item.frames} | {item.labelled} | {item.minutes:g} | "
        + " | ".join(str(item.class_counts[name]) for name in CLASS_NAMES)
        + " |"
        for item in report.sessions
    ]
    problems = [f"- Reading: {item.problem}" for item in report.sessions if item.problem]
    lines += ["", *problems] if problems else []
    lines += [
        "",
        "## Labels",
        "",
        f"Labels (`engine/lab/labels.py`, scheme {labels.scheme}): horizon {labels.horizon_ms} "
        f"ms; the ask is run over when the mid rises {labels.lean_sigma:g} sigma within it, "
        f"the bid when it falls as far; EMERGENCY when both are or a move reaches "
        f"{labels.emergency_sigma:g} sigma, else LEAN_BUY (ask) or LEAN_SELL (bid). sigma: the "
        f"mean absolute 1 s return over the trailing {labels.sigma_window_ms / 1000:g} s x "
        f"sqrt(pi/2), never below the same over {labels.sigma_floor_window_ms / 1000:g} s. "
        f"No label in a symbol's first {config.dataset.warmup_ms / 1000:g} s (Laya's warm-up).",
        "",
        "## Training",
        "",
        "Every candidate: weighted softmax cross-entropy (class weights (N / (K N_c))^"
        f"{config.class_weight_power:g}, every recorded session weighing the same), Adam with "
        "decoupled weight decay, the mirror image of every frame added (bids and asks swapped, "
        "moves reversed). Epochs and thresholds come from an inner leave-one-session-out (fit "
        "on all training sessions but one, early stopping and predictions on that one), "
        "LEAN_BUY and LEAN_SELL sharing one threshold; two operating points: macro-F1, and "
        f"`{GATE_SUFFIX.strip()}` (macro-F1 with our quotes "
        f"pulled at most {config.gate_pull_rate:.0%} of the market time, each EMERGENCY "
        f"counting its {config.emergency_cooldown_ms:g} ms cooldown).",
        "",
        "| candidate | network | reads |",
        "|---|---|---|",
    ]
    lines += [
        f"| {spec.name} | {spec.describe()} | "
        + (
            ", ".join(f"`{name}`" for name in spec.inputs)
            if len(spec.inputs) < 20
            else f"{len(spec.inputs)} features: all but "
            + ", ".join(f"`{name}`" for name in VENUE_SCALED_FEATURES)
        )
        + " |"
        for spec in config.candidates
    ]
    lines += ["", "## Leave-one-session-out", ""]
    if report.folds is None:
        lines += ["One recorded session: no fold to leave out.", ""]
    else:
        bootstrap = report.folds.bootstrap
        lines += [
            "Each candidate fitted on the other sessions, scored on the left-out one, against "
            "the baselines fitted on the same sessions: majority, the top-5 imbalance rule, and "
            "imbalance + jump (EMERGENCY when `jump_sigmas_5s` reaches j). Per-side AUC: how "
            "P(LEAN_BUY) + P(EMERGENCY) ranks the frames whose ask was run over, and the same "
            "for the bid (for the rules: the imbalance, +2 where the jump rule says EMERGENCY). "
            f"Intervals: {bootstrap.level:.0%} block bootstrap ({bootstrap.resamples} draws of "
            f"{bootstrap.block_ms / 1000:g} s blocks). Pulls: the share of frames whose verdict "
            "pulls a side.",
            "",
            *fold_table(report.folds),
            "",
        ]
        for fold in report.folds.folds:
            parameters = fold.baseline_parameters
            lines.append(
                f"- {fold.left_out}: {fold.frames} labelled frames "
                f"({', '.join(f'{k} {v}' for k, v in fold.class_counts.items())}); baselines: "
                f"majority {CLASS_NAMES[int(parameters['majority'])]}, imbalance tau "
                f"{parameters['imbalance_tau']:.3f}, rule tau {parameters['rule_tau']:.3f} and "
                f"j {parameters['rule_jump_sigmas']:.2f} sigmas."
            )
        lines.append("")
    if report.savings:
        from engine.lab.savings import savings_section

        lines += savings_section(report.savings, report.config.max_fills_lost)
    lines += [
        "## Choice",
        "",
        f"`{report.choice}` ships: {report.choice_reason}.",
        "",
        "## Targets",
        "",
        *_targets(report),
        "",
    ]
    if report.bursts is not None:
        bursts = report.bursts
        lead = bursts.as_dict()["median_lead_ms"]
        lines += [
            "## Simulator: warnings ahead of informed bursts",
            "",
            f"A fresh default simulated market (seed {bursts.seed}, {bursts.minutes:g} minutes, "
            f"not used in training): {bursts.caught} of {bursts.bursts} bursts "
            f"({bursts.fraction_caught:.0%}) had an EMERGENCY verdict on the burst's symbol "
            "inside the lead window (burst start to jump start)"
            + (f", a median {lead:.0f} ms before the jump" if lead is not None else "")
            + f". EMERGENCY verdicts away from any burst: {bursts.false_alarms_per_minute:.2f} "
            "a minute.",
            "",
        ]
    recorded = [item for item in report.sessions if not item.simulated]
    lines += [
        "## Limits",
        "",
        f"- {sum(item.minutes for item in recorded):g} minutes of recorded data in "
        f"{len(recorded)} session(s): moves cluster, so each fold holds few distinct events and "
        "its intervals are wide.",
        "- Retrain on recordings of the market the engine trades, several days of them, with "
        "`hft-console train` (see `docs/laya.md`).",
        "",
    ]
    return "\n".join(lines)


def format_report(report: TrainReport) -> str:
    """A short text summary for the terminal."""
    lines = [
        f"model: {report.model_path} ({report.model_bytes:,} bytes), card: {report.card_path}",
        f"shipped: {report.choice} ({report.choice_reason})",
        f"inference p50 {report.latency.p50_us:.1f} us ({report.latency.provider})",
    ]
    if report.folds is not None:
        for fold in report.folds.folds:
            row, rule = fold.row(report.choice), fold.row("imbalance + jump")
            lines.append(
                f"left out {fold.left_out}: macro-F1 {row.macro_f1.value:.3f} (imbalance + jump "
                f"{rule.macro_f1.value:.3f}), ask AUC {row.ask_auc.value:.3f}, bid AUC "
                f"{row.bid_auc.value:.3f}"
            )
    lines += [f"recording: {item.problem}" for item in report.sessions if item.problem]
    return "\n".join(lines)


def train_command(
    recordings: Sequence[str],
    out_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    *,
    symbols: tuple[str, ...] | None = None,
    sim_minutes: float = 0.0,
    seed: int = DEFAULT_SIM_SEED,
    backtest: bool = False,
) -> str:
    """What `hft-console train` runs: train with the defaults, return the summary to print."""
    config = TrainConfig(
        dataset=DatasetConfig(symbols=symbols),
        simulation=SimulationConfig(minutes=sim_minutes, seed=seed),
        backtest=backtest,
    )
    return format_report(train(recordings, out_path, config))


SHARED_REPLAY = Path(__file__).resolve().parents[3] / "shared" / "data" / "replay"
SHIPPED_RECORDINGS = tuple(
    SHARED_REPLAY / name
    for name in (
        "spot_btc_eth_20240808.bitget.gz",
        "cm_btc_eth_20240808.bitget.gz",
        "usdm_btc_20230405.bitget.gz",
    )
)
"""The real sessions the shipped model was trained on (beside the project, not in it)."""


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engine.lab.train`: reproduce the shipped model (or train on other data)."""
    parser = argparse.ArgumentParser(
        prog="python -m engine.lab.train", description="Train a Laya model."
    )
    parser.add_argument(
        "--replay", nargs="+", default=[os.fspath(path) for path in SHIPPED_RECORDINGS]
    )
    parser.add_argument("--out", default=os.fspath(DEFAULT_MODEL_PATH), metavar="MODEL.onnx")
    parser.add_argument("--candidate", help="ship this candidate instead of choosing one")
    parser.add_argument("--no-backtest", action="store_true", help="choose without backtests")
    parser.add_argument("--json", action="store_true", help="print the folds as JSON")
    args = parser.parse_args(argv)
    config = TrainConfig(candidate=args.candidate, backtest=not args.no_backtest)
    report = train(args.replay, args.out, config)
    if args.json:
        print(json.dumps(report.folds.as_dict() if report.folds else None))
    else:
        print(format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
