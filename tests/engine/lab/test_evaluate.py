"""Laya evaluation: metrics and baselines on constructed cases, the predictions CSV, and the
whole `evaluate` run over a short simulated recording with a small exported model."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from engine.lab.dataset import (
    DatasetConfig,
    TimeSplitConfig,
    build_dataset,
    split_by_time,
)
from engine.lab.evaluate import (
    JUMP_FEATURE,
    PREDICTIONS_HEADER,
    EvalConfig,
    classification_metrics,
    eval_command,
    evaluate,
    fit_imbalance_jump,
    fit_imbalance_tau,
    imbalance_jump_rule,
    imbalance_rule,
    majority_class,
    ranking_auc,
)
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.labels import LabelConfig
from engine.laya.model import LayaModelMetadata, export_mlp
from engine.laya.verdict import CLASS_NAMES, Verdict
from engine.sim.market import sim_book
from engine.sim.recording import simulate_recording
from engine.user_files import content_digest

HOLD, BUY, SELL, EMERGENCY = Verdict
QUICK_LABELS = LabelConfig(min_sigma_samples=50)


def test_metrics_on_a_hand_computed_case():
    labels = np.array([HOLD, HOLD, HOLD, BUY, BUY, SELL, EMERGENCY, EMERGENCY])
    predictions = np.array([HOLD, HOLD, BUY, BUY, HOLD, SELL, EMERGENCY, HOLD])
    metrics = classification_metrics(labels, predictions)
    assert metrics.confusion.tolist() == [[2, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]]
    np.testing.assert_allclose(metrics.precision, [2 / 4, 1 / 2, 1, 1])
    np.testing.assert_allclose(metrics.recall, [2 / 3, 1 / 2, 1, 1 / 2])
    f1 = [2 * (0.5 * 2 / 3) / (0.5 + 2 / 3), 0.5, 1.0, 2 * 0.5 / 1.5]
    np.testing.assert_allclose(metrics.f1, f1)
    assert metrics.macro_f1 == pytest.approx(np.mean(f1))
    assert metrics.accuracy == pytest.approx(5 / 8)


def test_a_class_never_predicted_nor_true_scores_zero():
    metrics = classification_metrics(np.array([HOLD, BUY]), np.array([HOLD, BUY]))
    np.testing.assert_allclose(metrics.f1, [1, 1, 0, 0])
    assert metrics.macro_f1 == pytest.approx(0.5)


def test_weights_count_frames_in_the_confusion():
    labels = np.array([HOLD, BUY, BUY])
    weighted = classification_metrics(labels, np.array([HOLD, HOLD, BUY]), np.array([1, 3, 1.0]))
    assert weighted.confusion[BUY].tolist() == [3, 1, 0, 0]
    assert weighted.recall[BUY] == pytest.approx(0.25)


def test_metrics_reject_values_outside_the_classes():
    with pytest.raises(ValueError, match="Verdict values"):
        classification_metrics(np.array([0, 4]), np.array([0, 1]))


def test_majority_class():
    assert majority_class(np.array([SELL, SELL, HOLD, EMERGENCY])) is Verdict.LEAN_SELL
    assert majority_class(np.array([BUY, HOLD])) is Verdict.HOLD  # ties: lower value


def test_imbalance_rule():
    obi = np.array([0.5, 0.2, -0.2, -0.5, 0.3, -0.3])
    predicted = imbalance_rule(obi, 0.3)
    assert predicted.tolist() == [BUY, HOLD, HOLD, SELL, HOLD, HOLD]


def test_imbalance_jump_rule_calls_emergency_on_a_jump():
    obi = np.array([0.9, -0.9, 0.1, 0.1, 0.9, 0.0])
    jump = np.array([0.0, 0.0, 0.0, 5.0, 6.0, 1.0])
    verdicts = imbalance_jump_rule(obi, jump, 0.5, 4.0)
    assert verdicts.tolist() == [BUY, SELL, HOLD, EMERGENCY, EMERGENCY, HOLD]
    labels = np.array([BUY, SELL, HOLD, EMERGENCY, EMERGENCY, HOLD] * 20)
    tau, jump_at = fit_imbalance_jump(np.tile(obi, 20), np.tile(jump, 20), labels)
    predicted = imbalance_jump_rule(np.tile(obi, 20), np.tile(jump, 20), tau, jump_at)
    assert classification_metrics(labels, predicted).macro_f1 == 1.0


def test_imbalance_tau_maximises_training_macro_f1():
    # Strong imbalance (|obi| >= 0.6) goes with a lean in its direction, weak with HOLD: any
    # tau in [0.4, 0.6) separates them perfectly, and the smallest such candidate wins.
    obi = np.array([0.9, 0.7, 0.6, -0.6, -0.8, 0.4, 0.1, -0.3, -0.4, 0.0])
    labels = np.array([BUY, BUY, BUY, SELL, SELL, HOLD, HOLD, HOLD, HOLD, HOLD])
    tau = fit_imbalance_tau(obi, labels)
    assert 0.4 <= tau < 0.6
    assert classification_metrics(labels, imbalance_rule(obi, tau)).f1[:3].tolist() == [1, 1, 1]
    # A tau that lets weak imbalance lean scores worse.
    assert (
        classification_metrics(labels, imbalance_rule(obi, 0.2)).macro_f1
        < classification_metrics(labels, imbalance_rule(obi, tau)).macro_f1
    )


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    path = tmp_path_factory.mktemp("laya-eval") / "sim.gz"
    return simulate_recording(path, 2.0, seed=11).path


def random_model(path, training_summary):
    """A small random MLP with the engine's feature set: enough to exercise the evaluation."""
    rng = np.random.default_rng(0)
    layers = [
        (rng.normal(0, 0.3, (FEATURE_COUNT, 8)), rng.normal(0, 0.1, 8)),
        (rng.normal(0, 0.3, (8, 4)), np.array([1.0, 0.0, 0.0, -1.0])),
    ]
    metadata = LayaModelMetadata(
        feature_set_version=FEATURE_SET_VERSION,
        feature_count=FEATURE_COUNT,
        label_parameters=QUICK_LABELS.as_metadata(),
        thresholds=(0.0, 0.3, 0.3, 0.2),
        training_summary=training_summary,
    )
    return export_mlp(path, layers, metadata)


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return random_model(tmp_path_factory.mktemp("laya-model") / "random.onnx", {"test": True})


def test_evaluate_scores_model_and_baselines_on_the_holdout(recording, model_path, tmp_path):
    csv_path = tmp_path / "predictions.csv"
    report = evaluate([recording], model_path, predictions_out=csv_path)

    dataset = build_dataset([recording], DatasetConfig(labels=QUICK_LABELS))
    split = split_by_time(dataset.recording_index, dataset.exchange_ts_ms, TimeSplitConfig())
    train = split.train & dataset.labelled
    holdout = split.holdout & dataset.labelled
    assert report.scope == "hold-out"
    assert report.frames == holdout.sum()
    assert report.thresholds == (0.0, 0.3, 0.3, 0.2)
    labels = dataset.labels[holdout]
    assert report.majority_class == majority_class(dataset.labels[train])
    assert report.imbalance_tau == fit_imbalance_tau(dataset.obi5[train], dataset.labels[train])
    expected = classification_metrics(
        labels, imbalance_rule(dataset.obi5[holdout], report.imbalance_tau)
    )
    np.testing.assert_array_equal(report.imbalance.confusion, expected.confusion)
    np.testing.assert_array_equal(report.model.support, np.bincount(labels, minlength=4))
    jump = dataset.features[:, JUMP_FEATURE]
    tau, jump_at = fit_imbalance_jump(dataset.obi5[train], jump[train], dataset.labels[train])
    assert (report.rule_tau, report.rule_jump_sigmas) == (tau, jump_at)
    rule = imbalance_jump_rule(dataset.obi5[holdout], jump[holdout], tau, jump_at)
    np.testing.assert_array_equal(
        report.imbalance_jump.confusion, classification_metrics(labels, rule).confusion
    )
    assert 0.0 <= report.ask_auc <= 1.0 and 0.0 <= report.bid_auc <= 1.0

    with open(csv_path, newline="") as file:
        rows = list(csv.reader(file))
    assert rows[0] == list(PREDICTIONS_HEADER)
    assert ",".join(rows[0]) == (
        "symbol,exchange_ts_ms,label,prediction,p_hold,p_lean_buy,p_lean_sell,p_emergency"
    )
    body = rows[1:]
    assert len(body) == report.frames
    assert [row[0] for row in body] == list(dataset.symbol_names[holdout])
    assert [int(row[1]) for row in body] == dataset.exchange_ts_ms[holdout].tolist()
    assert [row[2] for row in body] == [CLASS_NAMES[label] for label in labels]
    predicted = [CLASS_NAMES.index(row[3]) for row in body]
    assert np.bincount(predicted, minlength=4).tolist() == report.model.predicted.tolist()
    probabilities = np.array([[float(value) for value in row[4:]] for row in body])
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)


def test_eval_command_prints_a_table_or_json(recording, model_path):
    table = eval_command([str(recording)], model_path)
    assert "macro-F1" in table and "imbalance (tau" in table and "EMERGENCY" in table
    assert "imbalance + jump (tau" in table and "ask run over" in table
    everything = json.loads(
        eval_command([str(recording)], model_path, json_output=True, all_frames=True)
    )
    assert everything["scope"] == "all frames"
    assert set(everything["baselines"]) == {"majority", "imbalance", "imbalance_jump"}
    assert {"ask_auc", "bid_auc", "emergency_auc"} <= set(everything["model"])
    assert set(everything["model"]["classes"]) == set(CLASS_NAMES)
    holdout = evaluate([recording], model_path, EvalConfig())
    assert everything["frames"] > holdout.frames


def test_eval_scores_each_symbol_of_a_book(model_path, tmp_path):
    book = ("SOLUSDT", "ETHUSDT", "XRPUSDT")
    market = sim_book(book, seed=11)
    path = simulate_recording(tmp_path / "book.gz", 2.0, seed=11, market=market).path
    report = evaluate([path], model_path)
    symbols = [*book, "BTCUSDT"]  # the hedge, the book's leader, last
    assert [scores.symbol for scores in report.per_symbol] == symbols
    assert all(scores.frames for scores in report.per_symbol)
    assert sum(scores.frames for scores in report.per_symbol) == report.frames
    np.testing.assert_array_equal(
        sum(scores.model.confusion for scores in report.per_symbol), report.model.confusion
    )
    figures = report.as_dict()["per_symbol"]
    assert list(figures) == symbols
    sol = report.per_symbol[0]
    assert figures["SOLUSDT"]["frames"] == sol.frames
    assert figures["SOLUSDT"]["macro_f1"] == sol.model.macro_f1
    assert figures["SOLUSDT"]["ask_auc"] == sol.ask_auc
    table = report.format_table().splitlines()
    assert table[-5] == "model per symbol: frames, macro-F1, ask / bid run over AUC:"
    assert table[-4] == (
        f"  SOLUSDT  {sol.frames:8d}  {sol.model.macro_f1:.3f}  {sol.ask_auc:.3f} / "
        f"{sol.bid_auc:.3f}"
    )
    assert [line.split()[0] for line in table[-4:]] == symbols


def test_eval_says_what_was_wrong_with_a_recording(recording, model_path, tmp_path):
    whole = recording.read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    table = eval_command([str(cut)], model_path).splitlines()
    assert table[2].startswith(f"recording: {cut}: truncated at byte {len(whole) * 2 // 3:,}")
    figures = json.loads(eval_command([str(cut)], model_path, json_output=True))
    assert figures["recording_problems"] == [table[2].removeprefix("recording: ")]
    clean = json.loads(eval_command([str(recording)], model_path, json_output=True))
    assert clean["recording_problems"] == []


def test_ranking_auc():
    positives = np.array([True, True, False, False, False])
    assert ranking_auc(np.array([0.9, 0.8, 0.1, 0.2, 0.3]), positives) == 1.0
    assert ranking_auc(np.array([0.1, 0.2, 0.9, 0.8, 0.3]), positives) == 0.0
    # The positive at 0.5 ties one negative (half a pair) and beats one: (3 + 1.5) / 6.
    assert ranking_auc(np.array([0.9, 0.5, 0.5, 0.6, 0.1]), positives) == pytest.approx(4.5 / 6)
    assert np.isnan(ranking_auc(np.array([0.1, 0.2]), np.array([False, False])))


def test_eval_says_when_a_recording_is_in_the_models_training_data(recording, tmp_path):
    copy = tmp_path / "renamed.gz"
    copy.write_bytes(recording.read_bytes())
    listed = [{"name": "other.gz", "content_digest": content_digest(recording)}]
    trained = random_model(tmp_path / "trained.onnx", {"recordings": listed})
    report = evaluate([copy], trained)
    assert report.trained_on == (
        "renamed.gz: the model was trained on it (its card lists this content), so its "
        "hold-out (the final fit used it all) is not unseen data",
    )
    assert report.format_table().splitlines()[2] == f"note: {report.trained_on[0]}"
    assert json.loads(eval_command([str(copy)], trained, json_output=True))["trained_on"] == [
        report.trained_on[0]
    ]
    # A card from before the digests were kept names its recordings only.
    by_name = random_model(tmp_path / "old.onnx", {"recordings": [{"name": recording.name}]})
    (note,) = evaluate([recording], by_name, EvalConfig(all_frames=True)).trained_on
    assert note == (
        f"{recording.name}: the model was trained on a recording of this name (its card lists "
        "it), so every frame of it is not unseen data"
    )
    other = random_model(tmp_path / "other.onnx", {"recordings": [{"name": "x.gz"}]})
    assert evaluate([recording], other).trained_on == ()
