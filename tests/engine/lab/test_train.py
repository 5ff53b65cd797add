"""`engine.lab.train`: train end to end on two short simulated sessions, validated
leave-one-session-out, shipped by the backtest, with its model card."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from laya_training import QUICK_CANDIDATES, QUICK_LABELS, onnx_probabilities
from test_folds import OBI, session

from engine.lab.candidates import GATE_SUFFIX, IMBALANCE_RULE
from engine.lab.dataset import DatasetConfig
from engine.lab.folds import BootstrapConfig, Interval, leave_one_session_out
from engine.lab.savings import GateRun, SessionSavings, savings_targets
from engine.lab.train import choose_candidate, train
from engine.lab.train_config import SimulationConfig, TrainConfig
from engine.laya.feature_set import FEATURE_COUNT, FEATURE_SET_VERSION
from engine.laya.model import read_metadata
from engine.sim.market import sim_book
from engine.sim.recording import simulate_recording
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
    assert metadata.label_version == QUICK_LABELS.version
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


def test_one_recording_is_validated_leave_one_block_out_with_a_learning_curve(sessions, tmp_path):
    config = TrainConfig(
        dataset=DatasetConfig(labels=QUICK_LABELS),
        candidates=QUICK_CANDIDATES,
        block_ms=60_000,
        learning_hours=(0.01, 0.02),
        latency_frames=50,
        progress=False,
    )
    report = train(sessions[:1], tmp_path / "one-day.onnx", config)

    name = sessions[0].name
    left_out = [fold.left_out for fold in report.folds.folds]
    assert left_out == [f"{name} [0-0.01667 h]", f"{name} [0.01667-0.04164 h]"]
    # 36 s of the second block trains the first's fold; the first block's 36 s and 72 s are
    # label warm-up (50 s) or more than the second's fold has: those are left out.
    assert [point.hours for point in report.learning_curve] == [0.01, 0.02, None]
    assert [point.folds for point in report.learning_curve] == [1, 1, 2]
    imbalance = [fold.row("imbalance").ask_auc.value for fold in report.folds.folds]
    assert report.learning_curve[-1].rule_ask_auc == np.mean(imbalance)
    summary = read_metadata(report.model_path).training_summary
    assert set(summary["folds"]) == set(left_out)
    card = report.card_path.read_text()
    assert "## Leave-one-block-out" in card and "## Learning curve" in card
    assert "| 0.01 | 1 |" in card and "| all | 2 |" in card
    labelled = report.sessions[0].labelled
    assert f"Labelled: {labelled:,} of {report.sessions[0].frames:,}" in card
    assert "label version 4 (scheme tick)" in card
    assert "nor 1 of the mid's step (its smallest move: half a tick on a tick grid)" in card


def test_a_book_recording_trains_on_the_symbols_named_beside_the_simulators_own(tmp_path):
    """The simulated minutes keep the simulator's pair whatever book the recordings are read
    as; the card lists each session's symbols, the leader last."""
    market = sim_book(("SOLUSDT", "ETHUSDT", "XRPUSDT"), seed=8)
    book = simulate_recording(tmp_path / "book.gz", 2.5, seed=8, market=market).path
    config = TrainConfig(
        dataset=DatasetConfig(symbols=("SOLUSDT", "XRPUSDT", "BTCUSDT"), labels=QUICK_LABELS),
        simulation=SimulationConfig(minutes=0.5),
        candidates=QUICK_CANDIDATES,
        block_ms=60_000,
        learning_hours=(),
        latency_frames=50,
        progress=False,
    )
    report = train([book], tmp_path / "book.onnx", config)
    recorded, simulated = report.sessions
    assert recorded.symbols == ("SOLUSDT", "XRPUSDT", "BTCUSDT")
    assert sorted(simulated.symbols) == ["BTCUSDT", "ETHUSDT"] and simulated.simulated
    assert "| recorded | SOLUSDT, XRPUSDT, BTCUSDT |" in report.card_path.read_text()


class _Noise:
    """A candidate that ranks nothing: random probabilities."""

    thresholds = (0.0, 0.5, 0.5, 0.9)

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def probabilities(self, features):
        return self.rng.dirichlet(np.ones(4), len(features))

    def verdicts(self, features):
        return np.argmax(self.probabilities(features), axis=1)


class _Imbalance:
    """A candidate that ranks each side exactly as the top-5 imbalance does."""

    thresholds = (0.0, 0.3, 0.3, 0.9)

    def probabilities(self, features):
        buy = (1.0 + np.asarray(features[:, OBI], np.float64)) / 4.0
        return np.column_stack([np.full(len(buy), 0.5), buy, 0.5 - buy, np.zeros(len(buy))])

    def verdicts(self, features):
        return np.argmax(self.probabilities(features), axis=1)


def _folds(fit):
    sessions = [session(f"s{seed}.gz", 1_500, seed) for seed in (1, 2)]
    return leave_one_session_out(sessions, fit, BootstrapConfig(resamples=20))


def test_a_candidate_ranking_below_the_imbalance_rule_is_never_chosen():
    config = TrainConfig(candidates=QUICK_CANDIDATES)
    names = ("rule", "rule" + GATE_SUFFIX, "mlp", "mlp" + GATE_SUFFIX)
    noise = _folds(lambda train: {name: _Noise(k) for k, name in enumerate(names)})
    choice, reason = choose_candidate(config, noise, None)
    # The rule ships at the pull budget, scored by the baseline's row (it ranks as OBI5 does).
    assert choice == IMBALANCE_RULE.name + GATE_SUFFIX
    assert config.spec(choice) == IMBALANCE_RULE
    assert noise.folds[0].row(choice) is noise.folds[0].row(IMBALANCE_RULE.name)
    assert reason.startswith("no candidate's per-side AUC reached the imbalance rule's")
    assert reason.endswith("at the pull budget")
    # The rule's own ranking qualifies; noise beside it does not.
    mixed = _folds(
        lambda train: {
            "rule": _Imbalance(),
            "rule" + GATE_SUFFIX: _Imbalance(),
            "mlp": _Noise(1),
            "mlp" + GATE_SUFFIX: _Noise(2),
        }
    )
    assert choose_candidate(config, mixed, None)[0] == "rule" + GATE_SUFFIX


def _with_margins(folds, margins: dict[str, tuple[float, ...]]):
    """`folds` with each named row's per-side AUC set to the imbalance rule's plus its margin
    on that fold (both sides)."""

    def moved(fold, index):
        rule = fold.row("imbalance")
        rows = []
        for row in fold.rows:
            if row.name in margins:
                margin = margins[row.name][index]
                row = dataclasses.replace(
                    row,
                    ask_auc=Interval(rule.ask_auc.value + margin, math.nan, math.nan),
                    bid_auc=Interval(rule.bid_auc.value + margin, math.nan, math.nan),
                )
            rows.append(row)
        return dataclasses.replace(fold, rows=tuple(rows))

    return dataclasses.replace(
        folds, folds=tuple(moved(fold, index) for index, fold in enumerate(folds.folds))
    )


def test_the_ranking_chooses_the_candidate_surest_to_beat_the_rule_on_its_worst_fold():
    config = TrainConfig(candidates=QUICK_CANDIDATES)
    names = ("rule", "rule" + GATE_SUFFIX, "mlp", "mlp" + GATE_SUFFIX)
    folds = _folds(lambda train: {name: _Imbalance() for name in names})
    # mlp's mean margin (+0.16) is twice rule's, but one fold of it barely clears the rule.
    margins = {"rule" + GATE_SUFFIX: (0.08, 0.08), "mlp" + GATE_SUFFIX: (0.30, 0.02)}
    choice, reason = choose_candidate(config, _with_margins(folds, margins), None)
    assert choice == "rule" + GATE_SUFFIX
    assert reason.startswith(
        "the widest margin over the imbalance rule's per-side AUC on its worst fold and side, "
        "+0.080"
    )


def _gate(name: str, fills: int, markout_bps: float, se_bps: float) -> GateRun:
    return GateRun(name, 0.0, fills, markout_bps, se_bps, markout_bps, (1.0, 1.0))


def _savings(saved_bps: dict[str, float], se_bps: float) -> tuple[SessionSavings, ...]:
    """Two left-out sessions on which each candidate's gate saves `saved_bps` a fill against
    no gate, at 1,000 of no gate's 1,000 fills, each mean with standard error `se_bps`."""
    return tuple(
        SessionSavings(
            recording,
            none=_gate("none", 1_000, 0.0, se_bps),
            imbalance=_gate("imbalance", 1_000, 0.0, se_bps),
            candidates=tuple(
                _gate(name, 1_000, saved, se_bps) for name, saved in saved_bps.items()
            ),
            table="",
        )
        for recording in ("s1.gz", "s2.gz")
    )


def test_the_rule_shipped_when_no_candidate_qualified_has_no_backtest_targets():
    savings = _savings({"rule": 0.1, "mlp": 0.0}, se_bps=0.2)
    assert savings_targets(savings, IMBALANCE_RULE.name + GATE_SUFFIX, 0.2) == [
        "- No backtest of the shipped imbalance rule in the folds (only candidates are "
        "backtested); each left-out session's compare table has the imbalance gate's."
    ]
    assert savings_targets(savings, "rule", 0.2)[0].startswith("- backtest s1.gz: 1 s markout")


def test_the_backtest_chooses_only_a_saving_clear_of_zero_else_the_ranking_does():
    config = TrainConfig(candidates=QUICK_CANDIDATES)
    gate = "rule" + GATE_SUFFIX
    folds = _folds(
        lambda train: {
            "rule": _Imbalance(),
            gate: _Imbalance(),
            "mlp": _Noise(1),
            "mlp" + GATE_SUFFIX: _Noise(2),
        }
    )
    saved = {"rule": 0.10, gate: 0.05, "mlp": 0.0, "mlp" + GATE_SUFFIX: 0.0}
    # Intervals of +-0.39 bps: no saving is told from zero, so the ranking chooses (a gate).
    choice, reason = choose_candidate(config, folds, _savings(saved, se_bps=0.2))
    assert choice == gate
    assert reason.endswith("(no gate's backtest saving had a 95% interval above zero)")
    # Intervals of +-0.02 bps: the largest saving clear of zero chooses.
    choice, reason = choose_candidate(config, folds, _savings(saved, se_bps=0.01))
    assert choice == "rule"
    assert "+0.100 +- 0.020 bps on average (95%)" in reason
