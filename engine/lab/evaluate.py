"""Laya evaluation: the model against three baselines on the time-ordered hold-out.

The model runs through the real `LayaClassifier` (ONNX Runtime, the model's own thresholds),
on features from the live code path (`build_dataset`), labelled with the label parameters the
model was trained with.

Metrics are per-class precision, recall and F1, their macro average over the four classes (a
class never predicted and never true counts as F1 0), and the confusion matrix (rows: label,
columns: prediction). Baselines, fitted on the training part of the same split:

- majority: always the most frequent training label;
- imbalance: LEAN_BUY when the 5-level order-book imbalance exceeds tau, LEAN_SELL when it is
  below -tau, HOLD otherwise, with tau chosen to maximise training macro-F1;
- imbalance + jump: the same, and EMERGENCY where `jump_sigmas_5s` reaches j (tau and j
  chosen together).

The model's per-side AUC ranks P(LEAN_BUY) + P(EMERGENCY) (the verdicts that pull the ask)
against the frames whose ask was run over, and likewise for the bid.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import os
import tempfile
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.feed.recording import require_distinct_recordings
from engine.lab.dataset import (
    Dataset,
    DatasetConfig,
    TimeSplitConfig,
    build_dataset,
    split_by_time,
)
from engine.laya.classifier import LayaClassifier, choose_verdict
from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig, model_for
from engine.laya.features import FEATURE_NAMES
from engine.laya.labels import LabelConfig
from engine.laya.model import LayaModelMetadata
from engine.laya.ranking import ranking_auc, side_scores
from engine.laya.verdict import CLASS_NAMES, Verdict
from engine.sim.recording import simulate_recording
from engine.user_files import check_output_file, replacing

CLASS_COUNT = len(CLASS_NAMES)
PREDICTIONS_HEADER = (
    "symbol",
    "exchange_ts_ms",
    "label",
    "prediction",
    "p_hold",
    "p_lean_buy",
    "p_lean_sell",
    "p_emergency",
)
_BATCH_ROWS = 4096
JUMP_FEATURE = FEATURE_NAMES.index("jump_sigmas_5s")
"""The recent-jump feature of the imbalance + jump baseline."""
_RULE_GRID = 25
"""Quantiles of |imbalance| and of the jump feature tried for the imbalance + jump rule."""


@dataclass(frozen=True, slots=True, eq=False)
class ClassificationMetrics:
    """Scores of predictions against labels; `confusion[label, prediction]` counts frames."""

    confusion: np.ndarray

    @property
    def support(self) -> np.ndarray:
        return self.confusion.sum(axis=1)

    @property
    def predicted(self) -> np.ndarray:
        return self.confusion.sum(axis=0)

    @property
    def precision(self) -> np.ndarray:
        return _ratio(np.diag(self.confusion), self.predicted)

    @property
    def recall(self) -> np.ndarray:
        return _ratio(np.diag(self.confusion), self.support)

    @property
    def f1(self) -> np.ndarray:
        precision, recall = self.precision, self.recall
        return _ratio(2.0 * precision * recall, precision + recall)

    @property
    def macro_f1(self) -> float:
        return float(self.f1.mean())

    @property
    def accuracy(self) -> float:
        total = self.confusion.sum()
        return float(np.trace(self.confusion) / total) if total else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "macro_f1": self.macro_f1,
            "accuracy": self.accuracy,
            "classes": {
                name: {
                    "precision": float(self.precision[k]),
                    "recall": float(self.recall[k]),
                    "f1": float(self.f1[k]),
                    "support": int(self.support[k]),
                    "predicted": int(self.predicted[k]),
                }
                for k, name in enumerate(CLASS_NAMES)
            },
            "confusion": self.confusion.tolist(),
        }


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    return np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)


def classification_metrics(
    labels: np.ndarray, predictions: np.ndarray, weights: np.ndarray | None = None
) -> ClassificationMetrics:
    """Metrics of `predictions` against `labels` (Verdict values; labelled frames only).

    With `weights`, each frame counts that much in the confusion matrix (for scoring a mix of
    recorded and simulated frames at chosen shares).
    """
    labels = np.asarray(labels, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    if labels.shape != predictions.shape:
        raise ValueError(f"labels {labels.shape} and predictions {predictions.shape} differ")
    for name, values in (("labels", labels), ("predictions", predictions)):
        if values.size and (values.min() < 0 or values.max() >= CLASS_COUNT):
            raise ValueError(f"{name} must be Verdict values 0..{CLASS_COUNT - 1}")
    confusion = np.bincount(
        labels * CLASS_COUNT + predictions, weights=weights, minlength=CLASS_COUNT * CLASS_COUNT
    ).reshape(CLASS_COUNT, CLASS_COUNT)
    return ClassificationMetrics(confusion)


def majority_class(train_labels: np.ndarray) -> Verdict:
    """The most frequent training label (ties: the lower Verdict value)."""
    counts = np.bincount(np.asarray(train_labels, dtype=np.int64), minlength=CLASS_COUNT)
    if not counts.sum():
        raise ValueError("no training labels to take a majority class from")
    return Verdict(int(np.argmax(counts)))


def imbalance_rule(obi: np.ndarray, tau: float) -> np.ndarray:
    """The imbalance baseline's verdicts: LEAN_BUY above tau, LEAN_SELL below -tau, else HOLD."""
    obi = np.asarray(obi, dtype=np.float64)
    predictions = np.full(obi.shape, Verdict.HOLD, dtype=np.int64)
    predictions[obi > tau] = Verdict.LEAN_BUY
    predictions[obi < -tau] = Verdict.LEAN_SELL
    return predictions


def fit_imbalance_tau(
    obi: np.ndarray,
    labels: np.ndarray,
    candidates: int = 101,
    weights: np.ndarray | None = None,
) -> float:
    """The tau in [0, 1] maximising macro-F1 on (training) frames, each counting its weight;
    ties: the smallest tau.

    Candidates are quantiles of |obi| (so each splits the frames differently) plus 0 and 1.
    """
    obi = np.asarray(obi, dtype=np.float64)
    if not obi.size:
        raise ValueError("no frames to fit the imbalance threshold on")
    taus = np.unique(
        np.concatenate(([0.0, 1.0], np.quantile(np.abs(obi), np.linspace(0, 1, candidates))))
    )
    scores = [
        classification_metrics(labels, imbalance_rule(obi, tau), weights).macro_f1 for tau in taus
    ]
    return float(taus[int(np.argmax(scores))])


def imbalance_jump_rule(
    obi: np.ndarray, jump: np.ndarray, tau: float, jump_at: float
) -> np.ndarray:
    """The imbalance rule's verdicts, and EMERGENCY wherever `jump` reaches `jump_at`."""
    verdicts = imbalance_rule(obi, tau)
    verdicts[np.asarray(jump) >= jump_at] = Verdict.EMERGENCY
    return verdicts


def fit_imbalance_jump(
    obi: np.ndarray, jump: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None
) -> tuple[float, float]:
    """(tau, j) maximising macro-F1 over a grid of quantiles of |obi| and of `jump`."""
    best = (-1.0, 0.0, math.inf)
    taus = np.unique(np.quantile(np.abs(obi), np.linspace(0.2, 0.995, _RULE_GRID)))
    jumps = np.unique(np.quantile(jump, np.linspace(0.5, 0.999, _RULE_GRID)))
    for tau in taus:
        base = imbalance_rule(obi, tau)
        for jump_at in jumps:
            verdicts = base.copy()
            verdicts[jump >= jump_at] = Verdict.EMERGENCY
            score = classification_metrics(labels, verdicts, weights).macro_f1
            if score > best[0]:
                best = (score, float(tau), float(jump_at))
    return best[1], best[2]


@dataclass(frozen=True, slots=True)
class EvalConfig:
    """What to evaluate on: the hold-out of the time split (default) or every labelled frame.

    The baselines are always fitted on the training part of the split; the symbols are those
    the model's engine computes features for (a book's, its hedge last, as
    `DatasetConfig.symbols`; None: each recording's own).
    """

    split: TimeSplitConfig = field(default_factory=TimeSplitConfig)
    all_frames: bool = False
    symbols: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True, eq=False)
class SymbolScores:
    """The model on one symbol's frames of the evaluation (a book's symbols differ)."""

    symbol: str
    frames: int
    model: ClassificationMetrics
    ask_auc: float
    bid_auc: float

    def as_dict(self) -> dict[str, object]:
        return {
            "frames": self.frames,
            **self.model.as_dict(),
            **{
                name: None if math.isnan(value) else value
                for name, value in (("ask_auc", self.ask_auc), ("bid_auc", self.bid_auc))
            },
        }


@dataclass(frozen=True, slots=True, eq=False)
class EvalReport:
    """The model and the three baselines on the same frames."""

    model_path: str
    recordings: tuple[str, ...]
    scope: str
    """"hold-out" or "all frames"."""
    frames: int
    thresholds: tuple[float, ...]
    model: ClassificationMetrics
    majority: ClassificationMetrics
    imbalance: ClassificationMetrics
    imbalance_jump: ClassificationMetrics
    majority_class: Verdict
    imbalance_tau: float
    rule_tau: float
    rule_jump_sigmas: float
    emergency_auc: float
    """`ranking_auc` of the model's EMERGENCY probability; 0.5 is no skill."""
    ask_auc: float
    """`ranking_auc` of P(LEAN_BUY) + P(EMERGENCY) (the verdicts that pull the ask) for the
    frames whose ask was run over."""
    bid_auc: float
    recording_problems: tuple[str, ...] = ()
    """What was wrong with the recordings (cut short, malformed lines), one line each."""
    trained_on: tuple[str, ...] = ()
    """The recordings the model was trained on (`training_notes`), one line each."""
    symbol_models: tuple[tuple[str, str], ...] = ()
    """(symbol, model) for each symbol evaluated: the model the engine would run it on
    ([laya.models], `model_for`; this model for the rest)."""
    per_symbol: tuple[SymbolScores, ...] = ()
    """The model on each symbol's frames, in the dataset's order of symbols."""

    def as_dict(self) -> dict[str, object]:
        return {
            "model_path": self.model_path,
            "recordings": list(self.recordings),
            "scope": self.scope,
            "frames": self.frames,
            "thresholds": list(self.thresholds),
            "model": {
                **self.model.as_dict(),
                **{
                    name: None if math.isnan(value) else value
                    for name, value in (
                        ("emergency_auc", self.emergency_auc),
                        ("ask_auc", self.ask_auc),
                        ("bid_auc", self.bid_auc),
                    )
                },
            },
            "baselines": {
                "majority": {"class": self.majority_class.name, **self.majority.as_dict()},
                "imbalance": {"tau": self.imbalance_tau, **self.imbalance.as_dict()},
                "imbalance_jump": {
                    "tau": self.rule_tau,
                    "jump_sigmas": self.rule_jump_sigmas,
                    **self.imbalance_jump.as_dict(),
                },
            },
            "recording_problems": list(self.recording_problems),
            "trained_on": list(self.trained_on),
            "symbol_models": dict(self.symbol_models),
            "per_symbol": {scores.symbol: scores.as_dict() for scores in self.per_symbol},
        }

    def format_table(self) -> str:
        """A plain-text table: macro-F1 and per-class F1 of the four, then the confusion."""
        rows = (
            ("model", self.model),
            (f"majority ({self.majority_class.name})", self.majority),
            (f"imbalance (tau {self.imbalance_tau:.3f})", self.imbalance),
            (
                f"imbalance + jump (tau {self.rule_tau:.3f}, j {self.rule_jump_sigmas:.2f})",
                self.imbalance_jump,
            ),
        )
        width = max(len(name) for name, _ in rows)
        header = f"{'':{width}}  macro-F1  " + "  ".join(f"{name:>9}" for name in CLASS_NAMES)
        lines = [
            f"{self.scope}: {self.frames} labelled frames of "
            + ", ".join(Path(path).name for path in self.recordings),
            f"model {self.model_path}",
            *(f"recording: {problem}" for problem in self.recording_problems),
            *(f"note: {line}" for line in self.trained_on),
            *(f"{symbol} would run on {model}" for symbol, model in self.symbol_models),
            "",
            header,
        ]
        lines += [
            f"{name:{width}}  {metrics.macro_f1:8.3f}  "
            + "  ".join(f"{value:9.3f}" for value in metrics.f1)
            for name, metrics in rows
        ]
        lines += [
            "",
            f"model ranking AUC (0.5: no skill): ask run over {self.ask_auc:.3f}, bid run "
            f"over {self.bid_auc:.3f}, EMERGENCY {self.emergency_auc:.3f}",
            "per-class F1 above; model precision / recall / support:",
        ]
        lines += [
            f"  {label:>10}  {self.model.precision[k]:.3f} / {self.model.recall[k]:.3f} / "
            f"{int(self.model.support[k])}"
            for k, label in enumerate(CLASS_NAMES)
        ]
        lines += ["", "model confusion (rows: label, columns: prediction):"]
        lines.append(" " * 12 + "".join(f"{name:>11}" for name in CLASS_NAMES))
        lines += [
            f"{label:>12}" + "".join(f"{count:11d}" for count in self.model.confusion[k])
            for k, label in enumerate(CLASS_NAMES)
        ]
        width = max((len(scores.symbol) for scores in self.per_symbol), default=0)
        lines += ["", "model per symbol: frames, macro-F1, ask / bid run over AUC:"]
        lines += [
            f"  {scores.symbol:{width}}  {scores.frames:8d}  {scores.model.macro_f1:.3f}  "
            f"{scores.ask_auc:.3f} / {scores.bid_auc:.3f}"
            for scores in self.per_symbol
        ]
        return "\n".join(lines)


@dataclass(frozen=True, slots=True, eq=False)
class FramePredictions:
    """The evaluated rows of a dataset with the model's probabilities and verdicts."""

    dataset: Dataset
    probabilities: np.ndarray
    predictions: np.ndarray

    def write_csv(self, path: str | os.PathLike[str]) -> None:
        """One line per frame: symbol, exchange time, label and verdict names, probabilities;
        written beside `path` and renamed over it whole."""
        names = np.asarray(CLASS_NAMES, dtype=object)
        with replacing(Path(path)) as written, written.open("w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(PREDICTIONS_HEADER)
            for symbol, ts, label, prediction, probabilities in zip(
                self.dataset.symbol_names,
                self.dataset.exchange_ts_ms.tolist(),
                names[self.dataset.labels.astype(np.int64)],
                names[self.predictions],
                self.probabilities.tolist(),
                strict=True,
            ):
                writer.writerow(
                    (symbol, ts, label, prediction, *(f"{value:.6f}" for value in probabilities))
                )


def classify(classifier: LayaClassifier, features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities (ONNX Runtime, in batches) and verdicts (`choose_verdict`, per row)."""
    count = features.shape[0]
    probabilities = np.zeros((count, CLASS_COUNT), dtype=np.float32)
    for start in range(0, count, _BATCH_ROWS):
        batch = np.ascontiguousarray(features[start : start + _BATCH_ROWS], dtype=np.float32)
        probabilities[start : start + batch.shape[0]] = classifier.infer(batch)
    thresholds = classifier.thresholds
    predictions = np.fromiter(
        (choose_verdict(row, thresholds) for row in probabilities.tolist()),
        dtype=np.int64,
        count=count,
    )
    return probabilities, predictions


def started_classifier(model_path: str | os.PathLike[str]) -> LayaClassifier:
    """A CPU `LayaClassifier` on the model: evaluation runs batches, where a GPU buys nothing."""
    classifier = LayaClassifier(LayaClassifierConfig(model_path=model_path, prefer_gpu=False))
    classifier.start()
    return classifier


def evaluate_dataset(
    dataset: Dataset, classifier: LayaClassifier, config: EvalConfig, model_path: str
) -> tuple[EvalReport, FramePredictions]:
    """Score the model and the baselines on a built dataset (labelled frames only)."""
    split = split_by_time(dataset.recording_index, dataset.exchange_ts_ms, config.split)
    labelled = dataset.labelled
    train = dataset.subset(split.train & labelled)
    scope_mask = labelled if config.all_frames else split.holdout & labelled
    frames = dataset.subset(scope_mask)
    if not len(train) or not len(frames):
        raise ValueError(
            f"too few labelled frames to evaluate: {len(train)} in the training part, "
            f"{len(frames)} to score (recordings shorter than the label warm-up?)"
        )
    probabilities, predictions = classify(classifier, frames.features)
    labels = frames.labels.astype(np.int64)
    majority = majority_class(train.labels)
    tau = fit_imbalance_tau(train.obi5, train.labels)
    rule_tau, jump_at = fit_imbalance_jump(
        train.obi5, train.features[:, JUMP_FEATURE], train.labels
    )
    ask, bid = side_scores(probabilities)
    report = EvalReport(
        model_path=model_path,
        recordings=dataset.recordings,
        scope="all frames" if config.all_frames else "hold-out",
        frames=len(frames),
        thresholds=tuple(classifier.thresholds),
        model=classification_metrics(labels, predictions),
        majority=classification_metrics(labels, np.full(labels.shape, majority)),
        imbalance=classification_metrics(labels, imbalance_rule(frames.obi5, tau)),
        imbalance_jump=classification_metrics(
            labels,
            imbalance_jump_rule(frames.obi5, frames.features[:, JUMP_FEATURE], rule_tau, jump_at),
        ),
        majority_class=majority,
        imbalance_tau=tau,
        rule_tau=rule_tau,
        rule_jump_sigmas=jump_at,
        emergency_auc=ranking_auc(probabilities[:, Verdict.EMERGENCY], labels == Verdict.EMERGENCY),
        ask_auc=ranking_auc(ask, frames.ask_run),
        bid_auc=ranking_auc(bid, frames.bid_run),
        recording_problems=tuple(filter(None, dataset.recording_problems)),
        per_symbol=tuple(
            _symbol_scores(frames, frames.symbol_index == k, labels, predictions, ask, bid)
            for k in np.unique(frames.symbol_index)
        ),
    )
    return report, FramePredictions(frames, probabilities, predictions)


def _symbol_scores(
    frames: Dataset,
    rows: np.ndarray,
    labels: np.ndarray,
    predictions: np.ndarray,
    ask: np.ndarray,
    bid: np.ndarray,
) -> SymbolScores:
    """The model's scores on the scored `frames` of one symbol, those `rows` select."""
    return SymbolScores(
        symbol=frames.symbols[int(frames.symbol_index[rows][0])],
        frames=int(rows.sum()),
        model=classification_metrics(labels[rows], predictions[rows]),
        ask_auc=ranking_auc(ask[rows], frames.ask_run[rows]),
        bid_auc=ranking_auc(bid[rows], frames.bid_run[rows]),
    )


def label_config_of(classifier: LayaClassifier) -> LabelConfig:
    """The label parameters the classifier's model was trained with."""
    assert classifier.model_metadata is not None
    return LabelConfig.from_metadata(classifier.model_metadata.label_parameters)


def training_notes(
    recordings: Sequence[str | os.PathLike[str]],
    digests: Sequence[str],
    metadata: LayaModelMetadata,
    all_frames: bool,
) -> tuple[str, ...]:
    """A line for each recording the model's card lists among its training data: by content
    digest, or by name for a model whose card has none (one trained before they were kept)."""
    listed = metadata.training_summary.get("recordings")
    trained = listed if isinstance(listed, list) else []
    kept = {item.get("content_digest") for item in trained if isinstance(item, dict)}
    named = {
        item.get("name")
        for item in trained
        if isinstance(item, dict) and not item.get("content_digest")
    }
    scored = "every frame of it" if all_frames else "its hold-out (the final fit used it all)"
    lines = []
    for path, digest in zip(recordings, digests, strict=True):
        if digest in kept:
            how = "the model was trained on it (its card lists this content)"
        elif Path(path).name in named:
            how = "the model was trained on a recording of this name (its card lists it)"
        else:
            continue
        lines.append(f"{Path(path).name}: {how}, so {scored} is not unseen data")
    return tuple(lines)


def evaluate(
    recordings: Sequence[str | os.PathLike[str]],
    model_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    config: EvalConfig | None = None,
    *,
    predictions_out: str | os.PathLike[str] | None = None,
    force: bool = False,
    on_bytes: Callable[[int], None] | None = None,
    models: Mapping[str, str] = types.MappingProxyType({}),
) -> EvalReport:
    """Evaluate the model at `model_path` on recordings; optionally write the predictions CSV
    (an existing one replaced only with `force`, refused before the work starts). `models`
    ([laya.models]) says which model the engine would run each symbol on."""
    config = config or EvalConfig()
    if predictions_out is not None:
        check_output_file(
            predictions_out,
            f"--predictions-out {predictions_out}",
            force=force,
            inputs=[*recordings, model_path],
        )
    digests = require_distinct_recordings(recordings)
    classifier = started_classifier(model_path)
    try:
        dataset = build_dataset(
            recordings, DatasetConfig(config.symbols, label_config_of(classifier)), on_bytes
        )
        report, predictions = evaluate_dataset(dataset, classifier, config, os.fspath(model_path))
        assert classifier.model_metadata is not None
        report = dataclasses.replace(
            report,
            trained_on=training_notes(
                recordings, digests, classifier.model_metadata, config.all_frames
            ),
            symbol_models=tuple(
                (symbol, str(model_for(symbol, models, Path(model_path))))
                for symbol in dataset.symbols
            ),
        )
    finally:
        classifier.stop()
    if predictions_out is not None:
        predictions.write_csv(predictions_out)
    return report


@dataclass(frozen=True, slots=True)
class BurstWarningReport:
    """How often EMERGENCY came ahead of the simulator's informed bursts.

    A burst is caught when the model said EMERGENCY on a frame of the burst's symbol inside
    its lead window [burst start, jump start], before the price jumped. `lead_ms` are the
    times from the first such verdict to the jump. False alarms are EMERGENCY verdicts (any
    symbol) farther than the label horizon from every burst, per simulated minute; some of
    them are natural moves that were labelled EMERGENCY too.
    """

    seed: int
    minutes: float
    bursts: int
    caught: int
    lead_ms: tuple[int, ...]
    false_alarms_per_minute: float

    @property
    def fraction_caught(self) -> float:
        return self.caught / self.bursts if self.bursts else 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "seed": self.seed,
            "minutes": self.minutes,
            "bursts": self.bursts,
            "caught": self.caught,
            "fraction_caught": self.fraction_caught,
            "median_lead_ms": float(np.median(self.lead_ms)) if self.lead_ms else None,
            "false_alarms_per_minute": self.false_alarms_per_minute,
        }


def burst_warnings(
    model_path: str | os.PathLike[str], minutes: float, seed: int
) -> BurstWarningReport:
    """Run the model over a fresh simulated market (default generator settings, `seed`)."""
    classifier = started_classifier(model_path)
    try:
        with tempfile.TemporaryDirectory(prefix="laya-bursts-") as folder:
            recording = simulate_recording(Path(folder) / "bursts.gz", minutes, seed)
            dataset = build_dataset(
                [recording.path], DatasetConfig(labels=label_config_of(classifier))
            )
        _, predictions = classify(classifier, dataset.features)
    finally:
        classifier.stop()
    emergency = predictions == Verdict.EMERGENCY
    ts = dataset.exchange_ts_ms
    horizon = dataset.label_config.horizon_ms
    near_burst = np.zeros(ts.shape, dtype=bool)
    lead_ms = []
    for burst in recording.bursts:
        symbol = dataset.symbols.index(burst.symbol)
        warned = emergency & (dataset.symbol_index == symbol)
        warned &= (ts >= burst.start_ms) & (ts <= burst.jump_start_ms)
        if warned.any():
            lead_ms.append(int(burst.jump_start_ms - ts[warned].min()))
        near_burst |= (ts >= burst.start_ms - horizon) & (ts <= burst.jump_end_ms + horizon)
    return BurstWarningReport(
        seed=seed,
        minutes=minutes,
        bursts=len(recording.bursts),
        caught=len(lead_ms),
        lead_ms=tuple(lead_ms),
        false_alarms_per_minute=float((emergency & ~near_burst).sum() / minutes),
    )


def eval_command(
    recordings: Sequence[str],
    model_path: str | os.PathLike[str] = DEFAULT_MODEL_PATH,
    *,
    json_output: bool = False,
    predictions_out: str | None = None,
    force: bool = False,
    all_frames: bool = False,
    symbols: tuple[str, ...] | None = None,
    models: Mapping[str, str] = types.MappingProxyType({}),
) -> str:
    """What `hft-console eval` prints: the text table, or one JSON object."""
    report = evaluate(
        recordings,
        model_path,
        EvalConfig(all_frames=all_frames, symbols=symbols),
        predictions_out=predictions_out,
        force=force,
        models=models,
    )
    return json.dumps(report.as_dict()) if json_output else report.format_table()
