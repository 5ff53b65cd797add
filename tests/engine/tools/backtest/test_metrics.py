"""The metrics, from a journal written by hand: average-cost PnL, markouts, uptime, pulls, and
the series the charts draw."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from engine.journal import JournalEntry
from engine.market.contracts import FeeRates, resolve_contracts
from engine.market.instruments import BTCUSDT
from engine.tools.backtest.metrics import (
    HORIZONS_MS,
    SERIES_MAX_POINTS,
    Saving,
    session_metrics,
)
from engine.tools.backtest.report import (
    compare_json,
    compare_parts,
    metrics_json,
    ranking_parts,
    session_text,
)
from engine.tools.backtest.session import MidSeries, SessionRecord

S = 1_000_000_000
T0 = 1_726_000_000 * S


def entry(at_s: float, kind: str, **payload) -> JournalEntry:
    return JournalEntry(0, T0 + int(at_s * S), kind, payload)


def order(at_s, oid, side, price, size, role="bid"):
    approved = entry(
        at_s,
        "order_approved",
        client_oid=oid,
        symbol="BTCUSDT",
        side=side,
        price=price,
        size=size,
        role=role,
    )
    placed = entry(at_s + 0.01, "order_ack", event="placed", client_oid=oid)
    return [approved, placed]


def fill(at_s, oid, side, price, size, fee, maker=True):
    return entry(
        at_s,
        "fill",
        client_oid=oid,
        symbol="BTCUSDT",
        side=side,
        price=price,
        size=size,
        fee=fee,
        maker=maker,
        filled_ms=(T0 + int(at_s * S)) // 1_000_000,
    )


def record(entries, mids=None, end_s=100.0) -> SessionRecord:
    times = np.asarray([T0 + k * S for k in range(101)], np.int64)
    series = MidSeries(times, np.asarray(mids if mids is not None else [100.0] * 101))
    return SessionRecord(
        "laya",
        "x.gz",
        ("BTCUSDT",),
        ("BTCUSDT",),
        T0,
        T0 + int(end_s * S),
        tuple(entries),
        {"BTCUSDT": series},
        1000,
        900,
        0.5,
        0.4,
        {"HOLD": 10},
        recording_problem=None,
        rss_kb_at_100k=None,
        rss_kb_end=0,
        venue={},
        instruments=(BTCUSDT,),
    )


def test_average_cost_pnl_with_fees_signed_by_their_effect():
    entries = [
        *order(1, "b1", "buy", 100.0, 1.0),
        fill(2, "b1", "buy", 100.0, 1.0, 0.02),
        *order(3, "b2", "buy", 110.0, 1.0),
        fill(4, "b2", "buy", 110.0, 1.0, 0.022),
        *order(5, "a1", "sell", 120.0, 1.5, "ask"),
        fill(6, "a1", "sell", 120.0, 1.5, 0.036),
    ]
    metrics = session_metrics(record(entries))  # the mid stays at 100
    result = metrics.result("BTCUSDT")
    assert result.realized == pytest.approx(1.5 * (120 - 105))  # average cost 105
    assert result.unrealized == pytest.approx(0.5 * (100 - 105))
    assert result.fees == pytest.approx(-0.078)
    assert result.net == pytest.approx(22.5 - 2.5 - 0.078)
    assert result.end_position == pytest.approx(0.5) and result.max_abs_position == 2.0
    assert (result.fills, result.maker_fills, metrics.orders_sent, metrics.orders_filled) == (
        3,
        3,
        3,
        3,
    )


def test_a_position_through_zero_opens_the_rest_at_the_fill_price():
    entries = [
        *order(1, "b1", "buy", 100.0, 1.0),
        fill(2, "b1", "buy", 100.0, 1.0, 0.0),
        *order(3, "a1", "sell", 110.0, 3.0, "ask"),
        fill(4, "a1", "sell", 110.0, 3.0, 0.0),
    ]
    result = session_metrics(record(entries)).result("BTCUSDT")
    assert result.realized == pytest.approx(10.0)
    assert result.end_position == pytest.approx(-2.0)
    assert result.unrealized == pytest.approx(-2.0 * (100 - 110))


def test_markouts_are_positive_when_the_market_moves_our_way():
    mids = [100.0] * 11 + [101.0] * 90  # up one at 11 s
    entries = [*order(9, "b1", "buy", 100.0, 1.0), fill(10, "b1", "buy", 100.0, 1.0, 0.0)]
    metrics = session_metrics(record(entries, mids))
    by_horizon = {stats.horizon_ms: stats.mean_bps for stats in metrics.quote_fill_markouts}
    assert by_horizon[100] == pytest.approx(0.0)
    assert by_horizon[5_000] == pytest.approx(100.0)  # +1 on 100: 100 bps our way
    assert metrics.fills[0].markouts_bps[HORIZONS_MS.index(30_000)] == pytest.approx(100.0)


def test_a_markout_past_the_end_of_the_recording_is_left_out():
    entries = [*order(89, "b1", "buy", 100.0, 1.0), fill(90, "b1", "buy", 100.0, 1.0, 0.0)]
    metrics = session_metrics(record(entries))
    assert math.isnan(metrics.fills[0].markouts_bps[HORIZONS_MS.index(30_000)])
    assert metrics.markout(30_000).count == 0 and metrics.markout(5_000).count == 1


def test_uptime_and_the_quotes_an_emergency_pulled():
    entries = [
        *order(10, "b1", "buy", 99.0, 1.0),
        *order(20, "a1", "sell", 101.0, 1.0, "ask"),
        entry(40, "order_intent", action="cancel_all", reason="Laya EMERGENCY on BTCUSDT"),
        entry(40.01, "order_ack", event="canceled", client_oid="b1"),
        entry(40.01, "order_ack", event="canceled", client_oid="a1"),
    ]
    metrics = session_metrics(record(entries))
    assert metrics.uptime["bid"] == pytest.approx(0.30, abs=1e-3)  # 10.01 s to 40.01 s
    assert metrics.uptime["ask"] == pytest.approx(0.20, abs=1e-3)
    assert sorted((q.side, q.price, q.action) for q in metrics.pulled) == [
        ("buy", 99.0, "emergency"),
        ("sell", 101.0, "emergency"),
    ]
    assert metrics.pulled_markouts[0].count == 2


def test_time_in_each_trading_state():
    entries = [entry(25, "state_change", old="ACTIVE", new="PAUSED", reason="operator pause")]
    seconds = session_metrics(record(entries)).state_seconds
    assert seconds["ACTIVE"] == pytest.approx(25.0) and seconds["PAUSED"] == pytest.approx(75.0)


def test_the_series_mark_the_position_to_the_mid_and_end_at_the_net_pnl():
    mids = [100.0] * 11 + [101.0] * 80 + [103.0] * 10  # 101 from 11 s, 103 from 91 s
    entries = [
        *order(1, "b1", "buy", 100.0, 1.0),
        fill(2, "b1", "buy", 100.0, 1.0, 0.02),
        *order(40, "a1", "sell", 102.0, 1.0, "ask"),
        fill(50, "a1", "sell", 102.0, 1.0, 0.01),
        *order(55, "b2", "buy", 101.0, 0.5),
        fill(60, "b2", "buy", 101.0, 0.5, 0.005),
    ]
    metrics = session_metrics(record(entries, mids))
    series = metrics.series
    assert series.step_s == 1.0 and len(series.at_ns) == 101  # every second, 0 s to 100 s
    assert series.at_ns[0] == T0 and series.at_ns[-1] == T0 + 100 * S
    at = {second: float(series.equity[second]) for second in (1, 2, 10, 11, 49, 50, 60, 95)}
    assert at[1] == 0.0
    assert at[2] == pytest.approx(-0.02) and at[10] == pytest.approx(-0.02)  # long 1 at 100
    assert at[11] == pytest.approx(0.98) and at[49] == pytest.approx(0.98)  # the mid at 101
    assert at[50] == pytest.approx(1.97)  # flat: 2 realized, 0.03 fees
    assert at[60] == pytest.approx(1.965)  # long 0.5 at 101, the mid at 101
    assert at[95] == pytest.approx(2.965)  # the mid at 103: +1 open
    assert series.equity[-1] == pytest.approx(metrics.net) and metrics.net == pytest.approx(2.965)
    assert list(series.position[[1, 2, 50, 60, 100]]) == [0.0, 1.0, 0.0, 0.5, 0.5]
    assert series.position[-1] == metrics.result("BTCUSDT").end_position
    assert series.mid[10] == 100.0 and series.mid[11] == 101.0 and series.mid[-1] == 103.0


def test_a_long_session_is_sampled_coarser_and_the_last_mid_is_held():
    entries = [*order(1, "b1", "buy", 100.0, 1.0), fill(2, "b1", "buy", 100.0, 1.0, 0.0)]
    metrics = session_metrics(record(entries, end_s=36_000))  # books for the first 100 s only
    series = metrics.series
    assert series.step_s == 30.0 and len(series.at_ns) == SERIES_MAX_POINTS + 1
    assert series.at_ns[-1] == T0 + 36_000 * S
    assert series.mid[-1] == 100.0 and series.equity[-1] == pytest.approx(metrics.net)
    shown = metrics_json(metrics)["series"]
    assert len(shown["at_ns"]) == len(shown["equity"]) == len(shown["mid"]) == 1_201


def test_positions_are_sums_on_the_size_step_without_float_noise():
    entries = [
        *order(1, "b1", "buy", 100.0, 0.1),
        fill(2, "b1", "buy", 100.0, 0.1, 0.0),
        *order(3, "b2", "buy", 100.0, 0.2),
        fill(4, "b2", "buy", 100.0, 0.2, 0.0),
    ]
    metrics = session_metrics(record(entries))
    shown = metrics_json(metrics)["symbols"][0]
    assert shown["end_position"] == 0.3 and shown["max_abs_position"] == 0.3  # not 0.300...04
    assert metrics.series.position[-1] == 0.3
    assert "+0.300 / 0.300 BTC" in session_text(metrics)  # at BTCUSDT's size decimals


def test_fills_are_every_fill_and_quote_fills_the_quoted_symbols_maker_fills():
    entries = [
        *order(1, "b1", "buy", 100.0, 1.0),
        fill(2, "b1", "buy", 100.0, 1.0, 0.0),
        *order(3, "a1", "sell", 100.0, 1.0, "ask"),
        fill(4, "a1", "sell", 100.0, 1.0, 0.0, maker=False),
    ]
    metrics = session_metrics(record(entries))
    assert (metrics.fill_count, metrics.quote_fills) == (2, 1)
    shown = metrics_json(metrics)
    assert (shown["fills"], shown["quote_fills"]) == (2, 1)
    header, row = ranking_parts([metrics])[0].rows
    assert (row[header.index("fills")], row[header.index("quote fills")]) == ("2", "1")
    header = compare_parts([metrics])[1].rows[0]
    assert "fills" not in header and "quote fills" in header


def test_the_report_says_which_contract_and_fees_each_symbol_ran_on():
    contracts = resolve_contracts(
        ["BTCUSDT"],
        recorded={"BTCUSDT": BTCUSDT},
        fees=FeeRates(maker=-0.0001),
        default_fees=FeeRates(0.0002, 0.0006),
    )
    base = record([*order(1, "b1", "buy", 100.0, 0.1), fill(2, "b1", "buy", 100.0, 0.1, 0.0)])
    metrics = session_metrics(
        dataclasses.replace(base, instruments=contracts.instruments, contracts=contracts)
    )
    assert "BTCUSDT: tick 0.1, lot 0.001 (recording); fees maker -1, taker 6 bps (config)" in (
        session_text(metrics)
    )
    assert metrics_json(metrics)["symbols"][0]["contract"] == {
        "tick": 0.1,
        "lot": 0.001,
        "min_notional": 5.0,
        "origin": "recording",
        "maker_fee_rate": -0.0001,
        "taker_fee_rate": 0.0006,
        "fee_origin": "config",
    }


def test_blocks_split_the_net_at_their_edges_marked_to_the_mid_and_the_fills_by_time():
    mids = [100.0] * 60 + [101.0] * 200 + [103.0] * 41  # 101 from 60 s, 103 from 260 s
    entries = [
        *order(1, "b1", "buy", 100.0, 1.0),
        fill(10, "b1", "buy", 100.0, 1.0, 0.02),
        *order(125, "a1", "sell", 102.0, 1.0, "ask"),
        fill(130, "a1", "sell", 102.0, 1.0, 0.01),
    ]
    metrics = session_metrics(long_record(entries, "laya", mids))
    first, second = metrics.block_figures(120)  # the last 60 s join the second block
    assert (first.start_ns, first.end_ns) == (T0, T0 + 120 * S)
    assert (second.start_ns, second.end_ns) == (T0 + 120 * S, T0 + 300 * S)
    assert first.net == pytest.approx(0.98)  # long 1 at 100, marked at 101, the fee paid
    assert second.net == pytest.approx(0.99) and first.net + second.net == pytest.approx(1.97)
    assert metrics.net == pytest.approx(1.97)
    assert (first.quote_fills, second.quote_fills) == (1, 1)
    assert first.markout_1s.mean_bps == 0.0  # bought at the mid
    assert second.markout_1s.mean_bps == pytest.approx(1e4 / 102)  # sold 1 over the mid
    assert first.net_per_hour == pytest.approx(0.98 * 30)
    (whole,) = metrics.block_figures(300)
    assert whole.net == pytest.approx(metrics.net) and whole.quote_fills == 2
    for block_s, message in (
        (360, "360 s is longer than the run's 300.0 s"),
        (90, "whole number of 60 s"),
    ):
        with pytest.raises(ValueError, match=message):
            metrics.block_figures(block_s)


def test_compare_gives_the_saving_a_fill_with_its_interval_for_the_run_and_each_block():
    none_prices = {10: 99.9, 50: 100.0, 130: 100.1, 170: 99.95}
    laya_prices = {20: 99.0, 60: 99.1, 140: 99.2}
    none, laya = (
        session_metrics(long_record(bought(prices), label, [100.0] * 241, end_s=240))
        for prices, label in ((none_prices, "none"), (laya_prices, "laya"))
    )
    shown = compare_json([laya, none], block_s=120)
    laya_shown, none_shown = shown["gates"]
    assert none_shown["saved_per_fill_1s_bps"] is None and none_shown["quote_fills_lost"] is None
    expected = interval(laya_prices.values(), none_prices.values())
    assert laya_shown["saved_per_fill_1s_bps"] == pytest.approx(expected.bps)
    assert laya_shown["saved_half_width_bps"] == pytest.approx(expected.half_width_bps)
    assert laya_shown["saved_interval"] == "above zero" and laya_shown["quote_fills_lost"] == 0.25
    (laya_1, none_1), (laya_2, none_2) = shown["blocks"]
    assert [block["quote_fills"] for block in (laya_1, none_1, laya_2, none_2)] == [2, 2, 1, 2]
    assert (laya_1["quote_fills_lost"], laya_2["quote_fills_lost"]) == (0.0, 0.5)
    # Net at the edges: long 2 at 99.05 (laya) and 2 at 99.95 (none) marked at 100 at 120 s.
    assert laya_1["net"] == pytest.approx(1.9) and laya_2["net"] == pytest.approx(0.8)
    assert none_1["net"] == pytest.approx(0.1) and none_2["net"] == pytest.approx(-0.05)
    assert laya_1["net_per_hour"] == pytest.approx(1.9 * 30)
    first = interval([99.0, 99.1], [99.9, 100.0])
    assert laya_1["saved_per_fill_1s_bps"] == pytest.approx(first.bps)
    assert laya_1["saved_half_width_bps"] == pytest.approx(first.half_width_bps)
    assert laya_2["saved_half_width_bps"] is None  # one fill has no spread
    assert laya_2["saved_interval"] == "n/a"

    parts = compare_parts([laya, none], block_s=120)
    header, laya_row, _ = parts[1].rows
    assert laya_row[header.index("saved/fill 1 s")] == (
        f"{expected.bps:+,.2f} +- {expected.half_width_bps:.2f} bps"
    )
    assert laya_row[header.index("interval")] == "above zero"
    assert parts[4].startswith("per block of 2 min of market time")
    block_header, *block_rows = parts[5].rows
    assert [row[:3] for row in block_rows] == [
        ("1", "2024-09-10 20:26", "laya"),
        ("1", "2024-09-10 20:26", "none"),
        ("2", "2024-09-10 20:28", "laya"),
        ("2", "2024-09-10 20:28", "none"),
    ]
    saved = block_header.index("saved/fill 1 s")
    assert block_rows[0][saved + 1] == first.interval
    saved_2 = f"{laya_2['saved_per_fill_1s_bps']:+,.2f} bps"
    assert block_rows[2][saved : saved + 2] == (saved_2, "n/a")  # no +- without a spread


def long_record(entries, label, mids, end_s=300) -> SessionRecord:
    """`record`'s session over `end_s` seconds, a book each second at `mids`."""
    times = np.asarray([T0 + k * S for k in range(len(mids))], np.int64)
    series = MidSeries(times, np.asarray(mids))
    base = record(entries, end_s=end_s)
    return dataclasses.replace(base, label=label, mids={"BTCUSDT": series})


def bought(prices: dict[int, float]) -> list[JournalEntry]:
    """One quote of 1 bought at each second's price."""
    entries = []
    for number, (at_s, price) in enumerate(prices.items()):
        entries += [*order(at_s - 1, f"b{number}", "buy", price, 1.0)]
        entries.append(fill(at_s, f"b{number}", "buy", price, 1.0, 0.0))
    return entries


def interval(gate_prices, base_prices) -> Saving:
    """The saving and its 95% interval by hand: the mean markouts' difference, 1.96 standard
    errors of it with the fills independent."""
    gate = np.array([(100.0 - price) / price * 1e4 for price in gate_prices])
    base = np.array([(100.0 - price) / price * 1e4 for price in base_prices])
    error = np.hypot(gate.std(ddof=1) / np.sqrt(gate.size), base.std(ddof=1) / np.sqrt(base.size))
    return Saving(float(gate.mean() - base.mean()), float(1.96 * error))
