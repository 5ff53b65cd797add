"""Trading states: pause, resume, flatten, the latched kill switch and re-arming, closing
orders, and the events every change emits."""

from __future__ import annotations

import pytest
from support.risk import BTC, BUY, ETH, MIDS, MS, SECOND, SELL, T0, fill, limit, make_gateway

from engine.bitget.orders import OrderType
from engine.risk.events import (
    CommandRejected,
    SymbolPauseChanged,
    TradingState,
    TradingStateChanged,
)
from engine.risk.gateway import RiskGateway
from engine.risk.intents import DenialReason, Source
from engine.risk.overrides import RiskOverrides


def state_changes(gateway: RiskGateway) -> list[tuple[TradingState, TradingState, Source]]:
    return [
        (e.old, e.new, e.source)
        for e in gateway.drain_events()
        if isinstance(e, TradingStateChanged)
    ]


def close_all(gateway: RiskGateway, now_ns: int) -> None:
    """Send every closing order through the gateway and fill it at the mid."""
    for intent in gateway.closing_intents():
        decision = gateway.check(intent, now_ns)
        assert decision.approved, decision
        fill(gateway, intent, now_ns, price=MIDS[intent.symbol])


def test_gateway_starts_active():
    gateway = make_gateway()
    assert gateway.state is TradingState.ACTIVE
    assert gateway.check(limit(BTC, BUY, 0.1), T0).approved


def test_pause_denies_every_new_order_and_keeps_positions():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    outcome = gateway.pause(T0)
    assert outcome.accepted
    assert gateway.state is TradingState.PAUSED
    for intent in (limit(BTC, BUY, 0.1), limit(BTC, SELL, 0.1, reduce_only=True)):
        assert gateway.check(intent, T0).reason is DenialReason.TRADING_PAUSED
    assert gateway.snapshot().positions[0].size == 0.5
    assert gateway.closing_intents()  # positions kept, still closable by a flatten


def test_resume_from_pause_allows_orders_again():
    gateway = make_gateway()
    gateway.pause(T0)
    assert gateway.resume(T0).accepted
    assert gateway.state is TradingState.ACTIVE
    assert gateway.check(limit(BTC, BUY, 0.1), T0).approved
    assert gateway.resume(T0).text == "already active"


def test_flatten_goes_reducing_then_paused_once_flat():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    gateway.on_position_sync(ETH, -3.0, MIDS[ETH], T0)
    gateway.drain_events()
    assert gateway.flatten(T0).accepted
    assert gateway.state is TradingState.REDUCING
    assert gateway.snapshot().flatten_requested
    close_all(gateway, T0)
    assert gateway.state is TradingState.PAUSED
    assert gateway.snapshot().flat
    assert state_changes(gateway) == [
        (TradingState.ACTIVE, TradingState.REDUCING, Source.OPERATOR),
        (TradingState.REDUCING, TradingState.PAUSED, Source.RISK),
    ]


def test_flatten_when_already_flat_pauses_at_once():
    gateway = make_gateway()
    gateway.flatten(T0)
    assert gateway.state is TradingState.PAUSED
    assert not gateway.snapshot().flatten_requested


def test_flatten_still_works_after_a_pause():
    """The freqtrade trap (anchors (c) 8): stopping entries first must not disable the exit."""
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.3, MIDS[BTC], T0)
    gateway.pause(T0)
    gateway.flatten(T0)
    assert gateway.state is TradingState.REDUCING
    close_all(gateway, T0)
    assert gateway.state is TradingState.PAUSED
    assert gateway.snapshot().flat


def test_reducing_allows_only_orders_that_shrink_a_position():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    gateway.flatten(T0)
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.REDUCING_ONLY
    assert gateway.check(limit(ETH, SELL, 0.1), T0).reason is DenialReason.REDUCING_ONLY
    assert gateway.check(limit(BTC, SELL, 0.3), T0).approved
    flip = limit(BTC, SELL, 0.3)  # 0.3 reserved + 0.3 would take the position to -0.1
    assert gateway.check(flip, T0).reason is DenialReason.REDUCING_ONLY
    assert gateway.check(limit(BTC, SELL, 0.2), T0).approved


def test_kill_halts_and_only_reduce_only_orders_that_shrink_pass():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    assert gateway.kill(T0).accepted
    assert gateway.state is TradingState.HALTED
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.TRADING_HALTED
    not_reduce_only = limit(BTC, SELL, 0.1)
    assert gateway.check(not_reduce_only, T0).reason is DenialReason.TRADING_HALTED
    flip = limit(BTC, SELL, 0.6, reduce_only=True)
    assert gateway.check(flip, T0).reason is DenialReason.TRADING_HALTED
    assert gateway.check(limit(BTC, SELL, 0.5, reduce_only=True), T0).approved


def test_halt_is_latched_against_resume_pause_and_flatten():
    gateway = make_gateway()
    gateway.kill(T0)
    gateway.drain_events()
    assert not gateway.resume(T0).accepted
    assert not gateway.pause(T0).accepted
    assert gateway.flatten(T0).text == "halted: already flattening"
    assert gateway.kill(T0).text == "already halted"
    assert gateway.state is TradingState.HALTED
    rejected = [e for e in gateway.drain_events() if isinstance(e, CommandRejected)]
    assert [e.command for e in rejected] == ["resume", "pause"]


def test_rearm_needs_the_confirmation_and_goes_to_paused():
    gateway = make_gateway()
    gateway.kill(T0)
    outcome = gateway.rearm(T0, "yes")
    assert not outcome.accepted
    assert "REARM" in outcome.text
    assert gateway.state is TradingState.HALTED
    assert gateway.rearm(T0, "REARM").accepted
    assert gateway.state is TradingState.PAUSED
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.TRADING_PAUSED
    gateway.resume(T0)
    assert gateway.check(limit(BTC, BUY, 0.1), T0).approved


def test_rearm_when_not_halted_is_refused():
    gateway = make_gateway()
    assert not gateway.rearm(T0, "REARM").accepted
    assert gateway.state is TradingState.ACTIVE


def test_closing_intents_flatten_every_position_in_max_order_size_pieces():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 1.2, MIDS[BTC], T0)
    gateway.on_position_sync(ETH, -7.0, MIDS[ETH], T0)
    gateway.kill(T0, reason="operator kill switch")
    intents = gateway.closing_intents()
    assert [(i.symbol, i.side, i.size) for i in intents] == [
        (BTC, SELL, 0.5),
        (BTC, SELL, 0.5),
        (BTC, SELL, 0.2),
        (ETH, BUY, 5.0),
        (ETH, BUY, 2.0),
    ]
    assert all(
        i.reduce_only and i.order_type is OrderType.MARKET and i.source is Source.RISK
        for i in intents
    )
    assert len({i.client_oid for i in intents}) == len(intents)
    assert all(i.client_oid.startswith("risk-close-") for i in intents)
    close_all(gateway, T0)
    assert gateway.snapshot().flat
    assert gateway.state is TradingState.HALTED  # flat, still latched


def test_closing_intents_are_net_of_closing_orders_already_reserved():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.4, MIDS[BTC], T0)
    gateway.kill(T0)
    first = gateway.closing_intents()
    assert [i.size for i in first] == [0.4]
    assert gateway.check(first[0], T0).approved
    assert gateway.closing_intents() == ()
    gateway.on_order_closed(first[0].client_oid, T0)
    assert [i.size for i in gateway.closing_intents()] == [0.4]


def test_closing_intents_absorb_float_residue_of_partial_closes():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.0003, MIDS[BTC], T0)
    gateway.kill(T0)
    for _ in range(2):
        assert gateway.check(limit(BTC, SELL, 0.0001, reduce_only=True), T0).approved
    (last,) = gateway.closing_intents()  # 0.0003 - 0.0002 is 0.00009999999999999998
    assert last.size == 0.0001
    assert gateway.check(last, T0).approved
    assert gateway.closing_intents() == ()


def test_closing_orders_pass_while_halted_with_a_bad_feed():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.4, MIDS[BTC], T0)
    gateway.on_feed_health(BTC, False, "resyncing")
    gateway.kill(T0)
    late = T0 + 30 * SECOND  # the mark is long stale too
    (intent,) = gateway.closing_intents()
    assert gateway.check(intent, late).approved


def test_closing_orders_pass_on_a_symbol_never_marked():
    gateway = RiskGateway(make_gateway().config)
    gateway.on_position_sync(BTC, 0.4, 60_000.0, T0)
    gateway.kill(T0)
    (intent,) = gateway.closing_intents()
    assert gateway.check(intent, T0).approved


def test_flatten_does_not_deadlock_on_the_net_delta_limit():
    """A long and a short that offset each other: closing either one alone moves the net
    delta through its limit, and a flatten must still go through."""
    gateway = make_gateway(hedge_ratio=1.0)
    gateway.on_position_sync(BTC, 1.0, MIDS[BTC], T0)
    gateway.on_position_sync(ETH, -20.0, MIDS[ETH], T0)
    gateway.set_limits(RiskOverrides(max_net_delta=10_000), T0)
    assert gateway.check(limit(BTC, SELL, 0.5), T0).reason is DenialReason.NET_DELTA_LIMIT
    gateway.flatten(T0)
    now = T0
    for _ in range(3):
        now += SECOND
        for symbol in MIDS:
            gateway.on_mark(symbol, MIDS[symbol], MIDS[symbol], MIDS[symbol], MIDS[symbol], now)
        close_all(gateway, now)
    assert gateway.snapshot().flat
    assert gateway.state is TradingState.PAUSED


def test_state_changes_are_events_with_reason_and_source():
    gateway = make_gateway()
    gateway.drain_events()
    gateway.pause(T0, reason="lunch")
    gateway.resume(T0 + MS)
    gateway.kill(T0 + 2 * MS)
    events = [e for e in gateway.drain_events() if isinstance(e, TradingStateChanged)]
    assert events == [
        TradingStateChanged(TradingState.ACTIVE, TradingState.PAUSED, "lunch", Source.OPERATOR, T0),
        TradingStateChanged(
            TradingState.PAUSED, TradingState.ACTIVE, "operator resume", Source.OPERATOR, T0 + MS
        ),
        TradingStateChanged(
            TradingState.ACTIVE,
            TradingState.HALTED,
            "operator kill switch",
            Source.OPERATOR,
            T0 + 2 * MS,
        ),
    ]


def test_snapshot_reports_state_reason_and_is_frozen():
    gateway = make_gateway()
    gateway.kill(T0, reason="exchange incident")
    snapshot = gateway.snapshot()
    assert (snapshot.state, snapshot.state_reason) == (TradingState.HALTED, "exchange incident")
    with pytest.raises(AttributeError):
        snapshot.state = TradingState.ACTIVE  # type: ignore[misc]


def test_a_paused_symbol_alone_refuses_risk_increasing_orders_the_others_go_on():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.4, MIDS[BTC], T0)
    gateway.drain_events()
    outcome = gateway.pause_symbol(BTC, T0, "operator pause")
    assert outcome == (True, "BTCUSDT paused: operator pause")
    assert gateway.state is TradingState.ACTIVE  # the book goes on
    decision = gateway.check(limit(BTC, BUY, 0.1), T0)
    assert (decision.reason, decision.text) == (
        DenialReason.SYMBOL_PAUSED,
        "BTCUSDT stood aside: operator pause",
    )
    assert gateway.check(limit(BTC, SELL, 0.1), T0).approved  # shrinks the long: passes
    assert gateway.check(limit(ETH, BUY, 1.0), T0).approved
    views = {view.symbol: view.stood_aside for view in gateway.snapshot().positions}
    assert views == {BTC: "operator pause", ETH: ""}
    assert gateway.snapshot().denial_counts[DenialReason.SYMBOL_PAUSED] == 1
    (changed,) = [e for e in gateway.drain_events() if isinstance(e, SymbolPauseChanged)]
    assert changed == SymbolPauseChanged(BTC, True, "operator pause", Source.OPERATOR, T0)

    assert gateway.resume_symbol(BTC, T0 + 1, "operator resume") == (True, "BTCUSDT resumed")
    assert gateway.check(limit(BTC, BUY, 0.1), T0 + 1).approved
    (changed,) = [e for e in gateway.drain_events() if isinstance(e, SymbolPauseChanged)]
    assert changed == SymbolPauseChanged(BTC, False, "operator resume", Source.OPERATOR, T0 + 1)


def test_each_source_holds_its_own_symbol_pause():
    gateway = make_gateway()
    venue = "BTCUSDT is not trading: its status is 'maintain'"
    gateway.pause_symbol(BTC, T0, venue, Source.RISK)
    gateway.drain_events()
    # The operator cannot lift the venue's stand-aside; said, not silently accepted.
    outcome = gateway.resume_symbol(BTC, T0, "operator resume")
    assert outcome == (False, f"BTCUSDT stays aside: {venue}")
    assert gateway.pause_symbol(BTC, T0, "operator pause").accepted
    assert gateway.stood_aside(BTC) == f"{venue}; operator pause"
    assert gateway.resume_symbol(BTC, T0, "back to normal", Source.RISK).text == (
        "BTCUSDT still stood aside: operator pause"
    )
    assert gateway.check(limit(BTC, BUY, 0.1), T0).reason is DenialReason.SYMBOL_PAUSED
    assert gateway.resume_symbol(BTC, T0, "operator resume").accepted
    assert gateway.check(limit(BTC, BUY, 0.1), T0).approved
    assert gateway.resume_symbol(BTC, T0, "operator resume").text == "BTCUSDT is not paused"


def test_pausing_a_symbol_not_in_the_book_is_refused_by_name():
    gateway = make_gateway()
    gateway.drain_events()
    assert gateway.pause_symbol("DOGEUSDT", T0, "operator pause") == (
        False,
        "'DOGEUSDT' is not in the book",
    )
    assert not gateway.resume_symbol("DOGEUSDT", T0, "operator resume").accepted
    rejected = [e.command for e in gateway.drain_events() if isinstance(e, CommandRejected)]
    assert rejected == ["pause_symbol", "resume_symbol"]
