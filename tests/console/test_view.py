"""The view models: the overrides the risk dialog sends, judged by the engine's own rules;
derived figures of the depth and trading views."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from console_scenarios import BOUNDS, OVERRIDES, depth_view, trading_view

from console.engine.views import console_event
from console.view import DepthView
from engine.bitget.orders import OrderSide, OrderType
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.risk.events import (
    DailyPnlReset,
    OrderDenied,
    PositionReconciled,
    RiskLimit,
    RiskLimitChanged,
)
from engine.risk.intents import DenialReason, OrderIntent, Source
from engine.risk.overrides import RiskOverrides
from engine.trading.events import OrderFilled


def overrides(**changes) -> RiskOverrides:
    values = {
        "max_position": dict(OVERRIDES.max_position),
        "max_net_delta": OVERRIDES.max_net_delta,
        "max_slippage_bps": OVERRIDES.max_slippage_bps,
        "orders_per_second": OVERRIDES.orders_per_second,
        "orders_per_minute": OVERRIDES.orders_per_minute,
        "risk_scale": OVERRIDES.risk_scale,
    }
    return RiskOverrides(**{**values, **changes})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"max_position": {"BTCUSDT": -0.1}}, "BTCUSDT max position"),
        ({"max_net_delta": math.nan}, "max net delta"),
        ({"max_slippage_bps": 10_001.0}, "max slippage"),
        ({"orders_per_second": 0}, "orders per second"),
        ({"orders_per_second": True}, "orders per second"),
        ({"orders_per_minute": 2.5}, "orders per minute"),
        ({"risk_scale": 1.01}, "risk scale"),
        ({"risk_scale": "1"}, "risk scale must be within [0, 1], got '1'"),
    ],
)
def test_bad_overrides_are_refused_by_the_engines_rules(changes, message):
    (problem,) = overrides(**changes).problems(BOUNDS)
    assert message in problem


def test_overrides_cannot_be_changed_after_validation():
    source = {"BTCUSDT": 0.02}
    made = overrides(max_position=source)
    source["BTCUSDT"] = 99.0
    assert made.max_position["BTCUSDT"] == 0.02
    with pytest.raises(TypeError):
        made.max_position["BTCUSDT"] = 1.0  # type: ignore[index]


def test_overrides_within_the_bounds_have_nothing_beyond():
    assert OVERRIDES.problems(BOUNDS) == []


def test_overrides_beyond_the_bounds_name_each_value():
    problems = overrides(
        max_position={"BTCUSDT": 0.06, "SOLUSDT": 1.0},
        max_net_delta=6_000.0,
        orders_per_minute=601,
    ).problems(BOUNDS)
    assert problems == [
        "BTCUSDT max position must be within [0, 0.05 BTC], got 0.06",
        "'SOLUSDT' is not a configured symbol",
        "max net delta must be within [0, 5000] USDT, got 6000.0",
        "orders per minute must be an integer within [1, 600], got 601",
    ]


def test_depth_view_derives_spread_mid_and_bps():
    view = depth_view()
    assert view.spread == pytest.approx(0.1)
    assert view.mid == pytest.approx(60_000.05)
    assert view.spread_bps == pytest.approx(0.1 / 60_000.05 * 1e4)


def test_a_one_sided_book_has_no_spread():
    view = depth_view()
    one_sided = DepthView(view.symbol, view.bids, (), math.nan, (), 1, 3, 0)
    assert math.isnan(one_sided.spread) and math.isnan(one_sided.mid)


def test_exposure_is_open_positions_or_orders():
    assert trading_view().exposed
    assert not trading_view(exposed=False).exposed


def test_exposure_says_what_is_open_with_sizes_in_the_coin():
    assert trading_view().exposure == "4 orders and positions of +0.014 BTC, -0.2 ETH"
    assert trading_view(exposed=False).exposure == "nothing"
    one = replace(trading_view(), open_orders=1, positions=trading_view().positions[:1])
    assert one.exposure == "1 order and a position of +0.014 BTC"


@pytest.mark.parametrize(
    ("event", "text"),
    [
        (
            OrderFilled("hc1", "BTCUSDT", OrderSide.BUY, 60_000.1, 0.002, 0.0256, True, "t1", 1),
            "BTCUSDT buy 0.002 BTC @ 60,000.1 maker, fee -0.0256 USDT (hc1)",
        ),
        (
            OrderFilled("hc2", "ETHUSDT", OrderSide.SELL, 3_000.5, 0.2, -0.001, False, "t2", 1),
            "ETHUSDT sell 0.2 ETH @ 3,000.50 taker, fee +0.0010 USDT (hc2)",  # at its 2 decimals
        ),
        (
            OrderDenied(
                OrderIntent(
                    "BTCUSDT", OrderSide.BUY, 0.6, 60_000.0, OrderType.LIMIT, "hc3", Source.STRATEGY
                ),
                DenialReason.ORDER_SIZE,
                "size 0.6 BTC is above the max order size 0.5 BTC",
                1,
            ),
            "BTCUSDT buy 0.6 BTC denied (ORDER_SIZE): size 0.6 BTC is above the max order size "
            "0.5 BTC",
        ),
        (
            PositionReconciled("BTCUSDT", 0.002, 0.0, 1),
            "BTCUSDT position synced +0.002 BTC -> 0 BTC",
        ),
        (
            RiskLimitChanged(RiskLimit.MAX_POSITION, "BTCUSDT", 0.01, 0.02, Source.OPERATOR, 1),
            "limit max_position BTCUSDT: 0.01 BTC -> 0.02 BTC (operator)",
        ),
        (
            RiskLimitChanged(RiskLimit.MAX_NET_DELTA, None, 2_500.0, 1_000.0, Source.OPERATOR, 1),
            "limit max_net_delta: 2500 -> 1000 USDT (operator)",
        ),
        (DailyPnlReset(-12.5, 1), "daily PnL reset (the day closed -12.50 USDT)"),
    ],
    ids=["fill", "rebate", "denial", "position", "max-position", "net-delta", "daily-reset"],
)
def test_event_lines_give_sizes_in_the_coin_and_money_in_usdt_signed_by_its_pnl_effect(event, text):
    assert console_event(event, 0, {"BTCUSDT": BTCUSDT, "ETHUSDT": ETHUSDT})[2] == text
