"""Validation of the risk limits, override bounds and gateway configuration."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from support.risk import BTC, ETH, make_bounds, make_config, make_limits

from engine.risk.limits import EndpointLimits, SymbolLimits


@pytest.mark.parametrize("field", ["max_position", "max_notional", "max_order_size"])
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf])
def test_symbol_limits_reject_a_cap_that_is_not_positive_and_finite(field, value):
    arguments = {"max_position": 1.0, "max_notional": 1.0, "max_order_size": 1.0, field: value}
    with pytest.raises(ValueError, match=field):
        SymbolLimits(BTC, **arguments)


def test_symbol_limits_reject_a_symbol_not_spelled_like_bitget():
    with pytest.raises(ValueError, match="a symbol like BTCUSDT"):
        SymbolLimits("btc-usdt", 1.0, 1.0, 1.0)


def test_endpoint_limits_default_to_bitgets_published_limits():
    assert EndpointLimits() == EndpointLimits(10, 10, 10, 1)
    with pytest.raises(ValueError, match="close_positions_per_second"):
        EndpointLimits(close_positions_per_second=0)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"symbols": ()}, "at least one symbol"),
        ({"symbols": (SymbolLimits(BTC, 1, 1, 1), SymbolLimits(BTC, 1, 1, 1))}, "twice"),
        ({"daily_loss_soft": 1_000, "daily_loss_hard": 1_000}, "must be below"),
        ({"max_net_delta": 0}, "max_net_delta"),
        ({"max_slippage_bps": 20, "max_closing_slippage_bps": 10}, "wider band"),
        ({"max_slippage_bps": math.nan}, "max_slippage_bps"),
        ({"orders_per_second": 11}, "place-order"),
        ({"orders_per_minute": 0}, "orders_per_minute"),
        ({"max_open_orders": 2.5}, "max_open_orders"),
    ],
)
def test_risk_limits_reject_incoherent_values(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_limits(**overrides)


def test_override_bounds_are_read_only_after_validation():
    ceilings = {BTC: 2.0, ETH: 40.0}
    bounds = make_bounds(max_position=ceilings)
    ceilings[BTC] = 100.0
    assert bounds.max_position[BTC] == 2.0
    with pytest.raises(TypeError):
        bounds.max_position[BTC] = 100.0  # type: ignore[index]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"bounds": make_bounds(max_position={BTC: 2.0})}, "exactly the configured symbols"),
        ({"bounds": make_bounds(max_position={BTC: 0.5, ETH: 40.0})}, "above its override"),
        ({"bounds": make_bounds(max_net_delta=1_000)}, "max_net_delta"),
        ({"bounds": make_bounds(max_slippage_bps=5)}, "max_slippage_bps"),
        ({"bounds": make_bounds(max_orders_per_second=12)}, "place-order"),
        ({"bounds": make_bounds(max_orders_per_minute=50)}, "orders_per_minute"),
        ({"bounds": make_bounds(max_slippage_bps=150)}, "wider band"),
        ({"hedge_symbol": "SOLUSDT"}, "not a configured symbol"),
        ({"hedge_ratio": 2.0}, "outside hedge_ratio_band"),
        ({"hedge_ratio_band": (1.0, 0.5)}, "low <= high"),
        ({"beta_band": (0.0, 1.2)}, r"beta_band must be finite with 0 < low <= 1 <= high"),
        ({"beta_band": (1.1, 1.2)}, r"beta_band must be finite with 0 < low <= 1 <= high"),
        ({"beta_band": (0.8, 0.9)}, r"beta_band must be finite with 0 < low <= 1 <= high"),
        ({"beta_band": (0.8, math.inf)}, r"beta_band must be finite"),
        ({"betas": {BTC: 6.0}, "beta_band": (0.8, 2.0)}, "takes BTCUSDT's beta 6 above 10"),
        ({"risk_scale": 1.5}, "risk_scale"),
        ({"max_mark_age_ms": 0}, "max_mark_age_ms"),
        ({"daily_reset_hour_utc": 24}, "hour"),
        ({"rearm_confirmation": " "}, "blank"),
        ({"outbox_capacity": 0}, "outbox_capacity"),
        ({"closing_client_oid_prefix": "close position "}, "closing_client_oid_prefix"),
        ({"closing_client_oid_prefix": "x" * 21}, "closing_client_oid_prefix"),
    ],
)
def test_gateway_config_rejects_incoherent_settings(overrides, message):
    with pytest.raises(ValueError, match=message):
        make_config(**overrides)


def test_gateway_config_accepts_the_test_settings_and_is_frozen():
    config = make_config()
    with pytest.raises(AttributeError):
        config.risk_scale = 0.5  # type: ignore[misc]
    assert replace(config, hedge_symbol=None).hedge_symbol is None
