"""`engine.lab.train`: train end to end on two short simulated sessions, validated
leave-one-session-out, shipped by the backtest, with its model card."""

from __future__ import annotations

import numpy as np
from laya_training import QUICK_CANDIDATES, QUICK_LABELS, onnx_probabilities

from engine.lab.candidates import GATE_SUFFIX
from engine.lab.dataset import DatasetConfig
from engine.lab.train import train
from engine.lab.train_config import TrainConfig
from engine.laya.features import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.model import read_metadata
from engine.user_files import content_digest


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
    digests = [content_digest(path) for path in sessions]
    assert [item["content_digest"] for item in summary["recordings"]] == digests
    probabilities = onnx_probabilities(out, np.zeros((1, FEATURE_COUNT)))
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
    assert f"| session-5.gz | `{digests[0][:16]}...` | recorded |" in card
