"""`hft-console kev bench`: every decision it times starts from the same gateway, whatever Kev's
command before it did (Kev's part of that reset goes through Kev's one way in,
`RiskGateway.apply_kev_command`)."""

from __future__ import annotations

import numpy as np

from engine.kev.context import snapshot_of
from engine.laya.feature_set import FEATURE_COUNT
from engine.risk.commands import KevAction
from engine.risk.events import TradingState
from engine.risk.gateway import RiskGateway
from engine.tools.bench.kev import HEDGE, TRADED, MarketContext, _prepare, bench_gateway_config

NOW_NS = 1_723_111_200_000_000_000
TOUCHES = {TRADED: (60_000.0, 60_000.2), HEDGE: (3_000.0, 3_000.1)}


def test_each_decision_starts_from_the_configured_gateway_whatever_kev_did_before():
    gateway = RiskGateway(bench_gateway_config())
    features = np.zeros((1, FEATURE_COUNT), dtype=np.float32)
    context = MarketContext(
        snapshot_of(TRADED, 0, 3, [0.1, 0.2, 0.3, 0.4], 60_000.1, features), TOUCHES
    )
    kev = gateway.apply_kev_command(KevAction.PAUSE_QUOTING, 0.4, 0.5, NOW_NS)
    assert (kev.state, kev.risk_scale, kev.hedge_ratio) == (TradingState.PAUSED, 0.4, 0.5)
    gateway.drain_events()
    _prepare(gateway, context, NOW_NS)
    risk = gateway.snapshot()
    assert (risk.state, risk.risk_scale, risk.hedge_ratio) == (TradingState.ACTIVE, 1.0, 0.8)
    assert {p.symbol: p.size > 0 for p in risk.positions if p.size} == {TRADED: True, HEDGE: False}
    assert gateway.drain_events() == ()  # the reset is not counted as the next decision's
