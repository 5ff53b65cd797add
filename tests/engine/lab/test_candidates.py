"""`engine.lab.candidates`: the mirror image training adds, and candidates that read distinct
features of the feature set."""

from __future__ import annotations

import numpy as np
import pytest
from laya_training import BUY, EMERGENCY, HOLD, SELL, synthetic

from engine.lab.candidates import CandidateSpec, mirrored
from engine.lab.mlp import MlpConfig
from engine.laya.features import MIRROR_SIGN, MIRROR_SOURCE


def test_the_mirror_image_swaps_sides_and_twice_is_the_original():
    features, labels = synthetic(50, 3)
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
        (lambda: CandidateSpec("x", ("no_such_feature",), MlpConfig()), "distinct features"),
        (lambda: CandidateSpec("x", ("obi_5", "obi_5"), MlpConfig()), "distinct features"),
    ],
)
def test_candidate_specs_are_validated(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()
