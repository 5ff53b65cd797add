"""RiskGateway.check: each check on its own, the reservation of approved orders, the order of
the checks, and the cancel and close-positions requests."""

from __future__ import annotations

import math

import pytest
from support.risk import (
    BTC,
    BUY,
    ETH,
    MIDS,
    MS,
    SECOND,
    SELL,
    T0,
    fill,
    limit,
    make_bounds,
    make_config,
    make_gateway,
    make_limits,
    mark,
    market,
)

from engine.bitget.orders import OrderType
from engine.risk.events import OrderDenied
from engine.risk.gateway import RiskGateway
from engine.risk.intents import (
    APPROVED,
    CancelIntent,
    CancelScope,
    ClosePositionsIntent,
    DenialReason,
    OrderIntent,
    Source,
)
from engine.risk.limits import SymbolLimits
from engine.risk.overrides import RiskOverrides


def reason_of(gateway: RiskGateway, intent: OrderIntent, now_ns: int = T0) -> DenialReason | None:
    return gateway.check(intent, now_ns).reason


def test_quote_within_limits_is_approved_and_reserved():
    gateway = make_gateway()
    decision = gateway.check(limit(BTC, BUY, 0.2), T0)
    assert decision is APPROVED
    snapshot = gateway.snapshot()
    btc = snapshot.positions[0]
    assert (btc.size, btc.pending_buy, btc.open_orders) == (0.0, 0.2, 1)
    assert snapshot.open_orders == 1
    assert snapshot.net_delta_long_bound == pytest.approx(0.2 * MIDS[BTC])


def test_unknown_symbol_is_denied():
    gateway = make_gateway()
    intent = limit(BTC, BUY, 0.1)._replace(symbol="DOGEUSDT")
    assert reason_of(gateway, intent) is DenialReason.UNKNOWN_SYMBOL


@pytest.mark.parametrize(
    "change",
    [
        {"size": 0.0},
        {"size": -0.1},
        {"size": math.nan},
        {"size": math.inf},
        {"price": None},
        {"price": 0.0},
        {"price": math.nan},
        {"order_type": OrderType.MARKET},
        {"order_type": "limit"},
        {"side": "buy"},
        {"force": "gtc"},
    ],
    ids=lambda change: repr(change),
)
def test_malformed_intent_is_denied(change):
    gateway = make_gateway()
    intent = limit(BTC, BUY, 0.1)._replace(**change)
    decision = gateway.check(intent, T0)
    assert decision.reason is DenialReason.INVALID_INTENT
    assert decision.text


def test_client_oid_is_denied_while_open_and_free_again_after_cancel():
    gateway = make_gateway()
    first = limit(BTC, BUY, 0.1, client_oid="q-1")
    assert gateway.check(first, T0).approved
    assert reason_of(gateway, first) is DenialReason.DUPLICATE_CLIENT_OID
    gateway.on_order_closed("q-1", T0)
    assert gateway.check(first, T0 + SECOND).approved


def test_buy_that_would_exceed_max_position_is_denied():
    gateway = make_gateway()
    first = limit(BTC, BUY, 0.5)
    assert gateway.check(first, T0).approved
    fill(gateway, first, T0)
    assert gateway.check(limit(BTC, BUY, 0.4), T0).approved
    decision = gateway.check(limit(BTC, BUY, 0.2), T0)
    assert decision.reason is DenialReason.POSITION_LIMIT
    assert decision.text == "BTCUSDT position could reach +1.1 BTC, beyond max position 1 BTC"


def test_burst_of_approved_orders_cannot_together_exceed_max_position():
    gateway = make_gateway()
    approved = [gateway.check(limit(BTC, BUY, 0.3), T0 + i * MS).approved for i in range(5)]
    assert approved == [True, True, True, False, False]
    assert gateway.snapshot().positions[0].pending_buy == pytest.approx(0.9)


def test_sell_that_would_exceed_max_short_is_denied():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, -0.8, MIDS[BTC], T0)
    assert reason_of(gateway, limit(BTC, SELL, 0.3)) is DenialReason.POSITION_LIMIT
    assert gateway.check(limit(BTC, SELL, 0.2), T0).approved


def test_order_that_shrinks_a_position_above_a_lowered_limit_is_approved():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.9, MIDS[BTC], T0)
    gateway.set_limits(RiskOverrides(max_position={BTC: 0.2}), T0)
    assert reason_of(gateway, limit(BTC, BUY, 0.01)) is DenialReason.POSITION_LIMIT
    assert gateway.check(limit(BTC, SELL, 0.5), T0).approved


def test_buy_that_would_exceed_max_notional_is_denied():
    gateway = make_gateway()
    mark(gateway, BTC, T0, mid=100_000.0)
    decision = gateway.check(limit(BTC, BUY, 0.5, price=100_000.0), T0)
    assert decision.approved
    decision = gateway.check(limit(BTC, BUY, 0.45, price=100_000.0), T0)
    assert decision.reason is DenialReason.NOTIONAL_LIMIT
    assert decision.text == "BTCUSDT notional could reach 95,000 USDT, beyond 90,000 USDT"


def test_the_position_cap_is_the_tighter_of_max_position_and_max_notional_at_the_mark():
    gateway = RiskGateway(make_config())
    assert gateway.position_cap(BTC) == 1.0  # no mark yet: the max position alone
    mark(gateway, BTC, T0)
    assert gateway.position_cap(BTC) == 1.0  # 90,000 USDT at 60,000 is 1.5 BTC
    mark(gateway, BTC, T0, mid=100_000.0)
    assert gateway.position_cap(BTC) == pytest.approx(0.9)
    # Both in force: the risk scale scales both, the operator's max position overrides.
    gateway.set_limits(RiskOverrides(risk_scale=0.5), T0)
    assert gateway.position_cap(BTC) == pytest.approx(0.45)
    gateway.set_limits(RiskOverrides(max_position={BTC: 0.8}), T0)
    assert gateway.position_cap(BTC) == 0.4
    # The hedge's too, each symbol at its own mark.
    assert gateway.position_cap(ETH) == 10.0
    mark(gateway, ETH, T0, mid=10_000.0)
    assert gateway.position_cap(ETH) == pytest.approx(4.5)


def test_buy_that_would_exceed_max_net_delta_is_denied():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.9, MIDS[BTC], T0)  # 54k of the 80k net delta
    gateway.on_position_sync(ETH, 16.0, MIDS[ETH], T0)  # 48k at hedge ratio 0.5 -> 24k
    assert gateway.snapshot().net_delta == pytest.approx(78_000)
    assert reason_of(gateway, limit(ETH, BUY, 2.0)) is DenialReason.NET_DELTA_LIMIT  # 81k
    assert gateway.check(limit(ETH, BUY, 1.0), T0).approved  # 79.5k


def test_sell_that_would_exceed_net_short_delta_is_denied():
    gateway = make_gateway()
    gateway.on_position_sync(ETH, -19.0, MIDS[ETH], T0)  # -57k x 0.5 = -28.5k
    gateway.on_position_sync(BTC, -0.8, MIDS[BTC], T0)  # -48k -> -76.5k
    assert reason_of(gateway, limit(BTC, SELL, 0.1)) is DenialReason.NET_DELTA_LIMIT


def test_hedge_notional_counts_at_the_hedge_ratio():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 1.0, MIDS[BTC], T0)
    gateway.on_position_sync(ETH, -20.0, MIDS[ETH], T0)
    snapshot = gateway.snapshot()
    assert snapshot.net_delta == pytest.approx(60_000 - 0.5 * 60_000)
    assert snapshot.gross_notional == pytest.approx(120_000)


def test_order_larger_than_max_order_size_is_denied():
    gateway = make_gateway()
    decision = gateway.check(limit(BTC, BUY, 0.6), T0)
    assert decision.reason is DenialReason.ORDER_SIZE
    assert decision.text == "size 0.6 BTC is above the max order size 0.5 BTC"


def test_buy_limit_above_mid_by_more_than_the_band_is_denied_as_slippage():
    gateway = make_gateway()
    mid = MIDS[BTC]
    assert gateway.check(limit(BTC, BUY, 0.1, price=mid * 1.0009), T0).approved
    decision = gateway.check(limit(BTC, BUY, 0.1, price=mid * 1.0011), T0)
    assert decision.reason is DenialReason.SLIPPAGE
    assert "through the mid" in decision.text


def test_buy_limit_above_microprice_by_more_than_the_band_is_denied():
    gateway = make_gateway()
    mid = MIDS[BTC]
    mark(gateway, BTC, T0, microprice=mid - 20.0)
    decision = gateway.check(limit(BTC, BUY, 0.1, price=mid + 45.0), T0)
    assert decision.reason is DenialReason.SLIPPAGE
    assert "microprice" in decision.text


def test_sell_limit_below_mid_by_more_than_the_band_is_denied():
    gateway = make_gateway()
    mid = MIDS[ETH]
    assert reason_of(gateway, limit(ETH, SELL, 1.0, price=mid * 0.998)) is DenialReason.SLIPPAGE
    assert gateway.check(limit(ETH, SELL, 1.0, price=mid * 0.9995), T0).approved


def test_passive_limits_far_from_the_mid_are_allowed():
    gateway = make_gateway()
    mid = MIDS[BTC]
    assert gateway.check(limit(BTC, BUY, 0.1, price=mid * 0.9), T0).approved
    assert gateway.check(limit(BTC, SELL, 0.1, price=mid * 1.1), T0).approved


def test_market_buy_is_checked_against_the_best_ask():
    gateway = make_gateway()
    mark(gateway, BTC, T0, half_spread=30.0)  # ask 5 bps above the mid
    assert gateway.check(market(BTC, BUY, 0.1), T0).approved
    mark(gateway, BTC, T0, half_spread=90.0)  # ask 15 bps above the mid
    decision = gateway.check(market(BTC, BUY, 0.1), T0)
    assert decision.reason is DenialReason.SLIPPAGE
    assert "touch" in decision.text


def test_order_that_shrinks_a_position_gets_the_wider_closing_band():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    mark(gateway, BTC, T0, half_spread=300.0)  # bid 50 bps below the mid
    assert gateway.check(market(BTC, SELL, 0.5), T0).approved
    assert reason_of(gateway, market(BTC, SELL, 0.1)) is DenialReason.SLIPPAGE  # would open


def test_unhealthy_feed_blocks_risk_increasing_orders_only():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    gateway.on_feed_health(BTC, False, "resyncing after checksum failure")
    decision = gateway.check(limit(BTC, BUY, 0.1), T0)
    assert decision.reason is DenialReason.FEED_UNHEALTHY
    assert "checksum" in decision.text
    assert gateway.check(limit(BTC, SELL, 0.1), T0).approved
    assert gateway.check(limit(ETH, BUY, 1.0), T0).approved
    gateway.on_feed_health(BTC, True, "")
    assert gateway.check(limit(BTC, BUY, 0.1), T0).approved


def test_a_stale_or_gapped_symbol_stands_aside_alone_in_a_book_of_four():
    sol, xrp = "SOLUSDT", "XRPUSDT"
    book = (
        *make_limits().symbols,
        SymbolLimits(sol, max_position=100.0, max_notional=90_000, max_order_size=10.0),
        SymbolLimits(xrp, max_position=10_000.0, max_notional=90_000, max_order_size=1_000.0),
    )
    bounds = make_bounds(max_position={limits.symbol: limits.max_position for limits in book})
    gateway = RiskGateway(make_config(limits=make_limits(symbols=book), bounds=bounds))
    mids = {**MIDS, sol: 150.0, xrp: 0.5}
    for symbol, mid in mids.items():
        mark(gateway, symbol, T0, mid=mid, half_spread=mid * 1e-5)
    gateway.on_feed_health(ETH, False, "no book frame for 2.1 s")
    gateway.on_feed_health(sol, False, "resyncing: seq gap")
    reasons = {
        symbol: gateway.check(limit(BTC, BUY, 0.1)._replace(symbol=symbol, price=mid), T0).reason
        for symbol, mid in mids.items()
    }
    assert reasons == {
        BTC: None,
        ETH: DenialReason.FEED_UNHEALTHY,
        sol: DenialReason.FEED_UNHEALTHY,
        xrp: None,
    }


def test_stale_mark_blocks_risk_increasing_orders():
    gateway = make_gateway()
    late = T0 + 2_001 * MS
    assert reason_of(gateway, limit(BTC, BUY, 0.1), late) is DenialReason.STALE_MARKET_DATA
    mark(gateway, BTC, late)
    assert gateway.check(limit(BTC, BUY, 0.1), late).approved


def test_symbol_without_any_mark_is_denied_as_no_market_data():
    gateway = RiskGateway(make_gateway().config)
    assert reason_of(gateway, limit(BTC, BUY, 0.1)) is DenialReason.NO_MARKET_DATA


@pytest.mark.parametrize(
    ("mid", "microprice", "bid", "ask"),
    [
        (60_000.0, 60_000.0, 60_001.0, 59_999.0),
        (0.0, 0.0, 0.0, 0.0),
        (math.nan, 60_000.0, 59_999.0, 60_001.0),
        (60_000.0, math.inf, 59_999.0, 60_001.0),
    ],
)
def test_incoherent_mark_is_ignored_and_counted(mid, microprice, bid, ask):
    gateway = make_gateway()
    gateway.on_mark(BTC, mid, microprice, bid, ask, T0 + SECOND)
    snapshot = gateway.snapshot()
    assert snapshot.invalid_inputs == 1
    assert snapshot.positions[0].mark_price == MIDS[BTC]
    assert snapshot.positions[0].mark_at_ns == T0


def test_max_open_orders_caps_risk_increasing_orders():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 0.5, MIDS[BTC], T0)
    for number in range(6):
        assert gateway.check(limit(ETH, BUY, 0.1), T0 + number * 300 * MS).approved
    late = T0 + 2 * SECOND
    mark(gateway, ETH, late)
    mark(gateway, BTC, late)
    assert reason_of(gateway, limit(ETH, BUY, 0.1), late) is DenialReason.MAX_OPEN_ORDERS
    assert gateway.check(limit(BTC, SELL, 0.1), late).approved  # closing is not capped


def test_own_order_rate_per_second_is_enforced_and_slides():
    gateway = make_gateway()
    for number in range(5):
        intent = limit(ETH, BUY, 0.1)
        assert gateway.check(intent, T0 + number * 100 * MS).approved
        gateway.on_order_closed(intent.client_oid, T0)
    decision = gateway.check(limit(ETH, BUY, 0.1), T0 + 999 * MS)
    assert decision.reason is DenialReason.ORDER_RATE
    assert "second" in decision.text
    assert gateway.check(limit(ETH, BUY, 0.1), T0 + 1_000 * MS).approved


def test_own_order_rate_per_minute_is_enforced():
    gateway = make_gateway(limits=make_limits(orders_per_minute=3))
    now = T0
    for _ in range(3):
        intent = limit(ETH, BUY, 0.1)
        assert gateway.check(intent, now).approved
        gateway.on_order_closed(intent.client_oid, now)
        now += 2 * SECOND
        mark(gateway, ETH, now)
    decision = gateway.check(limit(ETH, BUY, 0.1), now)
    assert decision.reason is DenialReason.ORDER_RATE
    assert "minute" in decision.text


def test_bitget_place_order_limit_applies_to_closing_orders_too():
    gateway = make_gateway()
    gateway.on_position_sync(BTC, 1.0, MIDS[BTC], T0)
    gateway.on_position_sync(ETH, 20.0, MIDS[ETH], T0)
    gateway.kill(T0)
    closes = [limit(ETH, SELL, 0.5, reduce_only=True) for _ in range(11)]
    decisions = [gateway.check(intent, T0 + i * MS) for i, intent in enumerate(closes)]
    assert [d.approved for d in decisions] == [True] * 10 + [False]
    assert decisions[-1].reason is DenialReason.ENDPOINT_RATE
    assert "place-order" in decisions[-1].text


def test_denied_order_reserves_nothing_and_uses_no_rate():
    gateway = make_gateway()
    for _ in range(20):
        assert not gateway.check(limit(BTC, BUY, 0.6), T0).approved
    snapshot = gateway.snapshot()
    assert snapshot.open_orders == 0
    assert snapshot.positions[0].pending_buy == 0
    for _ in range(5):
        assert gateway.check(limit(ETH, BUY, 0.1), T0).approved


def test_every_denial_is_counted_and_emitted_as_an_event():
    gateway = make_gateway()
    gateway.drain_events()
    intents = [
        limit(BTC, BUY, 0.6),
        limit(BTC, BUY, 0.6),
        limit(BTC, BUY, 1.0)._replace(symbol="XYZUSDT"),
    ]
    for intent in intents:
        gateway.check(intent, T0)
    events = gateway.drain_events()
    assert [(e.intent, e.reason) for e in events] == [
        (intents[0], DenialReason.ORDER_SIZE),
        (intents[1], DenialReason.ORDER_SIZE),
        (intents[2], DenialReason.UNKNOWN_SYMBOL),
    ]
    assert all(isinstance(e, OrderDenied) and e.at_ns == T0 and e.text for e in events)
    snapshot = gateway.snapshot()
    assert snapshot.denial_counts[DenialReason.ORDER_SIZE] == 2
    assert snapshot.denial_counts[DenialReason.UNKNOWN_SYMBOL] == 1
    assert snapshot.denials_total == 3


def test_trading_state_is_checked_before_the_limits():
    gateway = make_gateway()
    gateway.pause(T0)
    assert reason_of(gateway, limit(BTC, BUY, 5.0)) is DenialReason.TRADING_PAUSED


def test_malformed_intent_is_reported_before_the_trading_state():
    gateway = make_gateway()
    gateway.kill(T0)
    assert reason_of(gateway, limit(BTC, BUY, -1.0)) is DenialReason.INVALID_INTENT


def test_cancels_are_always_approved_and_counted_per_endpoint():
    gateway = make_gateway()
    gateway.kill(T0)
    one = CancelIntent(CancelScope.ORDER, Source.STRATEGY, BTC, "q-1")
    for _ in range(12):
        assert gateway.check_cancel(one, T0) is APPROVED
    every = CancelIntent(CancelScope.ALL, Source.OPERATOR)
    assert gateway.check_cancel(every, T0) is APPROVED
    snapshot = gateway.snapshot()
    assert snapshot.cancel_requests == 13
    assert snapshot.cancels_over_endpoint_limit == 2
    assert snapshot.denials_total == 0


@pytest.mark.parametrize(
    "intent",
    [
        CancelIntent(CancelScope.ORDER, Source.STRATEGY, BTC, None),
        CancelIntent(CancelScope.ORDER, Source.STRATEGY, None, "q-1"),
        CancelIntent(CancelScope.SYMBOL, Source.STRATEGY, "XYZUSDT"),
        CancelIntent("everything", Source.STRATEGY),
    ],
)
def test_malformed_cancel_is_denied(intent):
    gateway = make_gateway()
    assert gateway.check_cancel(intent, T0).reason is DenialReason.INVALID_INTENT
    assert gateway.snapshot().denials_total == 1


def test_close_positions_is_limited_to_bitgets_one_request_a_second():
    gateway = make_gateway()
    request = ClosePositionsIntent(Source.OPERATOR, BTC)
    assert gateway.check_close_positions(request, T0) is APPROVED
    decision = gateway.check_close_positions(request, T0 + 500 * MS)
    assert decision.reason is DenialReason.ENDPOINT_RATE
    assert gateway.check_close_positions(ClosePositionsIntent(Source.RISK), T0 + SECOND).approved


def test_close_positions_is_denied_while_paused_and_for_unknown_symbols():
    gateway = make_gateway()
    unknown = ClosePositionsIntent(Source.OPERATOR, "XYZUSDT")
    assert gateway.check_close_positions(unknown, T0).reason is DenialReason.UNKNOWN_SYMBOL
    gateway.pause(T0)
    decision = gateway.check_close_positions(ClosePositionsIntent(Source.OPERATOR), T0)
    assert decision.reason is DenialReason.TRADING_PAUSED
