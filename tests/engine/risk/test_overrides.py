"""RiskOverrides: what an operator's form sends is only what the operator changed."""

from __future__ import annotations

from dataclasses import replace

from support.risk import BTC, ETH

from engine.risk.overrides import RiskOverrides

# The limits in force as the console's form shows them: every value given.
IN_FORCE = RiskOverrides(
    {BTC: 0.5, ETH: 10.0}, 40_000.0, 12.0, 6, 300, 0.8, hedge_ratio=0.5, betas={BTC: 1.2}
)


def test_changes_from_keeps_only_the_values_that_differ():
    form = replace(
        IN_FORCE,
        max_position={BTC: 0.5, ETH: 8.0},
        max_slippage_bps=7.5,
        hedge_ratio=0.75,
    )
    assert form.changes_from(IN_FORCE) == RiskOverrides(
        max_position={ETH: 8.0}, max_slippage_bps=7.5, hedge_ratio=0.75
    )


def test_changes_from_an_identical_form_is_empty():
    assert IN_FORCE.changes_from(IN_FORCE).empty


def test_the_order_rate_changes_as_a_pair():
    form = replace(IN_FORCE, orders_per_minute=120)
    assert form.changes_from(IN_FORCE) == RiskOverrides(orders_per_second=6, orders_per_minute=120)


def test_a_beta_and_the_risk_scale_change_alone():
    form = replace(IN_FORCE, risk_scale=0.5, betas={BTC: 1.1})
    assert form.changes_from(IN_FORCE) == RiskOverrides(risk_scale=0.5, betas={BTC: 1.1})
