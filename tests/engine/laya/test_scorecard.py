"""Laya's scorecard: on a backtest of the shared spot recording, with a shadow model, its
per-side AUCs and pull precisions are the lab's on the same books; it reaches the journal each
market minute and the backtest's report and JSON; a shadow model that is the live one, or
that does not fit the engine, is refused."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest
from support.cli import run_cli
from support.laya_models import with_metadata, write_mlp_model
from support.recordings import book_frame, shared_spot

from engine.clock import MarketClock
from engine.config import EngineConfig, MarketPipelineConfig
from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import iter_recording
from engine.lab.dataset import DatasetConfig, build_dataset
from engine.lab.evaluate import (
    classify,
    label_config_of,
    ranking_auc,
    side_scores,
    started_classifier,
)
from engine.laya.classifier import LayaClassifier
from engine.laya.config import DEFAULT_MODEL_PATH, LayaClassifierConfig
from engine.laya.decide import QuoteGate
from engine.laya.features import BOOK_RECORDS
from engine.laya.labels import LabelConfig
from engine.laya.model import ModelMismatchError
from engine.laya.scorecard import (
    LayaScorecard,
    LayaScorecardConfig,
    _SessionAuc,
    _SymbolScorer,
)
from engine.laya.verdict import Verdict
from engine.node import EngineNode
from engine.pipeline import MarketPipeline, feature_extractor
from engine.settings.reader import load_settings
from engine.tools.backtest.metrics import session_metrics
from engine.tools.backtest.plan import backtest_specs, grid
from engine.tools.backtest.report import metrics_json, session_text
from engine.tools.backtest.session import run_backtest

MINUTE_NS = 60_000_000_000


@pytest.fixture(scope="module")
def shadow_path(tmp_path_factory) -> Path:
    return write_mlp_model(tmp_path_factory.mktemp("shadow") / "shadow.onnx")


@pytest.fixture(scope="module")
def live_path(tmp_path_factory) -> Path:
    """The shipped model at thresholds that pull on lopsided books (whatever operating point
    ships), so the pulls' precision and markouts have books to count."""
    path = tmp_path_factory.mktemp("live") / "live.onnx"
    shutil.copyfile(DEFAULT_MODEL_PATH, path)
    return with_metadata(path, thresholds="[0.5, 0.325, 0.325, 0.9]")


@pytest.fixture(scope="module")
def backtest(live_path, shadow_path):
    """The shared spot recording (10.8 min) backtested with Laya gating and a shadow model."""
    settings = load_settings(
        environ={
            "HFT_CONSOLE_LAYA__PREFER_GPU": "false",
            "HFT_CONSOLE_LAYA__MODEL_PATH": str(live_path),
            "HFT_CONSOLE_LAYA__SHADOW_MODEL": str(shadow_path),
        }
    )
    (spec,) = backtest_specs(settings, [shared_spot()], None, grid([]), [QuoteGate.LAYA])
    return spec, run_backtest(spec)


def lab_figures(model_path, dataset, symbol: int) -> dict[str, float]:
    """The lab's per-side AUCs and pull precision of a model on one symbol's labelled books."""
    frames = dataset.subset((dataset.symbol_index == symbol) & dataset.labelled)
    classifier = started_classifier(model_path)
    try:
        probabilities, verdicts = classify(classifier, frames.features)
    finally:
        classifier.stop()
    ask, bid = side_scores(probabilities)
    pull_ask = (verdicts == Verdict.LEAN_BUY) | (verdicts == Verdict.EMERGENCY)
    pull_bid = (verdicts == Verdict.LEAN_SELL) | (verdicts == Verdict.EMERGENCY)
    run_over = (pull_ask & frames.ask_run).sum() + (pull_bid & frames.bid_run).sum()
    return {
        "labelled": len(frames),
        "ask_auc": ranking_auc(ask, frames.ask_run),
        "bid_auc": ranking_auc(bid, frames.bid_run),
        "rule_ask_auc": ranking_auc(frames.obi5, frames.ask_run),
        "rule_bid_auc": ranking_auc(-frames.obi5, frames.bid_run),
        "precision": run_over / (pull_ask.sum() + pull_bid.sum()),
    }


def test_the_scorecard_is_the_labs_on_the_same_books(backtest, live_path, shadow_path):
    spec, record = backtest
    view = record.scorecard
    assert view is not None and view.shadow_fault is None and view.dropped == 0
    live = started_classifier(live_path)
    labels = label_config_of(live)
    live.stop()
    warmup_ms = round(spec.engine.laya_warmup_s * 1000)
    dataset = build_dataset([shared_spot()], DatasetConfig(labels=labels, warmup_ms=warmup_ms))
    assert [score.symbol for score in view.symbols] == list(dataset.symbols)
    for index, score in enumerate(view.symbols):
        laya = lab_figures(live_path, dataset, index)
        shadow = lab_figures(shadow_path, dataset, index)
        assert score.labelled == laya["labelled"] > 1_000
        # 10.8 minutes: the 15-minute window is the session, and it is ranked exactly.
        assert score.laya.ask_auc == pytest.approx(laya["ask_auc"], abs=1e-9)
        assert score.laya.bid_auc == pytest.approx(laya["bid_auc"], abs=1e-9)
        assert score.rule.ask_auc == pytest.approx(laya["rule_ask_auc"], abs=1e-9)
        assert score.rule.bid_auc == pytest.approx(laya["rule_bid_auc"], abs=1e-9)
        assert score.shadow.ask_auc == pytest.approx(shadow["ask_auc"], abs=1e-6)
        assert score.shadow.bid_auc == pytest.approx(shadow["bid_auc"], abs=1e-6)
        assert score.laya.pull_precision == pytest.approx(laya["precision"], abs=1e-12)
        assert score.shadow.pull_precision == pytest.approx(shadow["precision"], abs=1e-12)
        # The session's AUC comes from binned counts: within a bin's ties of the exact one.
        for model in (score.laya, score.rule, score.shadow):
            assert model.session_ask_auc == pytest.approx(model.ask_auc, abs=1e-3)
            assert model.session_bid_auc == pytest.approx(model.bid_auc, abs=1e-3)
        assert score.shadow.ask_auc != score.laya.ask_auc
        # Laya pulls the sides that are then run over: they mark out worse than those kept.
        assert score.laya.pulled_markout_bps < score.laya.kept_markout_bps
        assert score.trend


def test_the_journal_has_the_scorecard_each_market_minute(backtest):
    _, record = backtest
    entries = [entry for entry in record.entries if entry.kind == "laya_scorecard"]
    assert len(entries) == int((record.end_ns - record.start_ns) // MINUTE_NS) == 10
    assert {later.at_ns - earlier.at_ns for earlier, later in pairwise(entries)} == {MINUTE_NS}
    last = entries[-1].payload
    assert last["shadow_model"].endswith("shadow.onnx")
    assert [item["symbol"] for item in last["symbols"]] == ["BTCUSDT", "ETHUSDT"]
    assert last["symbols"][0]["labelled"] <= record.scorecard.symbols[0].labelled


def test_the_backtest_report_and_json_carry_the_scorecard(backtest):
    _, record = backtest
    metrics = session_metrics(record)
    text = session_text(metrics)
    assert "Laya's scorecard" in text
    first = record.scorecard.symbols[0]
    assert f"{first.symbol}: {first.labelled:,} labelled books" in text
    assert f"Laya   {first.laya.ask_auc:.2f}/{first.laya.bid_auc:.2f}" in text
    assert "shadow " in text
    section = metrics_json(metrics)["laya_scorecard"]
    assert section["symbols"][0]["laya"]["ask_auc"] == first.laya.ask_auc
    assert section["symbols"][1]["shadow"]["pulls"] == record.scorecard.symbols[1].shadow.pulls


def test_the_session_auc_from_bins_matches_the_ranks():
    rng = np.random.default_rng(5)
    scores = np.round(rng.beta(2, 5, 20_000), 3)  # ties, as probabilities have
    positives = rng.random(20_000) < 0.2 + 0.5 * scores
    auc = _SessionAuc(4_096)
    for part in np.array_split(np.arange(scores.size), 7):
        auc.add(scores[part], positives[part])
    assert auc.auc() == pytest.approx(ranking_auc(scores, positives), abs=1e-3)
    assert math.isnan(_SessionAuc(16).auc())


def test_a_long_session_keeps_only_the_mids_its_labels_need():
    """4 hours of books a second: the mids kept stop growing at twice `history_s` (1.5 h; they
    are cut when half of them can go), and scoring goes on after they are cut."""
    labels = LabelConfig()
    scorer = _SymbolScorer("BTCUSDT", LayaScorecardConfig(symbols=("BTCUSDT",)))
    rng = np.random.default_rng(2)
    mids = 60_000.0 * np.exp(np.cumsum(rng.normal(0.0, 2e-4, 14_400)))
    kept = []
    for second, mid in enumerate(mids):
        score = float(rng.random())
        scorer.add(second * 1_000, float(mid), (score, 1 - score, 0.0, 0.0, 0.0), (False,) * 6)
        if second % 600 == 599:
            scorer.score(labels, with_shadow=False)
            kept.append(len(scorer.ts_ms))
    assert max(kept) <= 2 * 5_400 < len(mids)
    assert min(kept[18:]) < max(kept[:18])  # cut, then grown again
    assert scorer.labelled > 14_000


@pytest.fixture
def btc_scorecard(laya_model):
    """A scorecard of BTCUSDT with a queue of `queue_size` books, fed by a pipeline on Laya."""
    classifier = LayaClassifier(LayaClassifierConfig(model_path=laya_model, prefer_gpu=False))
    classifier.start()

    def build(queue_size: int) -> tuple[FrameParser, MarketPipeline, LayaScorecard]:
        config = LayaScorecardConfig(symbols=("BTCUSDT",), queue_size=queue_size)
        parser = FrameParser(("BTCUSDT",))
        features = feature_extractor(("BTCUSDT",), parser.tape)
        scorecard = LayaScorecard(config, {"BTCUSDT": classifier}, MarketClock(0), features)
        pipeline = MarketPipeline(
            MarketPipelineConfig(symbols=("BTCUSDT",)),
            parser.tape,
            classifier,
            scores=scorecard.queue,
            features=features,
        )
        return parser, pipeline, scorecard

    yield build
    classifier.stop()


def test_the_queue_drops_the_oldest_book_and_the_scorecard_counts_it(btc_scorecard):
    parser, pipeline, scorecard = btc_scorecard(3)
    for number in range(1, 6):
        bids, asks = [[f"{60_000 + number}", "2"]], [[f"{60_002 + number}", "1"]]
        pipeline.on_market(parser.parse(book_frame("BTCUSDT", number * 100, asks, bids, 1), 0))
    assert [book[0] for book in scorecard.queue] == [3, 4, 5]
    scorecard.take()
    assert scorecard.dropped == 2 and not scorecard.queue
    assert list(scorecard._symbols["BTCUSDT"].mids) == [60_004.0, 60_005.0, 60_006.0]


def test_a_book_whose_mid_the_kernel_no_longer_keeps_is_dropped_and_counted(btc_scorecard):
    """The scorer reads a book's mid and top-5 imbalance back from the feature kernel's records
    by its number: one that fell more than `BOOK_RECORDS` books behind finds the oldest ones
    overwritten, drops and counts them, and takes the rest with their own mids."""
    parser, pipeline, scorecard = btc_scorecard(65_536)
    mids = []
    for recv_ns, raw in iter_recording(shared_spot()):
        event = parser.parse(raw, recv_ns)
        if event is not None:
            pipeline.on_market(event)
        if type(event) is BookSnapshot:
            mids.append(0.5 * (event.levels[0, 0] + event.levels[2, 0]))
    assert len(scorecard.queue) == len(mids) > BOOK_RECORDS
    scorecard.take()
    assert scorecard.dropped == len(mids) - BOOK_RECORDS
    assert list(scorecard._symbols["BTCUSDT"].mids) == mids[-BOOK_RECORDS:]


async def test_each_symbol_is_labelled_as_its_own_model_was_trained(tmp_path):
    """[laya.models]: a symbol on a model trained on other labels is scored on those."""
    older = with_metadata(
        write_mlp_model(tmp_path / "older.onnx"),
        label_parameters=json.dumps(LabelConfig.clock_labels().as_metadata()),
        label_version="3",
    )
    classifiers = {
        symbol: LayaClassifier(LayaClassifierConfig(model_path=path, prefer_gpu=False))
        for symbol, path in (("BTCUSDT", DEFAULT_MODEL_PATH), ("ETHUSDT", older))
    }
    for classifier in classifiers.values():
        classifier.start()
    config = LayaScorecardConfig(symbols=("BTCUSDT", "ETHUSDT"))
    features = feature_extractor(config.symbols, FrameParser(config.symbols).tape)
    scorecard = LayaScorecard(config, classifiers, MarketClock(0), features)
    scorecard.start()
    try:
        assert scorecard._labels == {
            "BTCUSDT": LabelConfig(),
            "ETHUSDT": LabelConfig.clock_labels(),
        }
    finally:
        await scorecard.stop()
        for classifier in classifiers.values():
            classifier.stop()


def test_a_shadow_model_that_is_the_live_one_is_refused():
    with pytest.raises(ValueError, match=r"shadow model .*default\.onnx is the live model"):
        EngineConfig(laya_shadow_model=str(DEFAULT_MODEL_PATH))
    # A shipped model named by its name is its file.
    with pytest.raises(ValueError, match="shadow model laya-default is the live model"):
        EngineConfig(laya_shadow_model="laya-default")
    large_tick = DEFAULT_MODEL_PATH.with_name("laya-large-tick.onnx")
    with pytest.raises(ValueError, match="shadow model laya-large-tick is the live model"):
        EngineConfig(
            laya=LayaClassifierConfig(model_path=large_tick), laya_shadow_model="laya-large-tick"
        )
    result = run_cli("run", "--headless", "--shadow-model", str(DEFAULT_MODEL_PATH))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "laya-default.onnx is the live model" in line


def test_a_shadow_model_of_another_feature_set_is_refused_at_start(tmp_path):
    shadow = write_mlp_model(tmp_path / "old.onnx", feature_set="f-old")
    config = EngineConfig(
        replay_path=str(shared_spot()),
        replay_speed=None,
        kev_client=None,
        laya=dataclasses.replace(EngineConfig().laya, prefer_gpu=False),
        laya_shadow_model=str(shadow),
    )
    node = EngineNode(config)

    async def start() -> None:
        try:
            await node.start()
        finally:
            await node.stop()

    with pytest.raises(ModelMismatchError, match=r"old\.onnx was trained on feature set 'f-old'"):
        node.clock.run(start())
