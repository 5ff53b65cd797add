"""Laya training: the pieces on synthetic matrices, then train -> eval end to end on a short
simulated recording."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.lab.dataset import DatasetConfig, build_dataset
from engine.lab.evaluate import classification_metrics
from engine.lab.labels import LabelConfig
from engine.lab.train import (
    GATE_SUFFIX,
    MODEL_FEATURES,
    RULE_FEATURES,
    CandidateSpec,
    MlpConfig,
    SimulationConfig,
    TrainConfig,
    choose_verdicts,
    class_weights,
    fit_candidate,
    fit_mlp,
    mirrored,
    standardisation,
    train,
    tune_thresholds,
)
from engine.laya.classifier import LayaClassifier, LayaClassifierConfig, choose_verdict
from engine.laya.features import (
    FEATURE_COUNT,
    FEATURE_NAMES,
    FEATURE_SET_VERSION,
    MIRROR_SIGN,
    MIRROR_SOURCE,
)
from engine.laya.model import LayaModelMetadata, export_mlp, read_metadata
from engine.laya.verdict import Verdict
from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording

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


def _synthetic(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Feature 0 decides the lean, a high feature 1 means EMERGENCY; the rest is noise."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((rows, FEATURE_COUNT)).astype(np.float32)
    labels = np.full(rows, HOLD)
    labels[features[:, 0] > 0.8] = BUY
    labels[features[:, 0] < -0.8] = SELL
    labels[features[:, 1] > 1.6] = EMERGENCY
    return features, labels


def _metadata(thresholds=(0.0, 0.0, 0.0, 0.0)):
    return LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=LabelConfig().as_metadata(),
        thresholds=thresholds,
        training_summary={},
    )


def _onnx_probabilities(path, features):
    classifier = LayaClassifier(LayaClassifierConfig(model_path=path, prefer_gpu=False))
    classifier.start()
    try:
        return classifier.infer(np.ascontiguousarray(features, np.float32))
    finally:
        classifier.stop()


@pytest.mark.parametrize("hidden", [(16,), ()])
def test_fit_mlp_learns_and_its_onnx_export_computes_the_same(tmp_path, hidden):
    fit_x, fit_y = _synthetic(8_000, 0)
    validation_x, validation_y = _synthetic(2_000, 1)
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
        _metadata(thresholds),
        input_mean=mean,
        input_scale=scale,
    )
    np.testing.assert_allclose(
        _onnx_probabilities(path, validation_x[:256]), probabilities[:256], atol=1e-5
    )


def test_fit_mlp_without_validation_runs_every_epoch():
    fit_x, fit_y = _synthetic(1_000, 2)
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


def test_tune_thresholds_keeps_to_a_pull_budget():
    """The best macro-F1 pulls on a third of the frames; a 10% budget is kept."""
    rng = np.random.default_rng(2)
    rows = 6_000
    labels = rng.choice([HOLD, BUY, SELL], size=rows, p=[0.6, 0.2, 0.2])
    noise = rng.dirichlet(np.ones(4), rows)
    probabilities = 0.5 * noise + 0.5 * np.eye(4)[labels]
    free = choose_verdicts(probabilities, tune_thresholds(probabilities, labels))
    assert np.mean(free != HOLD) > 0.3
    budget = tune_thresholds(probabilities, labels, max_pull_rate=0.1)
    pulls = np.mean(choose_verdicts(probabilities, budget) != HOLD)
    assert 0.05 < pulls <= 0.1


def test_the_mirror_image_swaps_sides_and_twice_is_the_original():
    features, labels = _synthetic(50, 3)
    weights = np.arange(50.0)
    both, both_labels, both_weights = mirrored(features, labels, weights)
    np.testing.assert_array_equal(both[:50], features)
    np.testing.assert_array_equal(both[50:], features[:, MIRROR_SOURCE] * MIRROR_SIGN)
    np.testing.assert_array_equal(both[50:][:, MIRROR_SOURCE] * MIRROR_SIGN, features)
    swapped = {HOLD: HOLD, BUY: SELL, SELL: BUY, EMERGENCY: EMERGENCY}
    assert both_labels[50:].tolist() == [swapped[label] for label in labels.tolist()]
    np.testing.assert_array_equal(both_weights, np.r_[weights, weights])


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: TrainConfig(class_weight_power=2.0), "class_weight_power"),
        (lambda: TrainConfig(gate_pull_rate=0.0), "gate_pull_rate"),
        (lambda: TrainConfig(candidate="forest"), "none of rule"),
        (lambda: TrainConfig(candidates=()), "distinct names"),
        (lambda: CandidateSpec("x", ("no_such_feature",), MlpConfig()), "distinct features"),
        (lambda: CandidateSpec("x", ("obi_5", "obi_5"), MlpConfig()), "distinct features"),
        (lambda: MlpConfig(hidden_layers=(0,)), "hidden_layers"),
        (lambda: MlpConfig(learning_rate=0), "learning_rate"),
        (lambda: SimulationConfig(share=0), "share"),
    ],
)
def test_configs_are_validated(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()


QUICK_LABELS = LabelConfig(min_sigma_samples=50)
QUICK_CANDIDATES = (
    CandidateSpec("rule", RULE_FEATURES, MlpConfig(hidden_layers=(), epochs=3)),
    CandidateSpec("mlp", MODEL_FEATURES, MlpConfig(hidden_layers=(8,), epochs=3)),
)


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    folder = tmp_path_factory.mktemp("laya-train")
    market = MarketGeneratorConfig(burst_rate_per_min=3.0)
    return [
        simulate_recording(folder / f"session-{seed}.gz", 2.5, seed=seed, market=market).path
        for seed in (5, 6)
    ]


def test_a_candidate_is_tuned_out_of_session_and_exports_what_it_computes(sessions, tmp_path):
    datasets = [build_dataset([path], DatasetConfig(labels=QUICK_LABELS)) for path in sessions]
    config = TrainConfig(candidates=QUICK_CANDIDATES, progress=False)
    fitted = fit_candidate(QUICK_CANDIDATES[0], datasets, config)
    assert fitted.thresholds_from.startswith("out-of-session")
    assert fitted.thresholds == fitted.f1_thresholds != fitted.gate_thresholds
    assert fitted.at_gate().thresholds == fitted.gate_thresholds
    features = np.asarray(datasets[0].features[:300])
    path = fitted.export(tmp_path / "rule.onnx", _metadata(fitted.thresholds))
    np.testing.assert_allclose(
        _onnx_probabilities(path, features), fitted.probabilities(features), atol=1e-5
    )
    # The features it does not read have no weight: changing one changes nothing.
    unread = FEATURE_NAMES.index("spread_bps")
    changed = features.copy()
    changed[:, unread] += 100.0
    np.testing.assert_allclose(
        _onnx_probabilities(path, changed), _onnx_probabilities(path, features)
    )
    alone = fit_candidate(QUICK_CANDIDATES[0], datasets[:1], config)
    assert alone.thresholds_from.startswith("in-sample")


def test_train_validates_leave_one_session_out_then_ships_by_the_backtest(sessions, tmp_path):
    config = TrainConfig(
        dataset=DatasetConfig(labels=QUICK_LABELS),
        candidates=QUICK_CANDIDATES,
        backtest=True,
        backtest_jobs=2,
        latency_frames=50,
        progress=False,
    )
    out = tmp_path / "models" / "laya-test.onnx"
    report = train(sessions, out, config)

    assert out.is_file() and report.card_path == tmp_path / "models" / "laya-test.md"
    assert [fold.left_out for fold in report.folds.folds] == [path.name for path in sessions]
    names = ("rule", "rule" + GATE_SUFFIX, "mlp", "mlp" + GATE_SUFFIX)
    assert report.folds.names() == ("majority", "imbalance", "imbalance + jump", *names)
    assert len(report.savings) == 2
    assert all({run.name for run in item.candidates} == set(names) for item in report.savings)
    assert report.choice in names
    metadata = read_metadata(out)
    assert metadata.feature_set_version == FEATURE_SET_VERSION
    assert metadata.model_family == "mlp" and metadata.thresholds == report.fitted.thresholds
    assert metadata.label_parameters == QUICK_LABELS.as_metadata()
    summary = metadata.training_summary
    assert summary["candidate"] == report.choice
    assert set(summary["folds"]) == {path.name for path in sessions}
    probabilities = _onnx_probabilities(out, np.zeros((1, FEATURE_COUNT)))
    assert probabilities.shape == (1, 4)

    card = report.card_path.read_text()
    for heading in (
        "## Data",
        "## Labels",
        "## Leave-one-session-out",
        "## Backtest on each left-out session",
        "## Choice",
        "## Targets",
    ):
        assert heading in card
    assert "| session-5.gz | imbalance + jump |" in card
    assert "compare on session-6.gz" in card
    assert f"{report.model_bytes:,} bytes" in card
