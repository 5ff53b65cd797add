"""`engine.lab.thresholds`: the classifier's verdict rule for every row at once, and thresholds
kept to a pull budget."""

from __future__ import annotations

import numpy as np
from laya_training import BUY, HOLD, SELL

from engine.lab.thresholds import choose_verdicts, tune_thresholds
from engine.laya.classifier import choose_verdict


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
