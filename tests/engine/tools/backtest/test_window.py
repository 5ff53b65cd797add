"""A backtest over a market window: the recording warms the engine up to the window's start,
the desk trades only inside it, and the run ends as if the recording ended at its end."""

from __future__ import annotations

import dataclasses

import pytest

from engine.feed.recording import iter_recording
from engine.laya.decide import QuoteGate
from engine.settings.reader import load_settings
from engine.tools.backtest.metrics import session_metrics
from engine.tools.backtest.plan import backtest_specs, grid
from engine.tools.backtest.session import MarketWindow, run_backtest
from tests.support.recordings import write_lines

SETTINGS = load_settings(environ={"HFT_CONSOLE_LAYA__PREFER_GPU": "false"})
SECOND_NS = 1_000_000_000


def spec_for(recording, window=None):
    (spec,) = backtest_specs(SETTINGS, [recording], None, grid([]), [QuoteGate.NONE], window=window)
    return spec


def trading(record):
    return [
        (entry.kind, entry.at_ns, entry.payload)
        for entry in record.entries
        if entry.kind in ("order_approved", "order_ack", "fill")
    ]


@pytest.fixture(scope="module")
def frame_times(simulated_session) -> list[int]:
    return [recv_ns for recv_ns, _ in iter_recording(simulated_session)]


def test_a_window_ends_the_run_as_the_recording_cut_there_would(
    simulated_session, frame_times, tmp_path
):
    end_ns = frame_times[0] + 150 * SECOND_NS
    cut = write_lines(
        tmp_path / "cut.bitget",
        ((recv_ns, raw) for recv_ns, raw in iter_recording(simulated_session) if recv_ns < end_ns),
    )
    windowed = run_backtest(spec_for(simulated_session, MarketWindow(frame_times[0], end_ns)))
    whole_cut = run_backtest(spec_for(cut))
    assert len(trading(windowed)) > 20  # it traded: the comparison means something
    assert trading(windowed) == trading(whole_cut)
    assert (windowed.start_ns, windowed.end_ns) == (whole_cut.start_ns, whole_cut.end_ns)
    assert windowed.end_ns == max(t for t in frame_times if t < end_ns)
    one, two = session_metrics(windowed), session_metrics(whole_cut)
    assert (one.net, one.fill_count, one.span_s) == (two.net, two.fill_count, two.span_s)
    assert windowed.recording == str(simulated_session)  # not the scratch copy it played


def test_the_desk_trades_only_inside_the_window_on_warm_books(simulated_session, frame_times):
    start_ns = frame_times[0] + 90 * SECOND_NS
    end_ns = frame_times[0] + 180 * SECOND_NS
    record = run_backtest(spec_for(simulated_session, MarketWindow(start_ns, end_ns)))
    orders = [at_ns for kind, at_ns, _ in trading(record) if kind == "order_approved"]
    assert orders and min(orders) >= start_ns
    assert max(at_ns for _, at_ns, _ in trading(record)) < end_ns + SECOND_NS
    assert record.start_ns == start_ns and record.end_ns < end_ns
    assert all(series.at_ns[0] >= start_ns for series in record.mids.values())
    metrics = session_metrics(record)
    assert metrics.span_s == pytest.approx((record.end_ns - start_ns) / 1e9)
    # The whole run up to the window's start traded too: none of that is the window's.
    whole = run_backtest(spec_for(simulated_session))
    before = [e for e in trading(whole) if e[0] == "order_approved" and e[1] < start_ns]
    assert before


def test_a_window_over_the_whole_recording_is_the_whole_run(simulated_session, frame_times):
    window = MarketWindow(frame_times[0], frame_times[-1] + 1)
    windowed, whole = (
        run_backtest(spec_for(simulated_session, window)),
        run_backtest(spec_for(simulated_session)),
    )
    assert trading(windowed) == trading(whole)
    assert dataclasses.astuple(session_metrics(windowed).symbols[0]) == dataclasses.astuple(
        session_metrics(whole).symbols[0]
    )


def test_an_inverted_window_is_refused():
    with pytest.raises(ValueError, match="ends after it starts"):
        MarketWindow(5, 5)
