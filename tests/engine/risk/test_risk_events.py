"""The bounded event outbox, and the benchmark function's report (never its timings)."""

from __future__ import annotations

import pytest
from support.risk import BTC, BUY, T0, limit, make_gateway

from engine.risk.events import (
    EventOutbox,
    EventsDropped,
    OrderDenied,
    OutboxOverflow,
    RiskLimit,
    RiskLimitChanged,
)
from engine.risk.intents import Source
from engine.tools.bench.risk import benchmark_check


def limit_changed(number: int) -> RiskLimitChanged:
    return RiskLimitChanged(RiskLimit.RISK_SCALE, None, 1.0, 0.5, Source.OPERATOR, number)


def test_drop_oldest_keeps_the_latest_events_and_reports_the_drops_first():
    outbox = EventOutbox(3, OutboxOverflow.DROP_OLDEST)
    for number in range(5):
        outbox.append(limit_changed(number))
    drained = outbox.drain()
    assert drained == (EventsDropped(2, 1), limit_changed(2), limit_changed(3), limit_changed(4))
    assert outbox.drain() == ()
    assert outbox.dropped_total == 2


def test_drop_newest_keeps_the_first_events():
    outbox = EventOutbox(2, OutboxOverflow.DROP_NEWEST)
    for number in range(4):
        outbox.append(limit_changed(number))
    assert outbox.drain() == (EventsDropped(2, 3), limit_changed(0), limit_changed(1))


def test_outbox_capacity_must_be_positive():
    with pytest.raises(ValueError, match="capacity"):
        EventOutbox(0, OutboxOverflow.DROP_OLDEST)


def test_gateway_outbox_never_merges_denials_and_counts_what_it_drops():
    gateway = make_gateway(outbox_capacity=4)
    gateway.drain_events()
    for _ in range(6):
        gateway.check(limit(BTC, BUY, 0.9), T0)
    events = gateway.drain_events()
    assert events[0] == EventsDropped(2, T0)
    assert len([e for e in events if isinstance(e, OrderDenied)]) == 4
    snapshot = gateway.snapshot()
    assert snapshot.events_dropped == 2
    assert snapshot.denials_total == 6


def test_benchmark_check_reports_percentiles_for_approvals_and_denials():
    report = benchmark_check(iterations=200)
    assert set(report) == {
        "iterations",
        "p50_us",
        "p99_us",
        "denied_p50_us",
        "denied_p99_us",
        "denied_share",
    }
    assert report["iterations"] == 200
    assert report["denied_share"] == pytest.approx(0.1)
    assert 0 < report["p50_us"] <= report["p99_us"]
    assert 0 < report["denied_p50_us"] <= report["denied_p99_us"]
