"""The candidates training compares: the features each reads and its network; a fitted one's
probabilities, verdicts and ONNX export; the mirror images training adds."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.lab.mlp import MlpConfig, MlpFit
from engine.lab.thresholds import choose_verdicts
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.features import FEATURE_NAMES, MIRROR_SIGN, MIRROR_SOURCE, VENUE_SCALED_FEATURES
from engine.laya.model import LayaModelMetadata, export_mlp
from engine.laya.verdict import Verdict

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
_MIRROR_LABELS = np.array([Verdict.HOLD, Verdict.LEAN_SELL, Verdict.LEAN_BUY, Verdict.EMERGENCY])


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
IMBALANCE_RULE = CandidateSpec("imbalance", ("obi_5",), LINEAR)
"""The imbalance rule as a model (the top-5 imbalance alone): what ships when no candidate
out-ranks the rule on every fold. Its fold scores are the imbalance baseline's, which it ranks
as (its side scores rise with the imbalance)."""
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
