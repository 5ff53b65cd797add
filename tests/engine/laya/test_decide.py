"""DecisionStage: verdict -> quote intent, the verdict stream and its counts."""

from __future__ import annotations

import pytest

from engine.laya.decide import DecisionStage, QuoteIntent
from engine.laya.verdict import Verdict


@pytest.mark.parametrize(
    ("verdict", "intent"),
    [
        (Verdict.HOLD, QuoteIntent.KEEP_QUOTING),
        (Verdict.LEAN_BUY, QuoteIntent.PULL_ASKS),
        (Verdict.LEAN_SELL, QuoteIntent.PULL_BIDS),
        (Verdict.EMERGENCY, QuoteIntent.CANCEL_ALL),
    ],
)
def test_each_verdict_maps_to_its_intent(verdict, intent):
    assert DecisionStage().decide("BTCUSDT", 1, verdict, 0.9) is intent


def test_stream_keeps_signals_and_the_hold_that_ends_them():
    stage = DecisionStage()
    for ts, verdict in enumerate(
        [Verdict.HOLD, Verdict.HOLD, Verdict.EMERGENCY, Verdict.HOLD, Verdict.HOLD]
    ):
        stage.decide("BTCUSDT", ts, verdict, 0.5)
    view = stage.view()
    assert [(r.exchange_ts_ms, r.verdict) for r in view.recent] == [
        (2, Verdict.EMERGENCY),
        (3, Verdict.HOLD),
    ]
    assert view.counts == {"HOLD": 4, "LEAN_BUY": 0, "LEAN_SELL": 0, "EMERGENCY": 1}
    assert view.total == 5
    assert stage.view(limit=0).recent == ()


def test_stream_is_bounded():
    stage = DecisionStage(stream_size=3)
    for ts in range(10):
        stage.decide("ETHUSDT", ts, Verdict.LEAN_SELL, 0.7)
    assert [r.exchange_ts_ms for r in stage.view().recent] == [7, 8, 9]
    assert stage.counts()["LEAN_SELL"] == 10


def test_stream_size_must_be_positive():
    with pytest.raises(ValueError, match="stream_size"):
        DecisionStage(stream_size=0)


def test_the_view_says_each_symbols_verdict_on_its_last_book_a_long_hold_too():
    stage = DecisionStage(stream_size=2)
    stage.decide("ETHUSDT", 1, Verdict.HOLD, 0.9)
    for ts in range(2, 6):
        stage.decide("BTCUSDT", ts, Verdict.EMERGENCY if ts % 2 else Verdict.HOLD, 0.8)
    view = stage.view()
    assert {record.symbol for record in view.recent} == {"BTCUSDT"}  # ETH's HOLD never entered
    assert view.current == {"ETHUSDT": Verdict.HOLD, "BTCUSDT": Verdict.EMERGENCY}
