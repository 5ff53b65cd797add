"""MarketPipeline: book -> features -> Laya -> decision with stage timers, resyncs, event log."""

from __future__ import annotations

import orjson
import pytest
from support.recordings import book_frame

from engine.config import MarketPipelineConfig
from engine.feed.events import BookResyncNeeded, FeedState, FeedStateChanged, RecordingEnded
from engine.feed.parse import FrameParser
from engine.laya.classifier import LayaClassifier, choose_verdict
from engine.laya.config import LayaClassifierConfig
from engine.laya.decide import QuoteGate, QuoteIntent
from engine.laya.features import FEATURE_NAMES
from engine.laya.scorecard import ScorecardQueue
from engine.pipeline import (
    STAGES,
    EventLog,
    LayaFault,
    LayaReady,
    LayaStillWarmingUp,
    LayaWarmingUp,
    MarketPipeline,
    PipelineSinks,
    feature_extractor,
)
from engine.tools.bench.trading import ALWAYS_EMERGENCY

OBI5 = FEATURE_NAMES.index("obi_5")
BOOK_SYMBOLS = (
    "ETHUSDT",
    "SOLUSDT",
    "XRPUSDT",
    "DOGEUSDT",
    "ADAUSDT",
    "TRXUSDT",
    "LINKUSDT",
    "AVAXUSDT",
)
"""Eight quoted symbols of a book (the simulator's table), BTCUSDT their hedge."""


def depth(symbol, ts, bid="99", ask="101"):
    arg = {"instType": "USDT-FUTURES", "channel": "books15", "instId": symbol}
    data = {"asks": [[ask, "1"]], "bids": [[bid, "2"]], "ts": str(ts)}
    return orjson.dumps({"action": "snapshot", "arg": arg, "data": [data], "ts": ts})


@pytest.fixture
def classifier(laya_model):
    laya = LayaClassifier(LayaClassifierConfig(model_path=laya_model, prefer_gpu=False))
    laya.start()
    yield laya
    laya.stop()


def test_every_book_goes_through_all_stages(classifier):
    parser = FrameParser()
    pipeline = MarketPipeline(MarketPipelineConfig(), parser.tape, classifier)
    for k in range(5):
        pipeline.on_market(parser.parse(depth("BTCUSDT", 1000 + k), 0))
        pipeline.on_market(parser.parse(depth("ETHUSDT", 1000 + k, "49", "51"), 0))
    assert set(pipeline.latency) == set(STAGES)
    assert all(histogram.count == 10 for histogram in pipeline.latency.values())
    assert sum(pipeline.decisions.counts().values()) == 10
    assert set(pipeline.intents) == {"BTCUSDT", "ETHUSDT"}
    assert all(isinstance(intent, QuoteIntent) for intent in pipeline.intents.values())
    assert pipeline.books["ETHUSDT"].mid() == 50.0


def test_without_a_classifier_the_pipeline_stops_after_the_features():
    parser = FrameParser()
    pipeline = MarketPipeline(MarketPipelineConfig(), parser.tape)
    pipeline.on_market(parser.parse(depth("BTCUSDT", 1000), 0))
    assert pipeline.latency["features"].count == 1
    assert pipeline.latency["infer"].count == 0
    assert pipeline.books["BTCUSDT"].ready


def test_books_of_other_symbols_are_ignored(classifier):
    parser = FrameParser()
    pipeline = MarketPipeline(MarketPipelineConfig(), parser.tape, classifier)
    pipeline.on_market(parser.parse(depth("SOLUSDT", 1000), 0))
    assert pipeline.latency["book"].count == 0


def books_frame(action, seq, pseq, bids):
    arg = {"instType": "USDT-FUTURES", "channel": "books", "instId": "BTCUSDT"}
    data = {"asks": [["101", "1"]], "bids": bids, "seq": seq, "pseq": pseq, "ts": str(seq)}
    return orjson.dumps({"action": action, "arg": arg, "data": [data], "ts": seq})


def test_incremental_gap_is_logged_and_asks_the_feed_to_resync():
    parser = FrameParser()
    resyncs = []
    pipeline = MarketPipeline(MarketPipelineConfig(), parser.tape, on_resync=resyncs.append)
    pipeline.on_market(parser.parse(books_frame("snapshot", 10, 0, [["99", "1"]]), 0))
    assert pipeline.books["BTCUSDT"].ready
    pipeline.on_market(parser.parse(books_frame("update", 12, 11, [["98", "1"]]), 0))
    assert resyncs == ["BTCUSDT"]
    events, missed = pipeline.events.since(-1)
    assert missed == 0 and isinstance(events[0][1], BookResyncNeeded)


def test_event_log_is_bounded_and_reports_what_a_reader_missed():
    log = EventLog(capacity=3)
    for k in range(5):
        log.append(FeedStateChanged("BTCUSDT", FeedState.LIVE, f"event {k}", k))
    events, missed = log.since(-1)
    assert [event.reason for _, event in events] == ["event 2", "event 3", "event 4"]
    assert missed == 2 and log.dropped == 2
    events, missed = log.since(3)
    assert [event_id for event_id, _ in events] == [4] and missed == 0


def test_config_validation():
    with pytest.raises(ValueError, match="verdict_stream_size"):
        MarketPipelineConfig(verdict_stream_size=0)
    with pytest.raises(ValueError, match="at least one symbol"):
        MarketPipelineConfig(symbols=())
    with pytest.raises(ValueError, match="warmup_ms"):
        MarketPipelineConfig(warmup_ms=-1)


class FailingClassifier:
    """Stands in for a session whose GPU went away mid-run."""

    thresholds = (0.0, 0.0, 0.0, 0.0)

    def infer(self, features):
        raise RuntimeError("CUDA failure 999: unspecified launch failure")


def test_a_failing_classifier_pulls_the_quotes_and_logs_a_fault():
    parser = FrameParser()
    pipeline = MarketPipeline(MarketPipelineConfig(), parser.tape, FailingClassifier())
    pipeline.on_market(parser.parse(depth("BTCUSDT", 1000), 0))
    assert pipeline.intents["BTCUSDT"] is QuoteIntent.CANCEL_ALL
    assert pipeline.laya_faults == 1
    events, _ = pipeline.events.since(-1)
    assert isinstance(events[0][1], LayaFault) and "CUDA failure" in events[0][1].reason


def test_laya_stands_aside_until_each_symbols_windows_fill_and_after_a_gap(classifier):
    parser = FrameParser()
    decided = []
    pipeline = MarketPipeline(
        MarketPipelineConfig(warmup_ms=1_000),
        parser.tape,
        classifier,
        sinks=PipelineSinks(
            on_decided=lambda snapshot, intent: decided.append((snapshot.symbol, intent))
        ),
    )

    def book(symbol, ts):
        pipeline.on_market(parser.parse(depth(symbol, ts), 0))

    for ts in range(10_000, 11_000, 100):  # the first second of BTC: no verdict
        book("BTCUSDT", ts)
    book("ETHUSDT", 10_950)
    assert decided == [("BTCUSDT", QuoteIntent.STAND_ASIDE)] * 10 + [
        ("ETHUSDT", QuoteIntent.STAND_ASIDE)
    ]
    assert sum(pipeline.decisions.counts().values()) == 0
    assert pipeline.latency["infer"].count == 0 and pipeline.latency["features"].count == 11
    assert pipeline.warming == {"BTCUSDT": 11_000, "ETHUSDT": 11_950}

    book("BTCUSDT", 11_000)  # a second of market data: BTC's verdicts count, ETH's not yet
    book("ETHUSDT", 11_100)
    assert decided[-2][1] is not QuoteIntent.STAND_ASIDE
    assert decided[-1] == ("ETHUSDT", QuoteIntent.STAND_ASIDE)
    assert pipeline.warming == {"ETHUSDT": 11_950}

    book("BTCUSDT", 12_500)  # 1.5 s without a BTC book: its windows went stale
    assert decided[-1] == ("BTCUSDT", QuoteIntent.STAND_ASIDE)
    assert pipeline.intents["BTCUSDT"] is QuoteIntent.STAND_ASIDE
    events = [event for _, event in pipeline.events.since(-1)[0]]
    assert [(type(e).__name__, e.symbol) for e in events] == [
        ("LayaWarmingUp", "BTCUSDT"),
        ("LayaWarmingUp", "ETHUSDT"),
        ("LayaReady", "BTCUSDT"),
        ("LayaWarmingUp", "BTCUSDT"),
    ]
    assert events[0].reason == "first book" and events[0].seconds == 1.0
    assert events[-1].reason == "no book for 1,500 ms"
    assert isinstance(events[2], LayaReady) and isinstance(events[3], LayaWarmingUp)


def test_without_a_warmup_the_first_book_gets_a_verdict(classifier):
    parser = FrameParser()
    pipeline = MarketPipeline(MarketPipelineConfig(), parser.tape, classifier)
    pipeline.on_market(parser.parse(depth("BTCUSDT", 1000), 0))
    assert sum(pipeline.decisions.counts().values()) == 1 and pipeline.warming == {}


def test_the_end_of_the_market_data_says_who_was_still_warming_up(classifier):
    parser = FrameParser()
    pipeline = MarketPipeline(MarketPipelineConfig(warmup_ms=30_000), parser.tape, classifier)
    for ts in range(10_000, 18_100, 100):  # 8 s of BTC, 2 s of ETH: both still warming up
        pipeline.on_market(parser.parse(depth("BTCUSDT", ts), 0))
    for ts in range(16_000, 18_100, 100):
        pipeline.on_market(parser.parse(depth("ETHUSDT", ts), 0))
    assert pipeline.warm_up_left_s() == {"BTCUSDT": 22.0, "ETHUSDT": 28.0}
    cursor = pipeline.events.since(-1)[0][-1][0]

    pipeline.on_feed_event(RecordingEnded("r.gz", 101, 101, 8.0, None, 7))
    events = [event for _, event in pipeline.events.since(cursor)[0]]
    assert events[1:] == [
        LayaStillWarmingUp("BTCUSDT", 8.0, 30.0, "the recording ended", 7),
        LayaStillWarmingUp("ETHUSDT", 2.0, 30.0, "the recording ended", 7),
    ]

    pipeline.report_warm_up("the run stopped", 9)
    assert [event.when for _, event in pipeline.events.since(cursor)[0][3:]] == [
        "the run stopped",
        "the run stopped",
    ]


def imbalanced(symbol, ts, bid_size, ask_size):
    arg = {"instType": "USDT-FUTURES", "channel": "books15", "instId": symbol}
    data = {"asks": [["101", str(ask_size)]], "bids": [["99", str(bid_size)]], "ts": str(ts)}
    return orjson.dumps({"action": "snapshot", "arg": arg, "data": [data], "ts": ts})


def gated_pipeline(laya_model, gate, warmup_ms=0, sinks=None):
    """Laya forced to EMERGENCY on every book: what acts is the gate."""
    laya = LayaClassifier(
        LayaClassifierConfig(model_path=laya_model, prefer_gpu=False, thresholds=ALWAYS_EMERGENCY)
    )
    laya.start()
    parser = FrameParser()
    config = MarketPipelineConfig(gate=gate, imbalance_gate=0.5, warmup_ms=warmup_ms)
    return parser, MarketPipeline(config, parser.tape, laya, sinks=sinks)


@pytest.mark.parametrize("gate", [QuoteGate.LAYA, QuoteGate.NONE, QuoteGate.IMBALANCE])
def test_the_gate_decides_what_is_pulled_while_laya_still_gives_its_verdicts(laya_model, gate):
    decided = []
    sinks = PipelineSinks(on_decided=lambda snapshot, intent: decided.append(intent))
    parser, pipeline = gated_pipeline(laya_model, gate, sinks=sinks)
    for ts, (bid_size, ask_size) in enumerate([(9, 1), (1, 9), (5, 5)], start=1000):
        pipeline.on_market(parser.parse(imbalanced("BTCUSDT", ts, bid_size, ask_size), 0))
    assert pipeline.decisions.counts()["EMERGENCY"] == 3  # Laya's verdicts, whatever the gate
    expected = {
        QuoteGate.LAYA: [QuoteIntent.CANCEL_ALL] * 3,
        QuoteGate.NONE: [QuoteIntent.KEEP_QUOTING] * 3,
        # Bids heavy (imbalance +0.8): the ask is about to be run over; asks heavy: the bid.
        QuoteGate.IMBALANCE: [
            QuoteIntent.PULL_ASKS,
            QuoteIntent.PULL_BIDS,
            QuoteIntent.KEEP_QUOTING,
        ],
    }[gate]
    assert decided == expected


def test_only_laya_stands_aside_while_warming_up(laya_model):
    for gate, first in ((QuoteGate.LAYA, QuoteIntent.STAND_ASIDE), (QuoteGate.NONE, None)):
        decided = []
        sinks = PipelineSinks(
            on_decided=lambda snapshot, intent, decided=decided: decided.append(intent)
        )
        parser, pipeline = gated_pipeline(laya_model, gate, warmup_ms=30_000, sinks=sinks)
        pipeline.on_market(parser.parse(imbalanced("BTCUSDT", 1000, 5, 5), 0))
        assert decided == [first or QuoteIntent.KEEP_QUOTING]


def test_the_imbalance_gate_needs_a_threshold_inside_0_and_1():
    for threshold in (0.0, 1.0, -0.2):
        with pytest.raises(ValueError, match="imbalance_gate"):
            MarketPipelineConfig(gate=QuoteGate.IMBALANCE, imbalance_gate=threshold)


def test_the_scorecard_gets_each_book_by_number_and_the_kernel_keeps_its_mid_and_imbalance(
    classifier,
):
    """The fast path appends only what it holds (the book's number, the book, Laya's row and
    verdict); the feature kernel keeps the book's mid and top-5 imbalance under the number."""
    parser = FrameParser()
    config = MarketPipelineConfig()
    features = feature_extractor(config.symbols, parser.tape)
    queue = ScorecardQueue(64, features)
    pipeline = MarketPipeline(config, parser.tape, classifier, scores=queue, features=features)
    seen = []
    for k in range(6):
        symbol = ("BTCUSDT", "ETHUSDT")[k % 2]
        bids, asks = [[f"{99 + k}.5", str(1 + k)]], [[f"{101 + 2 * k}", "3"]]
        snapshot = parser.parse(book_frame(symbol, 1_000 + k, asks, bids, seq=k + 1), 0)
        pipeline.on_market(snapshot)
        mid = 0.5 * (snapshot.levels[0, 0] + snapshot.levels[2, 0])
        seen.append((symbol, mid, pipeline.features.features.item(0, OBI5)))
    books = queue.drain()
    assert [(number, book.symbol) for number, book, *_ in books] == [
        (1 + k // 2, symbol) for k, (symbol, _, _) in enumerate(seen)
    ]
    for (number, _, row, verdict, features), (symbol, mid, imbalance) in zip(
        books, seen, strict=True
    ):
        assert pipeline.features.recorded_book(symbol, number) == (mid, imbalance)
        assert verdict == choose_verdict(row, classifier.thresholds) and features is None
    assert len({mid for _, mid, _ in seen}) == len({imbalance for _, _, imbalance in seen}) == 6
    with pytest.raises(ValueError, match="another feature extractor"):
        MarketPipeline(config, parser.tape, classifier, scores=queue)


def test_every_symbol_of_a_book_gets_features_and_verdicts(classifier):
    """Eight quoted symbols and their hedge: each book of each gets its features (kept under
    its number) and a verdict, none left out past the first two."""
    symbols = (*BOOK_SYMBOLS, "BTCUSDT")
    parser = FrameParser(symbols)
    decided = []
    pipeline = MarketPipeline(
        MarketPipelineConfig(symbols=symbols),
        parser.tape,
        classifier,
        sinks=PipelineSinks(on_decided=lambda snapshot, _: decided.append(snapshot.symbol)),
    )
    assert pipeline.features.config.leader == "BTCUSDT"
    for k in range(3):
        for symbol in symbols:
            pipeline.on_market(parser.parse(depth(symbol, 1_000 + 100 * k), 0))
    assert decided == list(symbols) * 3
    for symbol in symbols:
        assert pipeline.features.recorded_book(symbol, 3) == (100.0, pytest.approx(1 / 3))
