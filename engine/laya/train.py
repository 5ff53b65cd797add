"""Training Laya: recordings -> dataset -> time split -> small model -> ONNX + model card.

The model is two small MLPs trained here in numpy (weighted softmax cross-entropy, Adam, early
stopping on the validation slice): an EMERGENCY head that reads only volatility and activity
features (`EMERGENCY_FEATURES`), and a main MLP over all features for HOLD / LEAN_BUY /
LEAN_SELL given no EMERGENCY. Its exact graph is what `export_mlp` writes and the runtime needs
nothing beyond onnxruntime. Gradient-boosted trees (scikit-learn's
`HistGradientBoostingClassifier`) are trained on the same split as a measured alternative; the
MLPs ship unless the trees are clearly better (see `TrainConfig.tree_margin`).

scikit-learn and tqdm are the `train` extra and are imported inside the functions that use them.
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

from engine.laya.dataset import (
    Dataset,
    DatasetConfig,
    TimeSplit,
    TimeSplitConfig,
    build_dataset,
    simulate_recording,
    split_by_time,
)
from engine.laya.evaluate import (
    CLASS_COUNT,
    BurstWarningReport,
    ClassificationMetrics,
    EvalConfig,
    EvalReport,
    burst_warnings,
    classification_metrics,
    evaluate_dataset,
    ranking_auc,
    started_classifier,
)
from engine.laya.features import FEATURE_COUNT, FEATURE_NAMES, FEATURE_SET_VERSION
from engine.laya.model import DEFAULT_MODEL_PATH, EmergencyHead, LayaModelMetadata, export_mlp
from engine.laya.verdict import CLASS_NAMES, Verdict
from engine.sim.market import MarketGeneratorConfig

_THRESHOLD_GRID = np.round(np.arange(0.0, 0.96, 0.025), 3)
_THRESHOLD_ROUNDS = 4
_EMERGENCY_RECALL_PENALTY = 2.0
"""Macro-F1 given up per unit of EMERGENCY recall short of the minimum: large enough that the
search meets the minimum whenever any thresholds can."""
DEFAULT_SIM_SEED = 7
EMERGENCY_FEATURES: tuple[str, ...] = (
    # Moves in the labels' own sigma (volatility clustering).
    "log_sigma_1s_bps",
    "range_1s_sigmas",
    "range_5s_sigmas",
    "return_1s_sigmas",
    "log_vol_5s_over_sigma",
    "jump_sigmas_1s",
    "jump_sigmas_5s",
    "jump_rate_30s",
    "log_ms_since_jump",
    "other_jump_sigmas_1s",
    # Realized volatility, returns and ranges in bps.
    "realized_vol_5s_bps",
    "realized_vol_60s_bps",
    "log_vol_ratio",
    "return_1s_z",
    "return_5s_z",
    "range_1s_bps",
    "range_5s_bps",
    "drawdown_5s_bps",
    "runup_5s_bps",
    "mid_change_rate_1s",
    # Trading activity.
    "trade_intensity_1s",
    "trade_intensity_5s",
    "log_trade_rate_30s",
    "log_ms_since_trade",
    "log_trades_since_book",
)
"""What the EMERGENCY head reads: volatility and activity, no book shape. Given all 128
features, a model ranks the recorded training part's EMERGENCY frames almost perfectly (AUC
0.9) and later ones at chance (0.46 to 0.53): it memorises the few recorded events by their
book shapes. The choice between subsets is measured in `docs/laya.md`."""
# Column order in which `choose_verdicts` breaks probability ties, as `choose_verdict` does.
_TIE_ORDER = np.array([Verdict.EMERGENCY, Verdict.HOLD, Verdict.LEAN_BUY, Verdict.LEAN_SELL])


@dataclass(frozen=True, slots=True)
class MlpConfig:
    """The MLP and how it is fitted."""

    hidden_layers: tuple[int, ...] = (32, 16)
    epochs: int = 60
    batch_size: int = 256
    learning_rate: float = 5e-4
    weight_decay: float = 1.0
    """Decoupled (AdamW) decay per step, relative to the learning rate."""
    patience: int = 8
    """Epochs without a better validation loss before stopping."""
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.hidden_layers or any(width < 1 for width in self.hidden_layers):
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
    min_emergency_recall: float,
    weights: np.ndarray | None = None,
    groups: np.ndarray | None = None,
) -> tuple[float, ...]:
    """Per-class thresholds maximising macro-F1 of `choose_verdicts` on (validation) frames,
    while keeping EMERGENCY recall at `min_emergency_recall` or above where reachable, within
    each group of frames given by `groups` (e.g. recorded and simulated data).

    Coordinate ascent over a 0.025 grid from all-zero thresholds (plain argmax); each group's
    shortfall in EMERGENCY recall is charged against macro-F1 so the search moves towards the
    minimum. `weights` are per-frame weights in the confusion matrix.
    """
    labels = np.asarray(labels)
    group_of = np.zeros(labels.shape, dtype=np.int64) if groups is None else np.asarray(groups)
    emergencies = [
        (labels == Verdict.EMERGENCY) & (group_of == group) for group in np.unique(group_of)
    ]
    emergencies = [rows for rows in emergencies if rows.any()]

    def score(thresholds: np.ndarray) -> float:
        predictions = choose_verdicts(probabilities, thresholds)
        metrics = classification_metrics(labels, predictions, weights)
        shortfall = sum(
            max(0.0, min_emergency_recall - np.mean(predictions[rows] == Verdict.EMERGENCY))
            for rows in emergencies
        )
        return metrics.macro_f1 - _EMERGENCY_RECALL_PENALTY * shortfall

    thresholds = np.zeros(CLASS_COUNT)
    best = score(thresholds)
    for _ in range(_THRESHOLD_ROUNDS):
        improved = False
        for verdict in Verdict:
            for value in _THRESHOLD_GRID:
                trial = thresholds.copy()
                trial[verdict] = value
                trial_score = score(trial)
                if trial_score > best + 1e-12:
                    best, thresholds, improved = trial_score, trial, True
        if not improved:
            break
    return tuple(float(value) for value in thresholds)


def class_weights(labels: np.ndarray, power: float) -> np.ndarray:
    """Per-class loss weights (N / (K * N_c)) ** power, normalised to mean 1 over frames.

    power 1 fully balances the classes; lower powers temper the weight of very rare classes
    (EMERGENCY), whose few frames would otherwise dominate the gradient.
    """
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=CLASS_COUNT)
    present = counts > 0
    weights = np.zeros(CLASS_COUNT)
    weights[present] = (counts.sum() / (present.sum() * counts[present])) ** power
    return weights / (weights[labels].mean())


def standardisation(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and scale (std, 1 where a feature is constant) of the training features."""
    mean = features.mean(axis=0, dtype=np.float64)
    scale = features.std(axis=0, dtype=np.float64)
    scale[~(scale > 1e-12)] = 1.0
    return mean, scale


@dataclass(frozen=True, slots=True, eq=False)
class MlpFit:
    """A fitted MLP: (weight [in, out], bias [out]) per layer, ReLU between, softmax last."""

    layers: tuple[tuple[np.ndarray, np.ndarray], ...]
    best_epoch: int

    def predict_proba(self, standardised: np.ndarray) -> np.ndarray:
        return _forward(self.layers, np.asarray(standardised, dtype=np.float32))[-1]

    @property
    def parameter_count(self) -> int:
        return sum(weight.size + bias.size for weight, bias in self.layers)


@dataclass(frozen=True, slots=True, eq=False)
class LayaFit:
    """The fitted model: the main MLP's softmax over HOLD, LEAN_BUY and LEAN_SELL, and the
    EMERGENCY head's softmax over (not EMERGENCY, EMERGENCY) on the `head_inputs` columns.

    P(EMERGENCY) is the head's; every other class gets (1 - that) x its main probability,
    exactly what the exported graph computes.
    """

    main: MlpFit
    head: MlpFit
    head_inputs: tuple[int, ...]

    def predict_proba(self, standardised: np.ndarray) -> np.ndarray:
        standardised = np.asarray(standardised, dtype=np.float32)
        emergency = self.head.predict_proba(standardised[:, self.head_inputs])[:, 1:2]
        return np.concatenate(
            [self.main.predict_proba(standardised) * (1 - emergency), emergency], 1
        )

    def head_layers(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """The head with its two-way softmax folded into one log-odds output."""
        *hidden, (weight, bias) = self.head.layers
        log_odds = (weight[:, 1:2] - weight[:, 0:1], bias[1:2] - bias[0:1])
        return (*hidden, log_odds)

    @property
    def parameter_count(self) -> int:
        return self.main.parameter_count + self.head.parameter_count


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
    validation_x: np.ndarray,
    validation_y: np.ndarray,
    validation_w: np.ndarray,
    config: MlpConfig,
    on_epoch: Callable[[int, float], None] | None = None,
    classes: int = CLASS_COUNT,
) -> MlpFit:
    """Fit on standardised features with per-frame loss weights and labels 0..classes-1; keep
    the epoch with the lowest weighted validation loss. `on_epoch(epoch, validation_loss)`
    reports progress."""
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
    validation_x = np.asarray(validation_x, dtype=np.float32)
    fit_w = np.asarray(fit_w, dtype=np.float32)
    step = 0
    best_loss, best_epoch = math.inf, 0
    best_params = [[p.copy() for p in layer] for layer in params]
    for epoch in range(1, config.epochs + 1):
        order = rng.permutation(fit_y.size)
        for start in range(0, order.size, config.batch_size):
            rows = order[start : start + config.batch_size]
            activations = _forward(params, fit_x[rows])
            weights = fit_w[rows]
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
        loss = _weighted_loss(_forward(params, validation_x)[-1], validation_y, validation_w)
        if on_epoch is not None:
            on_epoch(epoch, loss)
        if loss < best_loss - 1e-6:
            best_loss, best_epoch = loss, epoch
            best_params = [[p.copy() for p in layer] for layer in params]
        elif epoch - best_epoch >= config.patience:
            break
    layers = tuple((weight, bias) for weight, bias in best_params)
    return MlpFit(layers, best_epoch)


@dataclass(frozen=True, slots=True)
class TreeConfig:
    """The gradient-boosted trees trained as the measured alternative to the MLP."""

    max_iter: int = 200
    learning_rate: float = 0.05
    max_leaf_nodes: int = 15
    min_samples_leaf: int = 40
    l2_regularization: float = 1.0

    def __post_init__(self) -> None:
        if self.max_iter < 1 or self.max_leaf_nodes < 2 or self.min_samples_leaf < 1:
            raise ValueError(
                "TreeConfig needs max_iter >= 1, max_leaf_nodes >= 2 and min_samples_leaf >= 1"
            )
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise ValueError(f"TreeConfig.learning_rate must be > 0, got {self.learning_rate}")


@dataclass(frozen=True, slots=True)
class SimulationConfig:
    """Simulator data added to the training recordings.

    Bursts are denser than in the default market (0.3 a minute) so the informed-burst pattern
    has enough examples; `share` is the total loss weight of simulated frames relative to the
    recorded ones, so a long simulation does not drown a short real recording.
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
    """Everything `train` does, with the defaults the shipped model was trained with."""

    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    split: TimeSplitConfig = field(default_factory=TimeSplitConfig)
    mlp: MlpConfig = field(default_factory=MlpConfig)
    trees: TreeConfig = field(default_factory=TreeConfig)
    simulation: SimulationConfig = field(default_factory=SimulationConfig)
    emergency_features: tuple[str, ...] = EMERGENCY_FEATURES
    """Feature names the EMERGENCY head reads."""
    emergency_head: MlpConfig = field(default_factory=lambda: MlpConfig(hidden_layers=(8,)))
    mlp_restarts: int = 3
    """Seeds fitted for each of the head and the main MLP: the head with the best validation
    ranking of EMERGENCY ships, then the main MLP giving the best validation macro-F1 with it."""
    compare_trees: bool = True
    tree_margin: float = 0.02
    """Validation macro-F1 by which trees must beat the MLP to count as clearly better."""
    class_weight_power: float = 0.5
    min_emergency_recall: float = 0.2
    burst_check_minutes: float = 0.0
    """Minutes of a fresh default simulated market to measure burst warnings on (0: skip)."""
    burst_check_seed: int = 1001
    latency_frames: int = 2000
    progress: bool = True

    def __post_init__(self) -> None:
        unknown = [name for name in self.emergency_features if name not in FEATURE_NAMES]
        if not self.emergency_features or unknown:
            raise ValueError(
                "TrainConfig.emergency_features must name features of "
                f"{FEATURE_SET_VERSION}, got {self.emergency_features!r}"
            )
        if len(set(self.emergency_features)) != len(self.emergency_features):
            raise ValueError(
                f"TrainConfig.emergency_features has duplicates: {self.emergency_features!r}"
            )
        if self.split.gap_ms < self.dataset.labels.horizon_ms:
            raise ValueError(
                f"TrainConfig.split.gap_ms ({self.split.gap_ms}) must be at least the label "
                f"horizon ({self.dataset.labels.horizon_ms} ms), or labels leak across the cut"
            )
        if not (math.isfinite(self.tree_margin) and self.tree_margin >= 0):
            raise ValueError(f"TrainConfig.tree_margin must be >= 0, got {self.tree_margin}")
        if not (math.isfinite(self.class_weight_power) and 0 <= self.class_weight_power <= 1):
            raise ValueError(
                f"TrainConfig.class_weight_power must be in [0, 1], got {self.class_weight_power}"
            )
        if not 0 <= self.min_emergency_recall <= 1:
            raise ValueError(
                "TrainConfig.min_emergency_recall must be in [0, 1], "
                f"got {self.min_emergency_recall}"
            )
        if not (math.isfinite(self.burst_check_minutes) and self.burst_check_minutes >= 0):
            raise ValueError(
                f"TrainConfig.burst_check_minutes must be >= 0, got {self.burst_check_minutes}"
            )
        if self.mlp_restarts < 1:
            raise ValueError(f"TrainConfig.mlp_restarts must be >= 1, got {self.mlp_restarts}")
        if self.latency_frames < 1:
            raise ValueError(f"TrainConfig.latency_frames must be >= 1, got {self.latency_frames}")


@dataclass(frozen=True, slots=True)
class RecordingSummary:
    """One training recording as the model card lists it."""

    name: str
    simulated: bool
    frames: int
    labelled: int
    minutes: float
    class_counts: dict[str, int]
    problem: str | None = None
    """What was wrong with the recording (cut short, malformed lines); None: nothing."""


@dataclass(frozen=True, slots=True, eq=False)
class CandidateResult:
    """A model family on the validation slice, with its tuned thresholds and latency."""

    description: str
    validation: ClassificationMetrics
    thresholds: tuple[float, ...]
    latency_us_p50: float
    latency_note: str


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
    parameters: int
    best_epochs: tuple[int, int]
    """Of the EMERGENCY head and the main MLP."""
    seeds: tuple[int, int]
    head_ranking: dict[str, float]
    """The shipped head's validation ranking AUC of EMERGENCY, recorded and simulated frames."""
    recordings: tuple[RecordingSummary, ...]
    config: TrainConfig
    class_counts: dict[str, dict[str, int]]
    """Labelled frames per class in the fit, validation and hold-out parts."""
    mlp: CandidateResult
    trees: CandidateResult | None
    trees_clearly_better: bool
    choice_reason: str
    thresholds: tuple[float, ...]
    holdout: EvalReport
    """Hold-out of the recorded (non-simulated) data, or of the simulated data without any."""
    simulated_holdout: EvalReport | None
    latency: LatencySummary
    bursts: BurstWarningReport | None
    metadata: LayaModelMetadata


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

    def close(self) -> None:
        return None


def _source_weights(simulated: np.ndarray, share: float) -> np.ndarray:
    """Per-frame weights giving simulated frames `share` of the recorded frames' total."""
    weights = np.ones(simulated.shape)
    recorded_count = int((~simulated).sum())
    simulated_count = int(simulated.sum())
    if recorded_count and simulated_count:
        weights[simulated] = share * recorded_count / simulated_count
    return weights


def _summaries(dataset: Dataset, simulated_from: int) -> tuple[RecordingSummary, ...]:
    summaries = []
    for index, path in enumerate(dataset.recordings):
        part = dataset.subset(dataset.recording_index == index)
        span = part.exchange_ts_ms.max() - part.exchange_ts_ms.min() if len(part) else 0
        summaries.append(
            RecordingSummary(
                name=Path(path).name,
                simulated=index >= simulated_from,
                frames=len(part),
                labelled=int(part.labelled.sum()),
                minutes=round(float(span) / 60_000, 2),
                class_counts=part.class_counts(),
                problem=dataset.recording_problems[index],
            )
        )
    return tuple(summaries)


def _fit_trees(data: _Prepared, config: TrainConfig) -> CandidateResult:
    """The trees on the same rows, weights and threshold tuning as the MLP (raw features:
    trees need no standardisation)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    fit, validation = data.fit, data.validation
    fit_y, validation_y = data.labels[fit], data.labels[validation]
    validation_x = data.dataset.features[validation]
    validation_w = data.source_weight[validation]
    trees = config.trees
    model = HistGradientBoostingClassifier(
        max_iter=trees.max_iter,
        learning_rate=trees.learning_rate,
        max_leaf_nodes=trees.max_leaf_nodes,
        min_samples_leaf=trees.min_samples_leaf,
        l2_regularization=trees.l2_regularization,
        early_stopping=False,
        random_state=config.mlp.seed,
    )
    # One OpenMP thread: beside numba's and ONNX Runtime's thread pools, scikit-learn's OpenMP
    # threads were measured spinning against them, 100x slower, on a 2-core machine.
    with threadpool_limits(limits=1):
        model.fit(
            data.dataset.features[fit],
            fit_y,
            sample_weight=data.class_weight[fit_y] * data.source_weight[fit],
        )
        # predict_proba columns follow model.classes_; a class absent from fitting stays at 0.
        probabilities = np.zeros((validation_x.shape[0], CLASS_COUNT))
        probabilities[:, model.classes_] = model.predict_proba(validation_x)
        samples = []
        for row in validation_x[: min(200, validation_x.shape[0])]:
            started = time.perf_counter_ns()
            model.predict_proba(row[None, :])
            samples.append(time.perf_counter_ns() - started)
    thresholds = tune_thresholds(
        probabilities,
        validation_y,
        config.min_emergency_recall,
        validation_w,
        data.simulated[validation],
    )
    metrics = classification_metrics(
        validation_y, choose_verdicts(probabilities, thresholds), validation_w
    )
    return CandidateResult(
        description=(
            f"HistGradientBoostingClassifier, {trees.max_iter} iterations x "
            f"{trees.max_leaf_nodes} leaves, learning rate {trees.learning_rate}"
        ),
        validation=metrics,
        thresholds=thresholds,
        latency_us_p50=float(np.median(samples)) / 1000.0,
        latency_note="scikit-learn predict_proba on one row, one thread (no ONNX exporter in "
        "the train extra)",
    )


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


@dataclass(frozen=True, slots=True, eq=False)
class _Prepared:
    """The dataset cut and weighted for fitting: masks, labels, weights, standardised rows."""

    dataset: Dataset
    simulated: np.ndarray
    split: TimeSplit
    fit: np.ndarray
    validation: np.ndarray
    labels: np.ndarray
    class_weight: np.ndarray
    source_weight: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    standardised: np.ndarray


def _prepare(dataset: Dataset, recorded_count: int, config: TrainConfig) -> _Prepared:
    simulated = dataset.recording_index >= recorded_count
    split = split_by_time(dataset.recording_index, dataset.exchange_ts_ms, config.split)
    labelled = dataset.labelled
    parts = {"fit": split.fit, "validation": split.validation, "hold-out": split.holdout}
    for part, rows in parts.items():
        if not (rows & labelled).any():
            raise ValueError(
                f"no labelled frames in the {part} part of the time split: the recordings are "
                f"too short for the label warm-up ({config.dataset.labels.min_sigma_samples} "
                "returns) and the split"
            )
    fit = split.fit & labelled
    labels = dataset.labels.astype(np.int64)
    mean, scale = standardisation(dataset.features[fit])
    return _Prepared(
        dataset=dataset,
        simulated=simulated,
        split=split,
        fit=fit,
        validation=split.validation & labelled,
        labels=labels,
        class_weight=class_weights(labels[fit], config.class_weight_power),
        source_weight=_source_weights(simulated, config.simulation.share),
        mean=mean,
        scale=scale,
        standardised=((dataset.features - mean) / scale).astype(np.float32),
    )


def _validation_ranking(
    scores: np.ndarray, emergency: np.ndarray, groups: np.ndarray
) -> dict[str, float]:
    """Ranking AUC of EMERGENCY scores per group (recorded, simulated) that has positives."""
    names = {False: "recorded", True: "simulated"}
    return {
        names[bool(group)]: ranking_auc(scores[groups == group], emergency[groups == group])
        for group in np.unique(groups)
        if emergency[groups == group].any() and not emergency[groups == group].all()
    }


def _fit_best_model(
    data: _Prepared, config: TrainConfig
) -> tuple[LayaFit, tuple[int, int], tuple[float, ...], ClassificationMetrics, dict[str, float]]:
    """Fit the EMERGENCY head and the main MLP from `mlp_restarts` seeds each.

    The head that ranks the validation EMERGENCY frames best (mean AUC over recorded and
    simulated frames) is kept; then each main MLP is combined with it and its thresholds tuned,
    and the best on validation macro-F1 ships. Returns the fit, (head seed, main seed), the
    thresholds, the validation metrics and the head's validation AUC per group.
    """
    fit, validation = data.fit, data.validation
    labels, groups = data.labels, data.simulated[validation]
    validation_y, validation_w = labels[validation], data.source_weight[validation]
    head_inputs = tuple(FEATURE_NAMES.index(name) for name in config.emergency_features)
    columns = list(head_inputs)
    emergency = (labels == Verdict.EMERGENCY).astype(np.int64)
    head_weight = class_weights(emergency[fit], config.class_weight_power)
    # The main MLP learns the other classes given no EMERGENCY: EMERGENCY frames are left out.
    main_fit = fit & (emergency == 0)
    main_validation = validation & (emergency == 0)
    main_weight = class_weights(labels[main_fit], config.class_weight_power)
    bar = _progress_bar(
        config.progress,
        desc="training MLPs",
        unit=" epochs",
        total=(config.emergency_head.epochs + config.mlp.epochs) * config.mlp_restarts,
    )

    def on_epoch(epoch: int, loss: float) -> None:
        bar.update()
        bar.set_postfix_str(f"validation loss {loss:.4f}")

    try:
        heads = []
        for restart in range(config.mlp_restarts):
            head = fit_mlp(
                data.standardised[fit][:, columns],
                emergency[fit],
                head_weight[emergency[fit]] * data.source_weight[fit],
                data.standardised[validation][:, columns],
                emergency[validation],
                head_weight[emergency[validation]] * validation_w,
                dataclasses.replace(
                    config.emergency_head, seed=config.emergency_head.seed + restart
                ),
                on_epoch,
                classes=2,
            )
            scores = head.predict_proba(data.standardised[validation][:, columns])[:, 1]
            ranking = _validation_ranking(scores, emergency[validation] == 1, groups)
            heads.append((float(np.mean(list(ranking.values()) or [0.5])), restart, head, ranking))
        _, head_restart, head, head_ranking = max(heads, key=lambda item: item[:2])
        best = None
        for restart in range(config.mlp_restarts):
            seed = config.mlp.seed + restart
            main = fit_mlp(
                data.standardised[main_fit],
                labels[main_fit],
                main_weight[labels[main_fit]] * data.source_weight[main_fit],
                data.standardised[main_validation],
                labels[main_validation],
                main_weight[labels[main_validation]] * data.source_weight[main_validation],
                dataclasses.replace(config.mlp, seed=seed),
                on_epoch,
                classes=CLASS_COUNT - 1,
            )
            model = LayaFit(main, head, head_inputs)
            probabilities = model.predict_proba(data.standardised[validation])
            thresholds = tune_thresholds(
                probabilities, validation_y, config.min_emergency_recall, validation_w, groups
            )
            metrics = classification_metrics(
                validation_y, choose_verdicts(probabilities, thresholds), validation_w
            )
            if best is None or metrics.macro_f1 > best[3].macro_f1:
                best = (model, seed, thresholds, metrics)
    finally:
        bar.close()
    assert best is not None  # mlp_restarts >= 1
    model, seed, thresholds, metrics = best
    head_seed = config.emergency_head.seed + head_restart
    return model, (head_seed, seed), thresholds, metrics, head_ranking


def _training_summary(
    config: TrainConfig,
    summaries: tuple[RecordingSummary, ...],
    class_counts: dict[str, dict[str, int]],
    fitted: LayaFit,
    seeds: tuple[int, int],
    mlp_validation: ClassificationMetrics,
    head_ranking: dict[str, float],
    trees: CandidateResult | None,
) -> dict[str, object]:
    """The model metadata's free-form training summary."""
    simulation = config.simulation
    return {
        "recordings": [
            {
                "name": summary.name,
                "simulated": summary.simulated,
                "frames": summary.frames,
                "labelled": summary.labelled,
                "minutes": summary.minutes,
            }
            for summary in summaries
        ],
        "symbols": list(config.dataset.symbols),
        "split": {
            "train_fraction": config.split.train_fraction,
            "validation_fraction": config.split.validation_fraction,
            "gap_ms": config.split.gap_ms,
        },
        "class_counts": class_counts,
        "simulation": {
            "minutes": simulation.minutes,
            "seed": simulation.seed,
            "burst_rate_per_min": simulation.burst_rate_per_min,
            "share": simulation.share,
        },
        "architecture": [FEATURE_COUNT, *config.mlp.hidden_layers, CLASS_COUNT - 1],
        "emergency_head": {
            "features": list(config.emergency_features),
            "architecture": [len(fitted.head_inputs), *config.emergency_head.hidden_layers, 1],
            "validation_auc": head_ranking,
        },
        "class_weight_power": config.class_weight_power,
        "best_epochs": {"emergency_head": fitted.head.best_epoch, "main": fitted.main.best_epoch},
        "seeds": {"emergency_head": seeds[0], "main": seeds[1]},
        "validation_macro_f1": {
            "mlp": mlp_validation.macro_f1,
            **({"trees": trees.validation.macro_f1} if trees else {}),
        },
    }


def _holdout_reports(
    model_path: Path, data: _Prepared, config: TrainConfig
) -> tuple[EvalReport, EvalReport | None]:
    """The hold-out of the recorded data (or of the simulated data when there is none), and
    of the simulated data separately when there are both."""
    simulated = data.simulated
    classifier = started_classifier(model_path)
    try:
        eval_config = EvalConfig(split=config.split, symbols=config.dataset.symbols)
        recorded_rows = ~simulated if (~simulated).any() else simulated
        holdout, _ = evaluate_dataset(
            data.dataset.subset(recorded_rows), classifier, eval_config, os.fspath(model_path)
        )
        simulated_holdout = None
        if simulated.any() and (~simulated).any():
            simulated_holdout, _ = evaluate_dataset(
                data.dataset.subset(simulated), classifier, eval_config, os.fspath(model_path)
            )
    finally:
        classifier.stop()
    return holdout, simulated_holdout


def train(
    recordings: Sequence[str | os.PathLike[str]],
    out_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    config: TrainConfig | None = None,
) -> TrainReport:
    """Train a Laya model on recordings (plus simulator data), export it, write its card.

    The card goes next to the model with the suffix `.md`. Raises ValueError when the data
    leave a part of the time split without labelled frames.
    """
    config = config or TrainConfig()
    simulation = config.simulation
    if not recordings and simulation.minutes <= 0:
        raise ValueError("train needs recordings, simulated minutes, or both")
    out = Path(out_path)
    with tempfile.TemporaryDirectory(prefix="laya-train-") as folder:
        paths = [Path(path) for path in recordings]
        if simulation.minutes > 0:
            market = MarketGeneratorConfig(burst_rate_per_min=simulation.burst_rate_per_min)
            name = f"simulated-seed{simulation.seed}-{simulation.minutes:g}min.gz"
            paths.append(
                simulate_recording(
                    Path(folder) / name, simulation.minutes, simulation.seed, market=market
                ).path
            )
        bar = _progress_bar(config.progress, desc="replaying recordings", unit=" frames")
        try:
            dataset = build_dataset(paths, config.dataset, bar.update)
        finally:
            bar.close()
    data = _prepare(dataset, len(recordings), config)
    fitted, seeds, thresholds, mlp_validation, head_ranking = _fit_best_model(data, config)
    trees = None
    if config.compare_trees:
        bar = _progress_bar(config.progress, desc="training trees (comparison)", total=1)
        try:
            trees = _fit_trees(data, config)
        finally:
            bar.update()
            bar.close()
    trees_clearly_better, reason = _compare_families(mlp_validation, trees, config.tree_margin)

    summaries = _summaries(dataset, len(recordings))
    class_counts = {
        "fit": dataset.subset(data.fit).class_counts(),
        "validation": dataset.subset(data.validation).class_counts(),
        "hold-out": dataset.subset(data.split.holdout).class_counts(),
    }
    metadata = LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=config.dataset.labels.as_metadata(),
        thresholds=thresholds,
        training_summary=_training_summary(
            config, summaries, class_counts, fitted, seeds, mlp_validation, head_ranking, trees
        ),
        model_family="mlp+emergency-head",
    )
    export_mlp(
        out,
        fitted.main.layers,
        metadata,
        input_mean=data.mean,
        input_scale=data.scale,
        emergency_head=EmergencyHead(fitted.head_inputs, fitted.head_layers()),
    )
    latency = _measure_latency(out, dataset.features[data.split.holdout], config.latency_frames)
    mlp = CandidateResult(
        description=_model_description(config, fitted),
        validation=mlp_validation,
        thresholds=thresholds,
        latency_us_p50=latency.p50_us,
        latency_note=f"LayaClassifier.infer on one row, {latency.provider}",
    )
    holdout, simulated_holdout = _holdout_reports(out, data, config)
    bursts = None
    if config.burst_check_minutes > 0:
        bursts = burst_warnings(out, config.burst_check_minutes, config.burst_check_seed)

    report = TrainReport(
        model_path=out,
        card_path=out.with_suffix(".md"),
        model_bytes=out.stat().st_size,
        model_sha256=hashlib.sha256(out.read_bytes()).hexdigest(),
        parameters=fitted.parameter_count,
        best_epochs=(fitted.head.best_epoch, fitted.main.best_epoch),
        seeds=seeds,
        head_ranking=head_ranking,
        recordings=summaries,
        config=config,
        class_counts=class_counts,
        mlp=mlp,
        trees=trees,
        trees_clearly_better=trees_clearly_better,
        choice_reason=reason,
        thresholds=thresholds,
        holdout=holdout,
        simulated_holdout=simulated_holdout,
        latency=latency,
        bursts=bursts,
        metadata=metadata,
    )
    report.card_path.write_text(model_card(report))
    return report


def _model_description(config: TrainConfig, fitted: LayaFit) -> str:
    main = (FEATURE_COUNT, *config.mlp.hidden_layers, CLASS_COUNT - 1)
    head = (len(fitted.head_inputs), *config.emergency_head.hidden_layers, 1)
    return (
        " -> ".join(str(width) for width in main)
        + " MLP (ReLU, softmax over HOLD, LEAN_BUY, LEAN_SELL) and an EMERGENCY head "
        + " -> ".join(str(width) for width in head)
        + f" on the volatility features (ReLU, log-odds), {fitted.parameter_count} parameters"
    )


def _compare_families(
    mlp: ClassificationMetrics, trees: CandidateResult | None, margin: float
) -> tuple[bool, str]:
    """Whether the trees were clearly better on validation macro-F1, and why the MLP ships."""
    if trees is None:
        return False, "trees were not trained for comparison (compare_trees off)"
    gain = trees.validation.macro_f1 - mlp.macro_f1
    if gain > margin:
        return True, (
            f"the trees scored {gain:+.3f} validation macro-F1 over the MLP, more than the "
            f"{margin:.2f} margin for 'clearly better'; the MLP ships anyway because exporting "
            "trees needs skl2onnx (protobuf < 7), which the train extra does not carry: "
            "consider more training data or that exporter before relying on this model"
        )
    standing = (
        "the MLP scored higher on validation macro-F1"
        if gain <= 0
        else f"the trees' lead is within the {margin:.2f} margin for 'clearly better'"
    )
    return False, (
        f"{standing} (trees {gain:+.3f}), and the MLP runs as a few small Gemms in ONNX "
        "Runtime with no extra exporter"
    )


def _f1_row(name: str, metrics: ClassificationMetrics) -> str:
    return (
        f"| {name} | {metrics.macro_f1:.3f} | "
        + " | ".join(f"{value:.3f}" for value in metrics.f1)
        + " |"
    )


def _evaluation_section(title: str, report: EvalReport) -> list[str]:
    lines = [
        f"### {title}",
        "",
        f"{report.frames} labelled frames ({report.scope}). Baselines fitted on the training "
        f"part: majority class {report.majority_class.name}, imbalance tau "
        f"{report.imbalance_tau:.3f}.",
        "",
        "| | macro-F1 | " + " | ".join(f"F1 {name}" for name in CLASS_NAMES) + " |",
        "|---|---|" + "---|" * len(CLASS_NAMES),
        _f1_row("model", report.model),
        _f1_row("majority", report.majority),
        _f1_row("imbalance rule", report.imbalance),
        "",
        f"Ranking of the model's EMERGENCY probability: ROC AUC {report.emergency_auc:.3f} "
        "(0.5 is no skill).",
        "",
        "Model precision / recall / support: "
        + "; ".join(
            f"{name} {report.model.precision[k]:.3f} / {report.model.recall[k]:.3f} / "
            f"{int(report.model.support[k])}"
            for k, name in enumerate(CLASS_NAMES)
        )
        + ".",
        "",
        "Model confusion (rows: label, columns: verdict):",
        "",
        "| label \\ verdict | " + " | ".join(CLASS_NAMES) + " |",
        "|---|" + "---|" * len(CLASS_NAMES),
    ]
    lines += [
        f"| {name} | " + " | ".join(str(int(count)) for count in report.model.confusion[k]) + " |"
        for k, name in enumerate(CLASS_NAMES)
    ]
    return [*lines, ""]


def _emergency_limits(report: EvalReport) -> str:
    """What the recorded hold-out's EMERGENCY figures do and do not show."""
    metrics = report.model
    hits = int(metrics.confusion[Verdict.EMERGENCY, Verdict.EMERGENCY])
    alarms = int(metrics.predicted[Verdict.EMERGENCY])
    positives = int(metrics.support[Verdict.EMERGENCY])
    base_rate = positives / report.frames if report.frames else 0.0
    # Hits that alarms raised at random frames would score, on average.
    chance_hits = alarms * base_rate
    figures = (
        f"- EMERGENCY on the recorded hold-out: F1 {metrics.f1[Verdict.EMERGENCY]:.3f}, "
        f"{hits} hit(s) in {alarms} alarms, precision {metrics.precision[Verdict.EMERGENCY]:.3f} "
        f"against a base rate of {base_rate:.4f}, recall {metrics.recall[Verdict.EMERGENCY]:.3f}; "
        f"ranking AUC {report.emergency_auc:.3f}. "
    )
    if not report.emergency_auc >= 0.6:
        return figures + (
            "An AUC near 0.5 means the model has learned no EMERGENCY signal that carries over "
            "to later real data; its EMERGENCY verdicts there come from the simulator's burst "
            "pattern and from chance."
        )
    return figures + (
        f"Alarms at random frames would score about {chance_hits:.1f} hit(s) at this rate, so "
        "so few hits are weak evidence on their own; the ranking AUC, over every frame, is the "
        "better sign that the EMERGENCY signal carries over to later real data."
    )


def model_card(report: TrainReport) -> str:
    """The markdown model card written next to the model."""
    config = report.config
    labels = config.dataset.labels
    split = config.split
    simulation = config.simulation
    lines = [
        f"# Laya model card: {report.model_path.name}",
        "",
        f"- Feature set `{report.metadata.feature_set_version}` ({FEATURE_COUNT} features, "
        f"`engine/laya/features.py`), classes {', '.join(CLASS_NAMES)}.",
        f"- {report.mlp.description}; {report.model_bytes:,} bytes, sha256 "
        f"`{report.model_sha256[:16]}...`, created {report.metadata.created_utc}.",
        f"- Thresholds (probability each class must reach, in class order): "
        f"{', '.join(f'{value:.3f}' for value in report.thresholds)}.",
        f"- Inference: `LayaClassifier.infer` on one row, {report.latency.provider}, "
        f"p50 {report.latency.p50_us:.1f} us, p99 {report.latency.p99_us:.1f} us over "
        f"{report.latency.frames} frames.",
        "",
        "## Data",
        "",
        "| recording | kind | books15 frames | labelled | minutes | "
        + " | ".join(CLASS_NAMES)
        + " |",
        "|---|---|---|---|---|" + "---|" * len(CLASS_NAMES),
    ]
    lines += [
        f"| {item.name} | {'simulated' if item.simulated else 'recorded'} | {item.frames} | "
        f"{item.labelled} | {item.minutes:g} | "
        + " | ".join(str(item.class_counts[name]) for name in CLASS_NAMES)
        + " |"
        for item in report.recordings
    ]
    problems = [f"- Reading: {item.problem}" for item in report.recordings if item.problem]
    lines += ["", *problems] if problems else []
    lines += [""]
    if simulation.minutes > 0:
        lines += [
            f"Simulated data: `simulate_recording` with seed {simulation.seed}, bursts at "
            f"{simulation.burst_rate_per_min:g} a minute (the default market has 0.3), weighted "
            f"to {simulation.share:g}x the recorded frames' total loss weight.",
            "",
        ]
    lines += [
        "## Labels and split",
        "",
        f"Labels (`engine/laya/labels.py`): horizon {labels.horizon_ms} ms, sigma over the "
        f"trailing {labels.sigma_window_ms / 1000:g} s of fully observed returns (at least "
        f"{labels.min_sigma_samples}), LEAN at {labels.lean_sigma:g} sigma, EMERGENCY at "
        f"{labels.emergency_sigma:g} sigma.",
        "",
        f"Time split per recording: the first {split.train_fraction:.0%} of its timeline is "
        f"training time, the rest hold-out; the last {split.validation_fraction:.0%} of the "
        f"training time is the validation slice (early stopping, thresholds, model choice). "
        f"Frames within {split.gap_ms} ms before each cut are dropped so no label crosses it.",
        "",
        "| part | " + " | ".join(CLASS_NAMES) + " |",
        "|---|" + "---|" * len(CLASS_NAMES),
    ]
    lines += [
        f"| {part} | " + " | ".join(str(counts[name]) for name in CLASS_NAMES) + " |"
        for part, counts in report.class_counts.items()
    ]
    head_inputs = ", ".join(f"`{name}`" for name in config.emergency_features)
    lines += [
        "",
        "## Training",
        "",
        f"Features standardised with fit-part mean and std (inside the ONNX graph). Two MLPs: "
        f"the EMERGENCY head reads only {head_inputs} "
        "and learns EMERGENCY against everything else; the main MLP reads all features and "
        "learns HOLD / LEAN_BUY / LEAN_SELL on the frames that are not EMERGENCY. The model "
        "outputs P(EMERGENCY) from the head and (1 - P(EMERGENCY)) x the main MLP's "
        "probabilities for the others. Both: weighted softmax cross-entropy with class weights "
        f"(N / (K N_c))^{config.class_weight_power:g}, Adam (learning rate "
        f"{config.mlp.learning_rate:g}, decoupled weight decay {config.mlp.weight_decay:g}), "
        f"batches of {config.mlp.batch_size}, early stopping on the weighted validation loss. "
        f"Of {config.mlp_restarts} seeds each, the head ranking the validation EMERGENCY frames "
        f"best ships (seed {report.seeds[0]}, best epoch {report.best_epochs[0]}; ranking AUC "
        + ", ".join(f"{group} {auc:.3f}" for group, auc in report.head_ranking.items())
        + "), then the main MLP with the best validation macro-F1 (seed "
        f"{report.seeds[1]}, best epoch {report.best_epochs[1]}). Thresholds: "
        f"coordinate ascent on validation macro-F1 with EMERGENCY recall kept at "
        f"{config.min_emergency_recall:g} or more where reachable, separately on the recorded "
        "and the simulated validation frames.",
        "",
        "## Model choice",
        "",
        "| candidate | validation macro-F1 | validation F1 EMERGENCY | latency p50 | measured as |",
        "|---|---|---|---|---|",
    ]
    for candidate in (report.mlp, report.trees):
        if candidate is not None:
            lines.append(
                f"| {candidate.description} | {candidate.validation.macro_f1:.3f} | "
                f"{candidate.validation.f1[Verdict.EMERGENCY]:.3f} | "
                f"{candidate.latency_us_p50:.1f} us | {candidate.latency_note} |"
            )
    lines += ["", f"The MLP ships: {report.choice_reason}.", "", "## Hold-out evaluation", ""]
    lines += _evaluation_section("Recorded data", report.holdout)
    if report.simulated_holdout is not None:
        lines += _evaluation_section("Simulated data", report.simulated_holdout)
    if report.bursts is not None:
        bursts = report.bursts
        summary = bursts.as_dict()
        lead = summary["median_lead_ms"]
        lines += [
            "## Simulator: warnings ahead of informed bursts",
            "",
            f"A fresh default simulated market (seed {bursts.seed}, {bursts.minutes:g} minutes, "
            f"not used in training): {bursts.caught} of {bursts.bursts} bursts "
            f"({bursts.fraction_caught:.0%}) had an EMERGENCY verdict on the burst's symbol "
            "inside the lead window (burst start to jump start)"
            + (f", a median {lead:.0f} ms before the jump" if lead is not None else "")
            + f". EMERGENCY verdicts away from any burst: {bursts.false_alarms_per_minute:.2f} "
            "a minute (some are natural moves labelled EMERGENCY too).",
            "",
        ]
    recorded = report.holdout
    recorded_files = [item for item in report.recordings if not item.simulated]
    lines += [
        "## Limits",
        "",
        f"- {sum(item.minutes for item in recorded_files):g} minutes of recorded data in "
        f"{len(recorded_files)} file(s): the hold-out has {recorded.frames} labelled frames, "
        f"{int(recorded.model.support[Verdict.EMERGENCY])} of them EMERGENCY (moves cluster, "
        "so fewer distinct events), and its figures carry wide error bars.",
        _emergency_limits(recorded),
        "- The features are scale-free, but books of other instruments and venues differ in "
        "distribution (the shared recording is Binance spot): retrain on recordings of the "
        "market the engine trades.",
        "- Retrain on your own recordings with `hft-console train` (see `docs/laya.md`).",
        "",
    ]
    return "\n".join(lines)


def format_report(report: TrainReport) -> str:
    """A short text summary for the terminal."""
    holdout = report.holdout
    return "\n".join(
        [
            f"model: {report.model_path} ({report.model_bytes:,} bytes), card: {report.card_path}",
            f"hold-out ({holdout.frames} frames): model macro-F1 {holdout.model.macro_f1:.3f} "
            f"(EMERGENCY F1 {holdout.model.f1[Verdict.EMERGENCY]:.3f}), majority "
            f"{holdout.majority.macro_f1:.3f}, imbalance rule {holdout.imbalance.macro_f1:.3f}",
            f"inference p50 {report.latency.p50_us:.1f} us ({report.latency.provider})",
            *(f"recording: {item.problem}" for item in report.recordings if item.problem),
        ]
        + (
            [
                f"simulated bursts warned: {report.bursts.caught}/{report.bursts.bursts}, "
                f"false alarms {report.bursts.false_alarms_per_minute:.2f}/min"
            ]
            if report.bursts
            else []
        )
    )


def train_command(
    recordings: Sequence[str],
    out_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    *,
    sim_minutes: float = 0.0,
    seed: int = DEFAULT_SIM_SEED,
) -> str:
    """What `hft-console train` runs: train with the defaults, return the summary to print."""
    config = TrainConfig(simulation=SimulationConfig(minutes=sim_minutes, seed=seed))
    return format_report(train(recordings, out_path, config))


SHIPPED_RECORDING = (
    Path(__file__).resolve().parents[3]
    / "shared"
    / "data"
    / "replay"
    / "spot_btc_eth_20240808.bitget.gz"
)
"""The real recording the shipped model was trained on (beside the project, not in it)."""
SHIPPED_SIM_MINUTES = 60.0
SHIPPED_BURST_CHECK_MINUTES = 60.0


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m engine.laya.train`: reproduce the shipped model (or train on other data)."""
    parser = argparse.ArgumentParser(
        prog="python -m engine.laya.train", description="Train a Laya model."
    )
    parser.add_argument(
        "--replay", nargs="+", default=[os.fspath(SHIPPED_RECORDING)], metavar="FILE"
    )
    parser.add_argument("--out", default=os.fspath(DEFAULT_MODEL_PATH), metavar="MODEL.onnx")
    parser.add_argument("--sim-minutes", type=float, default=SHIPPED_SIM_MINUTES)
    parser.add_argument("--seed", type=int, default=DEFAULT_SIM_SEED)
    parser.add_argument("--burst-check-minutes", type=float, default=SHIPPED_BURST_CHECK_MINUTES)
    parser.add_argument("--json", action="store_true", help="print the report's figures as JSON")
    args = parser.parse_args(argv)
    config = TrainConfig(
        simulation=SimulationConfig(minutes=args.sim_minutes, seed=args.seed),
        burst_check_minutes=args.burst_check_minutes,
    )
    report = train(args.replay, args.out, config)
    if args.json:
        print(
            json.dumps(
                {
                    "model": os.fspath(report.model_path),
                    "holdout": report.holdout.as_dict(),
                    "bursts": report.bursts.as_dict() if report.bursts else None,
                    "latency_us": {"p50": report.latency.p50_us, "p99": report.latency.p99_us},
                }
            )
        )
    else:
        print(format_report(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
