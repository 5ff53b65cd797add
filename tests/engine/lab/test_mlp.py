"""`engine.lab.mlp`: class weights, standardisation, and a fitted network that learns and
exports to ONNX computing the same."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from laya_training import BUY, EMERGENCY, HOLD, SELL, model_metadata, onnx_probabilities, synthetic

from engine.lab.evaluate import classification_metrics
from engine.lab.mlp import MlpConfig, class_weights, fit_mlp, standardisation
from engine.lab.thresholds import choose_verdicts, tune_thresholds
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.model import export_mlp


def test_class_weights():
    labels = np.array([HOLD] * 80 + [BUY] * 10 + [SELL] * 8 + [EMERGENCY] * 2)
    balanced = class_weights(labels, 1.0)[labels]
    totals = np.bincount(labels, weights=balanced)
    np.testing.assert_allclose(totals, totals[0])
    np.testing.assert_allclose(class_weights(labels, 0.0), 1.0)
    tempered = class_weights(labels, 0.5)
    assert tempered[EMERGENCY] / tempered[HOLD] == pytest.approx(np.sqrt(80 / 2))
    assert balanced.mean() == pytest.approx(1.0)
    # Frame weights count as frames: the first half of HOLD weighing 3 is 120 HOLD frames.
    weights = np.where(np.arange(labels.size) < 40, 3.0, 1.0)
    weighted = class_weights(labels, 1.0, weights)
    assert weighted[EMERGENCY] / weighted[HOLD] == pytest.approx(160 / 2)
    assert np.average(weighted[labels], weights=weights) == pytest.approx(1.0)


def test_standardisation_leaves_constant_features_unscaled():
    features = np.column_stack([np.arange(10.0), np.full(10, 7.0)])
    mean, scale = standardisation(features)
    np.testing.assert_allclose(mean, [4.5, 7.0])
    np.testing.assert_allclose(scale, [np.std(np.arange(10.0)), 1.0])
    weighted_mean, _ = standardisation(features, np.r_[np.zeros(5), np.ones(5)])
    np.testing.assert_allclose(weighted_mean, [7.0, 7.0])


@pytest.mark.parametrize("hidden", [(16,), ()])
def test_fit_mlp_learns_and_its_onnx_export_computes_the_same(tmp_path, hidden):
    fit_x, fit_y = synthetic(8_000, 0)
    validation_x, validation_y = synthetic(2_000, 1)
    mean, scale = standardisation(fit_x)
    weights = class_weights(fit_y, 0.5)
    fitted = fit_mlp(
        (fit_x - mean) / scale,
        fit_y,
        weights[fit_y],
        ((validation_x - mean) / scale, validation_y, weights[validation_y]),
        MlpConfig(hidden_layers=hidden, epochs=30, learning_rate=3e-3, weight_decay=1e-3),
    )
    probabilities = fitted.predict_proba((validation_x - mean) / scale)
    thresholds = tune_thresholds(probabilities, validation_y)
    metrics = classification_metrics(validation_y, choose_verdicts(probabilities, thresholds))
    # A linear softmax cannot carve |x| > 0.8 out of one feature as well as a hidden layer.
    assert metrics.macro_f1 > (0.75 if hidden else 0.6)
    assert 1 <= fitted.best_epoch <= 30
    widths = (FEATURE_COUNT, *hidden, 4)
    assert fitted.parameter_count == sum(a * b + b for a, b in itertools.pairwise(widths))
    path = export_mlp(
        tmp_path / "m.onnx",
        fitted.layers,
        model_metadata(thresholds),
        input_mean=mean,
        input_scale=scale,
    )
    np.testing.assert_allclose(
        onnx_probabilities(path, validation_x[:256]), probabilities[:256], atol=1e-5
    )


def test_fit_mlp_without_validation_runs_every_epoch():
    fit_x, fit_y = synthetic(1_000, 2)
    epochs = []
    fitted = fit_mlp(
        fit_x,
        fit_y,
        np.ones(fit_y.size),
        None,
        MlpConfig(hidden_layers=(), epochs=4),
        lambda epoch, loss: epochs.append(epoch),
    )
    assert epochs == [1, 2, 3, 4] and fitted.best_epoch == 4


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: MlpConfig(hidden_layers=(0,)), "hidden_layers"),
        (lambda: MlpConfig(learning_rate=0), "learning_rate"),
    ],
)
def test_mlp_configs_are_validated(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()
