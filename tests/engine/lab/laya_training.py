"""Laya training tests' kit: synthetic frames, quick labels and candidates, model metadata, and
a model's probabilities through ONNX Runtime."""

from __future__ import annotations

import numpy as np

from engine.lab.candidates import MODEL_FEATURES, RULE_FEATURES, CandidateSpec
from engine.lab.mlp import MlpConfig
from engine.laya.classifier import LayaClassifier
from engine.laya.config import LayaClassifierConfig
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import LabelConfig
from engine.laya.model import LayaModelMetadata
from engine.laya.verdict import Verdict

HOLD, BUY, SELL, EMERGENCY = Verdict


def synthetic(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature 0 decides the lean, a high feature 1 means EMERGENCY; the rest is noise."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((rows, FEATURE_COUNT)).astype(np.float32)
    labels = np.full(rows, HOLD)
    labels[features[:, 0] > 0.8] = BUY
    labels[features[:, 0] < -0.8] = SELL
    labels[features[:, 1] > 1.6] = EMERGENCY
    return features, labels


def model_metadata(thresholds=(0.0, 0.0, 0.0, 0.0)):
    return LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=LabelConfig().as_metadata(),
        thresholds=thresholds,
        training_summary={},
    )


def onnx_probabilities(path, features):
    classifier = LayaClassifier(LayaClassifierConfig(model_path=path, prefer_gpu=False))
    classifier.start()
    try:
        return classifier.infer(np.ascontiguousarray(features, np.float32))
    finally:
        classifier.stop()


QUICK_LABELS = LabelConfig(min_sigma_samples=50)


QUICK_CANDIDATES = (
    CandidateSpec("rule", RULE_FEATURES, MlpConfig(hidden_layers=(), epochs=3)),
    CandidateSpec("mlp", MODEL_FEATURES, MlpConfig(hidden_layers=(8,), epochs=3)),
)
