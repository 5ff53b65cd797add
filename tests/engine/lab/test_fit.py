"""`engine.lab.fit`: a candidate tuned out of session on two short simulated sessions."""

from __future__ import annotations

import numpy as np
from laya_training import QUICK_CANDIDATES, QUICK_LABELS, model_metadata, onnx_probabilities

from engine.lab.dataset import DatasetConfig, build_dataset
from engine.lab.fit import fit_candidate
from engine.lab.train_config import TrainConfig
from engine.laya.features import FEATURE_NAMES


def test_a_candidate_is_tuned_out_of_session_and_exports_what_it_computes(sessions, tmp_path):
    datasets = [build_dataset([path], DatasetConfig(labels=QUICK_LABELS)) for path in sessions]
    config = TrainConfig(candidates=QUICK_CANDIDATES, progress=False)
    fitted = fit_candidate(QUICK_CANDIDATES[0], datasets, config)
    assert fitted.thresholds_from.startswith("out-of-session")
    assert fitted.thresholds == fitted.f1_thresholds != fitted.gate_thresholds
    assert fitted.at_gate().thresholds == fitted.gate_thresholds
    features = np.asarray(datasets[0].features[:300])
    path = fitted.export(tmp_path / "rule.onnx", model_metadata(fitted.thresholds))
    np.testing.assert_allclose(
        onnx_probabilities(path, features), fitted.probabilities(features), atol=1e-5
    )
    # The features it does not read have no weight: changing one changes nothing.
    unread = FEATURE_NAMES.index("spread_bps")
    changed = features.copy()
    changed[:, unread] += 100.0
    np.testing.assert_allclose(
        onnx_probabilities(path, changed), onnx_probabilities(path, features)
    )
    alone = fit_candidate(QUICK_CANDIDATES[0], datasets[:1], config)
    assert alone.thresholds_from.startswith("in-sample")
