"""The view models: overrides validated on construction and checked against the engine's
bounds; derived figures of the depth and trading views."""

from __future__ import annotations

import math

import pytest
from console_scenarios import BOUNDS, OVERRIDES, depth_view, trading_view

from console.view import DepthView, RiskOverrides


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
        ({"max_position": {}}, "at least one symbol"),
        ({"max_position": {"BTCUSDT": -0.1}}, "max position BTCUSDT"),
        ({"max_net_delta": math.nan}, "max net delta"),
        ({"max_slippage_bps": 10_001.0}, "max slippage"),
        ({"orders_per_second": 0}, "orders per second"),
        ({"orders_per_second": True}, "orders per second"),
        ({"orders_per_minute": 2.5}, "orders per minute"),
        ({"risk_scale": 1.01}, "risk scale"),
        ({"risk_scale": "1"}, "risk scale must be a number"),
    ],
)
def test_bad_overrides_are_refused_on_construction(changes, message):
    with pytest.raises(ValueError, match=message):
        overrides(**changes)


def test_overrides_cannot_be_changed_after_validation():
    source = {"BTCUSDT": 0.02}
    made = overrides(max_position=source)
    source["BTCUSDT"] = 99.0
    assert made.max_position["BTCUSDT"] == 0.02
    with pytest.raises(TypeError):
        made.max_position["BTCUSDT"] = 1.0  # type: ignore[index]


def test_overrides_within_the_bounds_have_nothing_beyond():
    assert OVERRIDES.beyond(BOUNDS) == ()


def test_overrides_beyond_the_bounds_name_each_value():
    problems = overrides(
        max_position={"BTCUSDT": 0.06, "SOLUSDT": 1.0},
        max_net_delta=6_000.0,
        orders_per_minute=601,
    ).beyond(BOUNDS)
    assert problems == (
        "max position SOLUSDT: no bound configured for this symbol",
        "max position BTCUSDT: 0.06 is above the ceiling 0.05",
        "max net delta: 6000 is above the ceiling 5000",
        "orders per minute: 601 is above the ceiling 600",
    )


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
