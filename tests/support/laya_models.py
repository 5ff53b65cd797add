"""Small Laya models on the engine's own features, exported as the lab exports them."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np

from engine.laya.features import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import LabelConfig
from engine.laya.model import LayaModelMetadata, export_mlp


def write_mlp_model(
    path: Path,
    feature_set: str = FEATURE_SET_VERSION,
    seed: int = 3,
    thresholds: tuple[float, ...] = (0.0, 0.3, 0.3, 0.3),
) -> Path:
    """A 128-16-4 MLP with random weights: another model than the shipped one (a shadow), with
    its own `thresholds`."""
    rng = np.random.default_rng(seed)
    layers = [
        (rng.normal(0.0, 0.05, (width_in, width_out)), rng.normal(0.0, 0.1, width_out))
        for width_in, width_out in pairwise((FEATURE_COUNT, 16, 4))
    ]
    metadata = LayaModelMetadata(
        feature_set_version=feature_set,
        feature_count=FEATURE_COUNT,
        label_parameters=LabelConfig().as_metadata(),
        thresholds=thresholds,
        training_summary={"frames": 1},
    )
    return export_mlp(path, layers, metadata)
