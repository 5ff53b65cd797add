"""`benchmark_check`: the latency of `RiskGateway.check`, the order path's hot spot.

A two-symbol gateway (BTCUSDT traded, ETHUSDT hedge) quotes one-lot limit orders a few bps
from the mid, alternating sides and symbols; each approved order is cancelled again (untimed)
so the state stays the same from one sample to the next, and a fresh mark arrives between
samples as it would live. One check in ten is a buy priced through the slippage band, timed
apart: a denial runs the checks up to the price and builds its event. Simulated time moves
150 ms a sample, inside every rate limit. Untimed warm-up checks come first (a process's
first fraction of a second runs slower on the development VM), and the median cost of a clock
read is taken out of every sample.
"""

from __future__ import annotations

import time

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.risk.gateway import RiskGateway
from engine.risk.intents import OrderIntent, Source
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits

_WARMUP_CHECKS = 20_000
_DENIAL_EVERY = 10
_STEP_NS = 150_000_000
_CLOCK_CALIBRATION_READS = 20_000
_MIDS = {"BTCUSDT": 60_000.0, "ETHUSDT": 3_000.0}
_LOTS = {"BTCUSDT": 0.001, "ETHUSDT": 0.01}


def _bench_gateway() -> RiskGateway:
    limits = RiskLimits(
        symbols=(
            SymbolLimits("BTCUSDT", max_position=1.0, max_notional=80_000, max_order_size=0.1),
            SymbolLimits("ETHUSDT", max_position=20.0, max_notional=80_000, max_order_size=2.0),
        ),
        max_net_delta=100_000,
        daily_loss_soft=1_000,
        daily_loss_hard=2_000,
        orders_per_minute=600,
    )
    bounds = OverrideBounds(
        max_position={"BTCUSDT": 2.0, "ETHUSDT": 40.0},
        max_net_delta=200_000,
        max_slippage_bps=50,
        max_orders_per_second=10,
        max_orders_per_minute=600,
    )
    return RiskGateway(
        RiskGatewayConfig(limits=limits, bounds=bounds, hedge_symbol="ETHUSDT", hedge_ratio=0.8)
    )


def _intents(count: int) -> list[OrderIntent]:
    intents = []
    for number in range(count):
        symbol = "BTCUSDT" if number % 4 < 2 else "ETHUSDT"
        denied = number % _DENIAL_EVERY == _DENIAL_EVERY - 1
        buy = number % 2 == 0 or denied
        mid = _MIDS[symbol]
        offset_bps = 80.0 if denied else -2.0
        price = mid * (1 + offset_bps * 1e-4) if buy else mid * (1 - offset_bps * 1e-4)
        intents.append(
            OrderIntent(
                symbol,
                OrderSide.BUY if buy else OrderSide.SELL,
                _LOTS[symbol],
                round(price, 1),
                OrderType.LIMIT,
                f"bench-{number}",
                Source.STRATEGY,
                TimeInForce.POST_ONLY,
                False,
                "quote",
            )
        )
    return intents


def _clock_cost_ns() -> int:
    clock = time.perf_counter_ns
    samples = []
    for _ in range(_CLOCK_CALIBRATION_READS):
        first = clock()
        samples.append(clock() - first)
    samples.sort()
    return samples[len(samples) // 2]


def _percentile_us(samples: list[int], fraction: float) -> float:
    if not samples:
        return 0.0
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] / 1_000


def benchmark_check(iterations: int = 100_000) -> dict[str, float]:
    """p50/p99 of `check` in microseconds, for approvals and denials separately."""
    if iterations < _DENIAL_EVERY:
        raise ValueError(f"iterations must be >= {_DENIAL_EVERY}, got {iterations}")
    gateway = _bench_gateway()
    intents = _intents(1_000)
    clock = time.perf_counter_ns
    clock_cost = _clock_cost_ns()
    approved_ns: list[int] = []
    denied_ns: list[int] = []
    now_ns = 1_700_000_000_000_000_000
    for number in range(_WARMUP_CHECKS + iterations):
        intent = intents[number % len(intents)]
        now_ns += _STEP_NS
        mid = _MIDS[intent.symbol]
        gateway.on_mark(intent.symbol, mid, mid, mid - 0.1, mid + 0.1, now_ns)
        start = clock()
        decision = gateway.check(intent, now_ns)
        elapsed = clock() - start - clock_cost
        if decision.approved:
            gateway.on_order_closed(intent.client_oid, now_ns)
        if number % 256 == 0:
            gateway.drain_events()
        if number >= _WARMUP_CHECKS:
            (approved_ns if decision.approved else denied_ns).append(elapsed)
    return {
        "iterations": float(iterations),
        "p50_us": _percentile_us(approved_ns, 0.50),
        "p99_us": _percentile_us(approved_ns, 0.99),
        "denied_p50_us": _percentile_us(denied_ns, 0.50),
        "denied_p99_us": _percentile_us(denied_ns, 0.99),
        "denied_share": len(denied_ns) / iterations,
    }
