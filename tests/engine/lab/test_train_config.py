"""`engine.lab.train_config`: what `train` does is checked when it is made."""

from __future__ import annotations

import pytest

from engine.lab.candidates import IMBALANCE_RULE
from engine.lab.train_config import SimulationConfig, TrainConfig


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: TrainConfig(class_weight_power=2.0), "class_weight_power"),
        (lambda: TrainConfig(gate_pull_rate=0.0), "gate_pull_rate"),
        (lambda: TrainConfig(candidate="forest"), "none of rule"),
        (lambda: TrainConfig(candidates=()), "distinct names"),
        (lambda: TrainConfig(candidates=(IMBALANCE_RULE,)), "'imbalance' is the rule's name"),
        (lambda: TrainConfig(block_ms=1_000), "block_ms"),
        (lambda: SimulationConfig(share=0), "share"),
    ],
)
def test_train_configs_are_validated(factory, message):
    with pytest.raises(ValueError, match=message):
        factory()
