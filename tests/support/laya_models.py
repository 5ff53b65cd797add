"""Small Laya models on the engine's own features, exported as the lab exports them."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np

from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import SCHEMES, LabelConfig
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


NEWER_LABEL_VERSION = len(SCHEMES) + 1
"""A label version from an engine newer than this one."""


def with_metadata(path: Path, **entries: str | None) -> Path:
    """The model at `path` with its `laya.<key>` metadata entries set to these JSON texts (None:
    removed), as an older or newer engine's file, or a damaged one, would hold them."""
    import onnx
    from onnx import helper

    model = onnx.load(str(path))
    props = {entry.key: entry.value for entry in model.metadata_props}
    for key, text in entries.items():
        props.pop(f"laya.{key}", None)
        if text is not None:
            props[f"laya.{key}"] = text
    del model.metadata_props[:]
    helper.set_model_props(model, props)
    onnx.save(model, str(path))
    return path
