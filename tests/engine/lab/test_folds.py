"""Leave-one-session-out validation on synthetic sessions: who is fitted on what, the
baselines, the block bootstrap, and the shift of features between sessions."""

from __future__ import annotations

import numpy as np
import pytest

from engine.lab.dataset import Dataset
from engine.lab.evaluate import (
    JUMP_FEATURE,
    fit_imbalance_jump,
    fit_imbalance_tau,
    imbalance_jump_rule,
)
from engine.lab.folds import (
    BootstrapConfig,
    feature_shift,
    fold_table,
    ks_statistic,
    leave_one_session_out,
    market_time_blocks,
    score_fold,
    session_weights,
)
from engine.lab.thresholds import choose_verdicts
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.features import CROSS_FEATURES, FEATURE_NAMES
from engine.laya.labels import LabelConfig
from engine.laya.verdict import Verdict

OBI = FEATURE_NAMES.index("obi_5")
QUICK = BootstrapConfig(block_ms=10_000, resamples=60, seed=1)


def session(name: str, rows: int, seed: int, symbols=("BTCUSDT", "ETHUSDT"), shift=0.0):
    """A session where the imbalance points the way of the next run-over and a jump comes
    before EMERGENCY; `shift` moves every feature (another venue's scale)."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((rows, FEATURE_COUNT)).astype(np.float32) + shift
    obi = np.tanh(rng.standard_normal(rows))
    features[:, OBI] = obi
    jump = rng.exponential(1.0, rows)
    features[:, JUMP_FEATURE] = jump
    labels = np.full(rows, Verdict.HOLD, np.int8)
    labels[obi + 0.3 * rng.standard_normal(rows) > 0.8] = Verdict.LEAN_BUY
    labels[obi + 0.3 * rng.standard_normal(rows) < -0.8] = Verdict.LEAN_SELL
    labels[jump > 3.5] = Verdict.EMERGENCY
    labels[:20] = -1  # the warm-up
    labelled = labels >= 0
    return Dataset(
        recordings=(f"/data/{name}",),
        symbols=symbols,
        recording_symbols=(symbols,),
        recording_index=np.zeros(rows, np.int16),
        symbol_index=(np.arange(rows) % len(symbols)).astype(np.int8),
        exchange_ts_ms=np.arange(rows, dtype=np.int64) * 100,
        mid=np.full(rows, 100.0),
        obi5=obi.astype(np.float64),
        features=features,
        labels=labels,
        ask_run=labelled & np.isin(labels, (Verdict.LEAN_BUY, Verdict.EMERGENCY)),
        bid_run=labelled & np.isin(labels, (Verdict.LEAN_SELL, Verdict.EMERGENCY)),
        sigma_bps=np.ones(rows),
        label_config=LabelConfig(),
    )


class ObiPredictor:
    """A fixed rule as a candidate: the imbalance as probabilities."""

    thresholds = (0.0, 0.4, 0.4, 1.0)

    def probabilities(self, features):
        obi = np.asarray(features[:, OBI], np.float64)
        buy, sell = np.clip(obi, 0, 1), np.clip(-obi, 0, 1)
        return np.column_stack([1 - buy - sell, buy, sell, np.zeros(len(obi))])

    def verdicts(self, features):
        return choose_verdicts(self.probabilities(features), self.thresholds)


def test_ks_statistic():
    a = np.arange(100.0)
    assert ks_statistic(a, a) == 0.0
    assert ks_statistic(a, a + 1_000) == 1.0
    assert ks_statistic(a, a + 10) == pytest.approx(0.1)


def test_every_session_is_left_out_once_and_never_fitted_on():
    sessions = [session(name, 3_000, seed) for seed, name in enumerate(("a", "b", "c"))]
    fitted_on = []

    def fit(train):
        fitted_on.append(tuple(item.recordings[0] for item in train))
        return {"obi": ObiPredictor()}

    report = leave_one_session_out(sessions, fit, QUICK)
    assert [fold.left_out for fold in report.folds] == ["a", "b", "c"]
    assert fitted_on == [("/data/b", "/data/c"), ("/data/a", "/data/c"), ("/data/a", "/data/b")]
    assert report.names() == ("majority", "imbalance", "imbalance + jump", "obi")
    with pytest.raises(ValueError, match="two sessions"):
        leave_one_session_out(sessions[:1], fit, QUICK)


def test_baselines_are_fitted_on_the_training_sessions_alone():
    train = [session("a", 2_000, 1), session("b", 6_000, 2)]
    left_out = session("c", 3_000, 3)
    fold = score_fold(train, left_out, {"obi": ObiPredictor()}, QUICK)
    obi = np.concatenate([item.obi5[item.labelled] for item in train])
    jump = np.concatenate([item.features[item.labelled, JUMP_FEATURE] for item in train])
    labels = np.concatenate([item.labels[item.labelled] for item in train])
    weights = session_weights(train)
    # Each training session weighs the same, however many frames it has.
    assert weights[:1_980].sum() == pytest.approx(1.0) == weights[1_980:].sum()
    parameters = fold.baseline_parameters
    assert parameters["imbalance_tau"] == fit_imbalance_tau(obi, labels, weights=weights)
    tau, jump_at = fit_imbalance_jump(obi, jump, labels, weights)
    assert (parameters["rule_tau"], parameters["rule_jump_sigmas"]) == (tau, jump_at)
    test = left_out.subset(left_out.labelled)
    rule = fold.row("imbalance + jump")
    verdicts = imbalance_jump_rule(test.obi5, test.features[:, JUMP_FEATURE], tau, jump_at)
    assert rule.metrics.confusion.sum() == fold.frames == 2_980
    assert np.array_equal(rule.metrics.confusion.sum(axis=0), np.bincount(verdicts, minlength=4))
    assert rule.f1[Verdict.EMERGENCY].value > 0.8  # the jump decides EMERGENCY here


def test_intervals_bracket_their_value_and_follow_the_skill():
    train = [session("a", 4_000, 1), session("b", 4_000, 2)]
    fold = score_fold(train, session("c", 4_000, 3), {"obi": ObiPredictor()}, QUICK)
    for row in fold.rows:
        for interval in (row.macro_f1, *row.f1):
            assert interval.low <= interval.value + 1e-9 and interval.value <= interval.high + 1e-9
    majority, candidate = fold.row("majority"), fold.row("obi")
    assert majority.ask_auc.value == 0.5 and majority.pull_rate == 0.0
    assert candidate.ask_auc.low > 0.8 and candidate.bid_auc.low > 0.8
    assert candidate.macro_f1.low > majority.macro_f1.high
    table = "\n".join(fold_table(leave_one_session_out(train, lambda _: {}, QUICK)))
    assert "| a | imbalance + jump |" in table and "[95%]" in table


def test_feature_shift_compares_cross_features_only_between_hedged_sessions():
    hedged = [session("a", 2_000, 1), session("b", 2_000, 2, shift=0.5)]
    alone = session("c", 2_000, 3, symbols=("BTCUSDT",))
    pairs, shift = feature_shift([*hedged, alone])
    assert pairs == ("a / b", "a / c", "b / c")
    cross = [FEATURE_NAMES.index(name) for name in CROSS_FEATURES]
    assert np.all(np.isnan(shift[cross][:, 1:])) and not np.any(np.isnan(shift[cross][:, 0]))
    moved = FEATURE_NAMES.index("spread_z")  # standard normal, shifted by half a sigma
    assert shift[moved, 0] == pytest.approx(0.197, abs=0.04)
    assert shift[moved, 1] < 0.06


def test_feature_shift_compares_the_cross_features_of_a_book():
    """A book's symbols read its leader as a pair's read each other: both have cross features."""
    pair = session("a", 2_000, 1)
    book = session("b", 2_000, 2, symbols=("SOLUSDT", "ETHUSDT", "BTCUSDT"))
    _, shift = feature_shift([pair, book])
    cross = [FEATURE_NAMES.index(name) for name in CROSS_FEATURES]
    assert not np.any(np.isnan(shift[cross]))


def test_one_long_session_is_cut_into_blocks_of_market_time_purged_around_the_cuts():
    """2,500 frames 100 ms apart (250 s) in blocks of 60 s: four blocks, the last holding the
    10 s remainder; no labelled frame within the 1 s horizon of a cut, on either side."""
    day = session("day.bitget.gz", 2_500, seed=4)
    blocks = market_time_blocks(day, 60_000, 1_000)
    assert [block.recordings[0] for block in blocks] == [
        "day.bitget.gz [0-0.01667 h]",
        "day.bitget.gz [0.01667-0.03333 h]",
        "day.bitget.gz [0.03333-0.05 h]",
        "day.bitget.gz [0.05-0.06942 h]",
    ]
    assert sum(len(block) for block in blocks) == len(day)
    cuts = np.array([60_000, 120_000, 180_000])
    for block in blocks:
        ts = block.exchange_ts_ms
        near = (np.abs(ts[:, None] - cuts[None, :]) <= 1_000).any(axis=1)
        assert near.any() and not block.labelled[near].any()
        assert not (block.ask_run | block.bid_run)[near].any()
        kept = ~near & (day.labels[np.isin(day.exchange_ts_ms, ts)] >= 0)
        assert block.labelled[kept].all()
    assert [int(block.exchange_ts_ms.max()) for block in blocks[:3]] == [59_900, 119_900, 179_900]
    with pytest.raises(
        ValueError,
        match=r"day.bitget.gz spans 0.07 h of market time: too short "
        r"to split into two validation blocks of 0.05 h",
    ):
        market_time_blocks(day, 180_000, 1_000)
