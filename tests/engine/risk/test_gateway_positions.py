"""Positions, PnL, order lifecycle and the daily loss limits."""

from __future__ import annotations

import pytest
from support.risk import (
    BTC,
    BUY,
    ETH,
    SECOND,
    SELL,
    T0,
    fill,
    limit,
    make_gateway,
    mark,
    open_position,
    position_of,
)

from engine.risk.events import DailyPnlReset, PositionReconciled, TradingState, TradingStateChanged
from engine.risk.intents import DenialReason, Source
from engine.risk.overrides import RiskOverrides

HOUR = 3_600 * SECOND


def test_fills_build_average_entry_and_realized_pnl_net_of_fees():
    gateway = make_gateway()
    first = limit(BTC, BUY, 0.2, price=60_000.0)
    second = limit(BTC, BUY, 0.2, price=60_010.0)
    for intent in (first, second):
        assert gateway.check(intent, T0).approved
        fill(gateway, intent, T0, fee=1.0)
    btc = gateway.snapshot().positions[0]
    assert btc.size == pytest.approx(0.4)
    assert btc.entry_price == pytest.approx(60_005.0)
    close = limit(BTC, SELL, 0.4, price=60_020.0)
    assert gateway.check(close, T0).approved
    fill(gateway, close, T0, fee=2.0)
    snapshot = gateway.snapshot()
    assert snapshot.positions[0].size == 0
    assert snapshot.realized_pnl == pytest.approx(0.4 * 15.0)
    assert snapshot.fees == pytest.approx(4.0)
    assert snapshot.daily_pnl == pytest.approx(6.0 - 4.0)


def test_fill_that_flips_the_position_reopens_at_the_fill_price():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.2, 59_000.0, T0)
    flip = limit(BTC, SELL, 0.5, price=60_000.0)
    assert gateway.check(flip, T0).approved
    fill(gateway, flip, T0)
    btc = gateway.snapshot().positions[0]
    assert (btc.size, btc.entry_price, btc.realized_pnl) == (
        pytest.approx(-0.3),
        60_000.0,
        pytest.approx(200.0),
    )


def test_unrealized_pnl_follows_the_mark():
    gateway = make_gateway()
    open_position(gateway, BTC, 0.5)
    mark(gateway, BTC, T0 + SECOND, mid=60_100.0)
    snapshot = gateway.snapshot()
    assert snapshot.unrealized_pnl == pytest.approx(50.0)
    assert snapshot.positions[0].notional == pytest.approx(0.5 * 60_100.0)
    assert snapshot.daily_pnl == pytest.approx(50.0)


def test_partial_fills_release_the_reservation_step_by_step():
    gateway = make_gateway()
    order = limit(BTC, BUY, 0.5)
    assert gateway.check(order, T0).approved
    fill(gateway, order, T0, size=0.2)
    btc = gateway.snapshot().positions[0]
    assert (btc.size, btc.pending_buy, btc.open_orders) == (0.2, pytest.approx(0.3), 1)
    fill(gateway, order, T0, size=0.3)
    btc = gateway.snapshot().positions[0]
    assert (btc.size, btc.pending_buy, btc.open_orders) == (pytest.approx(0.5), 0.0, 0)
    assert gateway.snapshot().open_orders == 0


def test_cancel_releases_what_is_left_of_a_partly_filled_order():
    gateway = make_gateway()
    order = limit(BTC, SELL, 0.5)
    other = limit(BTC, SELL, 0.1)
    assert gateway.check(order, T0).approved
    assert gateway.check(other, T0).approved
    fill(gateway, order, T0, size=0.1)
    gateway.on_order_closed(order.client_oid, T0)
    btc = gateway.snapshot().positions[0]
    assert (btc.size, btc.pending_sell, btc.open_orders) == (-0.1, pytest.approx(0.1), 1)


def test_rejected_order_releases_its_reservation():
    gateway = make_gateway()
    order = limit(BTC, BUY, 0.5)
    assert gateway.check(order, T0).approved
    gateway.on_order_closed(order.client_oid, T0)
    snapshot = gateway.snapshot()
    assert snapshot.open_orders == 0
    assert snapshot.positions[0].pending_buy == 0
    assert snapshot.net_delta_long_bound == 0


def test_acknowledgements_are_tracked_and_unknown_updates_counted():
    gateway = make_gateway()
    order = limit(BTC, BUY, 0.1)
    assert gateway.check(order, T0).approved
    assert gateway.snapshot().unacknowledged_orders == 1
    gateway.on_order_acknowledged(order.client_oid, T0)
    assert gateway.snapshot().unacknowledged_orders == 0
    gateway.on_order_acknowledged("never-sent", T0)
    gateway.on_order_closed("never-sent", T0)
    assert gateway.snapshot().unknown_order_updates == 2


def test_fill_of_an_unknown_order_still_moves_the_position():
    gateway = make_gateway()
    gateway.on_fill("placed-before-restart", ETH, SELL, 2.0, 3_000.0, 0.5, T0)
    snapshot = gateway.snapshot()
    assert position_of(gateway, ETH) == -2.0
    assert snapshot.unknown_order_updates == 1


def test_invalid_fill_is_ignored_and_counted():
    gateway = make_gateway()
    gateway.on_fill("x", BTC, BUY, -1.0, 60_000.0, 0.0, T0)
    gateway.on_fill("x", "XYZUSDT", BUY, 1.0, 1.0, 0.0, T0)
    gateway.on_fill("x", BTC, "buy", 1.0, 60_000.0, 0.0, T0)
    assert gateway.snapshot().invalid_inputs == 3
    assert position_of(gateway, BTC) == 0


def test_soft_daily_loss_switches_to_reducing_once_per_crossing():
    gateway = make_gateway()
    open_position(gateway, BTC, 0.5)
    gateway.drain_events()
    mark(gateway, BTC, T0 + SECOND, mid=58_900.0)  # -550 USDT
    assert gateway.state is TradingState.REDUCING
    assert gateway.check(limit(ETH, BUY, 0.1), T0 + SECOND).reason is DenialReason.REDUCING_ONLY
    (change,) = [e for e in gateway.drain_events() if isinstance(e, TradingStateChanged)]
    assert change.source is Source.RISK
    assert "soft" in change.reason
    gateway.resume(T0 + SECOND)
    mark(gateway, BTC, T0 + 2 * SECOND, mid=58_850.0)
    assert gateway.state is TradingState.ACTIVE  # the operator's resume holds


def test_hard_daily_loss_halts_and_blocks_rearm_until_the_daily_reset():
    gateway = make_gateway()
    open_position(gateway, BTC, 0.5)
    mark(gateway, BTC, T0 + SECOND, mid=57_900.0)  # -1050 USDT
    assert gateway.state is TradingState.HALTED
    assert "hard" in gateway.snapshot().state_reason
    close_all = gateway.closing_intents()
    assert gateway.check(close_all[0], T0 + SECOND).approved
    fill(gateway, close_all[0], T0 + SECOND, price=57_900.0)
    outcome = gateway.rearm(T0 + 2 * SECOND, "REARM")
    assert not outcome.accepted
    assert "00:00 UTC" in outcome.text
    next_day = T0 + 24 * HOUR
    assert gateway.rearm(next_day, "REARM").accepted
    assert gateway.snapshot().daily_pnl == 0


def test_daily_loss_counter_resets_at_the_configured_utc_hour():
    gateway = make_gateway(daily_reset_hour_utc=8)
    open_position(gateway, BTC, 0.5)
    mark(gateway, BTC, T0 + SECOND, mid=59_800.0)
    assert gateway.snapshot().daily_pnl == pytest.approx(-100.0)
    gateway.drain_events()
    mark(gateway, BTC, T0 + 8 * HOUR - SECOND, mid=59_800.0)
    assert gateway.snapshot().daily_pnl == pytest.approx(-100.0)
    mark(gateway, BTC, T0 + 8 * HOUR, mid=59_700.0)
    resets = [e for e in gateway.drain_events() if isinstance(e, DailyPnlReset)]
    assert [(e.closed_day_pnl, e.at_ns) for e in resets] == [(pytest.approx(-100.0), T0 + 8 * HOUR)]
    assert gateway.snapshot().daily_pnl == pytest.approx(-50.0)


def test_position_sync_replaces_the_position_without_moving_daily_pnl():
    gateway = make_gateway()
    gateway.drain_events()
    gateway.on_position_sync(BTC, 0.6, 59_000.0, T0)
    snapshot = gateway.snapshot()
    assert position_of(gateway, BTC) == 0.6
    assert snapshot.unrealized_pnl == pytest.approx(600.0)
    assert snapshot.daily_pnl == pytest.approx(0.0)
    assert gateway.drain_events() == (PositionReconciled(BTC, 0.0, 0.6, T0),)
    assert gateway.check(limit(BTC, BUY, 0.5), T0).reason is DenialReason.POSITION_LIMIT


def test_snapshot_reports_exposure_limits_and_counts():
    gateway = make_gateway()
    open_position(gateway, BTC, 0.5)
    assert gateway.check(limit(ETH, SELL, 2.0), T0).approved
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    snapshot = gateway.snapshot()
    btc, eth = snapshot.positions
    assert (btc.max_position, btc.max_notional) == (0.5, 45_000)
    assert eth.delta_weight == 0.5
    assert snapshot.net_delta == pytest.approx(30_000)
    assert snapshot.net_delta_short_bound == pytest.approx(30_000 - 0.5 * 6_000)
    assert snapshot.max_net_delta == 40_000
    assert snapshot.limits.max_position[BTC] == 1.0
    assert snapshot.limits.orders_per_second == 5
    assert snapshot.hedge_symbol == ETH
    assert snapshot.open_orders == 1
    assert set(snapshot.denial_counts) == set(DenialReason)


def test_the_desks_reads_are_the_snapshots_figures():
    gateway = make_gateway()
    open_position(gateway, BTC, 0.3)
    open_position(gateway, ETH, -2.0)
    gateway.apply_kev_command("reduce", 0.5, 0.8, T0)
    gateway.flatten(T0)
    snapshot = gateway.snapshot()
    for view in snapshot.positions:
        assert gateway.position(view.symbol) == view.size
        assert gateway.mark(view.symbol) == view.mark_price
        cap = min(view.max_position, view.max_notional / view.mark_price)
        assert gateway.position_cap(view.symbol) == pytest.approx(cap, rel=1e-15)
    assert gateway.risk_scale == snapshot.risk_scale == 0.5
    assert gateway.hedge_ratio == snapshot.hedge_ratio
    assert gateway.max_slippage_bps == snapshot.limits.max_slippage_bps
    assert gateway.flatten_requested is snapshot.flatten_requested is True
