"""Laya training: the pieces on synthetic matrices, then train -> eval end to end on a short
simulated recording."""

from __future__ import annotations

import numpy as np
import pytest

from engine.laya.classifier import LayaClassifier, LayaClassifierConfig, choose_verdict
from engine.laya.dataset import DatasetConfig, TimeSplitConfig, simulate_recording
from engine.laya.evaluate import classification_metrics, evaluate
from engine.laya.features import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import LabelConfig
from engine.laya.model import EmergencyHead, LayaModelMetadata, export_mlp, read_metadata
from engine.laya.train import (
    LayaFit,
    MlpConfig,
    SimulationConfig,
    TrainConfig,
    TreeConfig,
    choose_verdicts,
    class_weights,
    fit_mlp,
    standardisation,
    train,
    tune_thresholds,
)
from engine.laya.verdict import CLASS_NAMES, Verdict
from engine.sim.market import MarketGeneratorConfig

HOLD, BUY, SELL, EMERGENCY = Verdict


def test_choose_verdicts_is_choose_verdict_for_every_row():
    rng = np.random.default_rng(1)
    probabilities = rng.dirichlet(np.ones(4), 3_000)
    # Exact ties, which the scalar rule settles towards caution.
    probabilities[:40] = [0.3, 0.3, 0.3, 0.1]
    probabilities[40:80] = [0.1, 0.4, 0.4, 0.1]
    probabilities[80:120] = [0.4, 0.1, 0.1, 0.4]
    probabilities[120:160] = [0.2, 0.4, 0.4, 0.0]
    for thresholds in ([0, 0, 0, 0], [0.5, 0.2, 0.3, 0.1], [0.9, 0.9, 0.9, 0.9], [0.3, 0.5, 0, 1]):
        expected = [choose_verdict(row, thresholds) for row in probabilities.tolist()]
        np.testing.assert_array_equal(choose_verdicts(probabilities, thresholds), expected)


def test_class_weights():
    labels = np.array([HOLD] * 80 + [BUY] * 10 + [SELL] * 8 + [EMERGENCY] * 2)
    balanced = class_weights(labels, 1.0)[labels]
    totals = np.bincount(labels, weights=balanced)
    np.testing.assert_allclose(totals, totals[0])
    np.testing.assert_allclose(class_weights(labels, 0.0), 1.0)
    tempered = class_weights(labels, 0.5)
    assert tempered[EMERGENCY] / tempered[HOLD] == pytest.approx(np.sqrt(80 / 2))
    assert balanced.mean() == pytest.approx(1.0)


def test_standardisation_leaves_constant_features_unscaled():
    features = np.column_stack([np.arange(10.0), np.full(10, 7.0)])
    mean, scale = standardisation(features)
    np.testing.assert_allclose(mean, [4.5, 7.0])
    np.testing.assert_allclose(scale, [np.std(np.arange(10.0)), 1.0])


def _synthetic(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature 0 decides the lean, a high feature 1 means EMERGENCY; the rest is noise."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((rows, FEATURE_COUNT)).astype(np.float32)
    labels = np.full(rows, HOLD)
    labels[features[:, 0] > 0.8] = BUY
    labels[features[:, 0] < -0.8] = SELL
    labels[features[:, 1] > 1.6] = EMERGENCY
    return features, labels


def test_fit_mlp_learns_and_its_onnx_export_computes_the_same(tmp_path):
    fit_x, fit_y = _synthetic(8_000, 0)
    validation_x, validation_y = _synthetic(2_000, 1)
    mean, scale = standardisation(fit_x)
    weights = class_weights(fit_y, 0.5)
    fitted = fit_mlp(
        (fit_x - mean) / scale,
        fit_y,
        weights[fit_y],
        (validation_x - mean) / scale,
        validation_y,
        weights[validation_y],
        MlpConfig(hidden_layers=(16,), epochs=30, learning_rate=3e-3, weight_decay=1e-3),
    )
    probabilities = fitted.predict_proba((validation_x - mean) / scale)
    thresholds = tune_thresholds(probabilities, validation_y, min_emergency_recall=0.5)
    metrics = classification_metrics(validation_y, choose_verdicts(probabilities, thresholds))
    assert metrics.macro_f1 > 0.75
    assert metrics.recall[EMERGENCY] >= 0.5
    assert fitted.parameter_count == FEATURE_COUNT * 16 + 16 + 16 * 4 + 4

    metadata = LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=LabelConfig().as_metadata(),
        thresholds=thresholds,
        training_summary={},
    )
    path = export_mlp(
        tmp_path / "m.onnx", fitted.layers, metadata, input_mean=mean, input_scale=scale
    )
    classifier = LayaClassifier(LayaClassifierConfig(model_path=path, prefer_gpu=False))
    classifier.start()
    try:
        onnx_probabilities = classifier.infer(validation_x[:256])
    finally:
        classifier.stop()
    np.testing.assert_allclose(onnx_probabilities, probabilities[:256], atol=1e-5)


def test_an_emergency_head_on_its_own_features_learns_and_exports_the_same(tmp_path):
    fit_x, fit_y = _synthetic(8_000, 3)
    validation_x, validation_y = _synthetic(2_000, 4)
    mean, scale = standardisation(fit_x)
    fit_z, validation_z = (fit_x - mean) / scale, (validation_x - mean) / scale
    head_inputs = (1, 5, 9)  # feature 1 decides EMERGENCY; 5 and 9 are noise
    emergency = (fit_y == EMERGENCY).astype(np.int64)
    head_weights = class_weights(emergency, 0.5)
    config = MlpConfig(hidden_layers=(8,), epochs=30, learning_rate=3e-3, weight_decay=1e-3)
    head = fit_mlp(
        fit_z[:, head_inputs],
        emergency,
        head_weights[emergency],
        validation_z[:, head_inputs],
        (validation_y == EMERGENCY).astype(np.int64),
        np.ones(validation_y.size),
        config,
        classes=2,
    )
    others = fit_y != EMERGENCY
    main_weights = class_weights(fit_y[others], 0.5)
    main = fit_mlp(
        fit_z[others],
        fit_y[others],
        main_weights[fit_y[others]],
        validation_z[validation_y != EMERGENCY],
        validation_y[validation_y != EMERGENCY],
        np.ones(int((validation_y != EMERGENCY).sum())),
        config,
        classes=3,
    )
    model = LayaFit(main, head, head_inputs)
    probabilities = model.predict_proba(validation_z)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    thresholds = tune_thresholds(probabilities, validation_y, min_emergency_recall=0.5)
    metrics = classification_metrics(validation_y, choose_verdicts(probabilities, thresholds))
    assert metrics.macro_f1 > 0.75 and metrics.f1[EMERGENCY] > 0.75

    metadata = LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=LabelConfig().as_metadata(),
        thresholds=thresholds,
        training_summary={},
        model_family="mlp+emergency-head",
    )
    path = export_mlp(
        tmp_path / "m.onnx",
        main.layers,
        metadata,
        input_mean=mean,
        input_scale=scale,
        emergency_head=EmergencyHead(head_inputs, model.head_layers()),
    )
    classifier = LayaClassifier(LayaClassifierConfig(model_path=path, prefer_gpu=False))
    classifier.start()
    try:
        onnx_probabilities = classifier.infer(validation_x[:256])
    finally:
        classifier.stop()
    np.testing.assert_allclose(onnx_probabilities, probabilities[:256], atol=1e-5)


def test_tune_thresholds_keeps_emergency_recall_in_every_group():
    """EMERGENCY is never the most probable class, so argmax misses it; the thresholds must
    gate HOLD out where EMERGENCY is likely, in both groups."""
    rng = np.random.default_rng(2)
    rows = 4_000
    labels = np.where(rng.random(rows) < 0.05, EMERGENCY, HOLD)
    groups = rng.integers(0, 2, rows)
    emergency_score = np.where(labels == EMERGENCY, 0.35, 0.1) + rng.uniform(-0.05, 0.05, rows)
    probabilities = np.column_stack(
        [1 - emergency_score - 0.02, np.full(rows, 0.01), np.full(rows, 0.01), emergency_score]
    )
    assert not np.any(choose_verdicts(probabilities, [0, 0, 0, 0]) == EMERGENCY)
    thresholds = tune_thresholds(probabilities, labels, 0.5, groups=groups)
    predictions = choose_verdicts(probabilities, thresholds)
    for group in (0, 1):
        emergencies = (labels == EMERGENCY) & (groups == group)
        assert np.mean(predictions[emergencies] == EMERGENCY) >= 0.5
    assert classification_metrics(labels, predictions).f1[EMERGENCY] > 0.9


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: TrainConfig(split=TimeSplitConfig(gap_ms=500)), "gap_ms"),
        (lambda: TrainConfig(class_weight_power=2.0), "class_weight_power"),
        (lambda: TrainConfig(mlp_restarts=0), "mlp_restarts"),
        (lambda: TrainConfig(emergency_features=("no_such_feature",)), "emergency_features"),
        (lambda: TrainConfig(emergency_features=()), "emergency_features"),
        (lambda: TrainConfig(emergency_features=("spread_bps",) * 2), "duplicates"),
        (lambda: MlpConfig(hidden_layers=()), "hidden_layers"),
        (lambda: MlpConfig(learning_rate=0), "learning_rate"),
        (lambda: SimulationConfig(share=0), "share"),
        (lambda: TreeConfig(max_leaf_nodes=1), "max_leaf_nodes"),
    ],
)
def test_configs_are_validated(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


def test_train_then_evaluate_end_to_end(tmp_path):
    recording = simulate_recording(
        tmp_path / "sim.gz", 4.0, seed=5, market=MarketGeneratorConfig(burst_rate_per_min=4.0)
    )
    labels = LabelConfig(min_sigma_samples=100)
    config = TrainConfig(
        dataset=DatasetConfig(labels=labels),
        mlp=MlpConfig(hidden_layers=(16, 8), epochs=8),
        trees=TreeConfig(max_iter=20),
        simulation=SimulationConfig(minutes=1.5, seed=9),
        mlp_restarts=2,
        burst_check_minutes=1.0,
        latency_frames=50,
        progress=False,
    )
    out = tmp_path / "models" / "laya-test.onnx"
    report = train([recording.path], out, config)

    assert out.is_file() and report.card_path == tmp_path / "models" / "laya-test.md"
    metadata = read_metadata(out)
    assert metadata.feature_set_version == FEATURE_SET_VERSION
    assert metadata.class_names == CLASS_NAMES
    assert metadata.thresholds == report.thresholds
    assert metadata.label_parameters == labels.as_metadata()
    summary = metadata.training_summary
    assert [item["simulated"] for item in summary["recordings"]] == [False, True]
    assert summary["class_counts"]["fit"]["HOLD"] > 0
    assert metadata.model_family == "mlp+emergency-head"
    assert summary["emergency_head"]["features"] == list(config.emergency_features)
    assert set(report.head_ranking) == {"recorded", "simulated"}

    classifier = LayaClassifier(LayaClassifierConfig(model_path=out, prefer_gpu=False))
    classifier.start()
    probabilities = classifier.infer(np.zeros((1, FEATURE_COUNT), dtype=np.float32))
    classifier.stop()
    assert probabilities.shape == (1, 4)

    # The card's hold-out is the recorded file's; evaluate reproduces it from the model alone.
    again = evaluate([recording.path], out)
    np.testing.assert_array_equal(again.model.confusion, report.holdout.model.confusion)
    assert again.imbalance.macro_f1 == report.holdout.imbalance.macro_f1
    assert report.simulated_holdout is not None
    assert report.trees is not None and report.bursts is not None
    assert 0.0 <= report.bursts.fraction_caught <= 1.0

    card = report.card_path.read_text()
    for heading in ("## Data", "## Labels and split", "## Model choice", "## Hold-out evaluation"):
        assert heading in card
    assert "sim.gz" in card and "imbalance rule" in card
    assert f"{report.model_bytes:,} bytes" in card
