"""The matching engine and account: queue position, taking liquidity, fees, positions."""

from __future__ import annotations

import numpy as np
import pytest

from engine.bitget.orders import OrderSide, OrderStatus, OrderType, TimeInForce
from engine.market import matching
from engine.market.instruments import BTCUSDT
from engine.market.matching import (
    Fill,
    Liquidity,
    MatchingEngine,
    MatchingEngineConfig,
    OrderRejected,
    OrderRequest,
    SimAccount,
    SimAccountConfig,
)

Levels = list[tuple[float, float]]

BIDS: Levels = [(64000.0, 1.0), (63999.9, 2.0), (63999.5, 3.0)]
ASKS: Levels = [(64000.1, 0.5), (64000.2, 0.7), (64000.5, 1.0)]


def make_engine(balance: float = 1_000_000.0) -> MatchingEngine:
    account = SimAccount(SimAccountConfig(initial_balance=balance, leverage=20))
    return MatchingEngine(MatchingEngineConfig(BTCUSDT), account)


def show(
    engine: MatchingEngine, bids: Levels = BIDS, asks: Levels = ASKS, ts: int = 0
) -> list[Fill]:
    return engine.on_book(
        np.array([p for p, _ in bids]),
        np.array([s for _, s in bids]),
        np.array([p for p, _ in asks]),
        np.array([s for _, s in asks]),
        ts,
    )


def limit(
    side: OrderSide,
    size: float,
    price: float,
    force: TimeInForce = TimeInForce.GTC,
    **extra: object,
) -> OrderRequest:
    return OrderRequest(side, OrderType.LIMIT, size, price, force, **extra)  # type: ignore[arg-type]


def market(side: OrderSide, size: float, **extra: object) -> OrderRequest:
    return OrderRequest(side, OrderType.MARKET, size, **extra)  # type: ignore[arg-type]


def test_resting_order_fills_only_after_displayed_size_ahead_has_traded() -> None:
    engine = make_engine()
    show(engine)
    order = engine.submit(limit(OrderSide.BUY, 0.5, 64000.0), ts_ms=1).order
    assert order.status is OrderStatus.LIVE
    assert engine.queue_ahead(order.order_id) == pytest.approx(1.0)
    assert engine.on_trade(64000.0, 0.6, OrderSide.SELL, ts_ms=2) == []
    assert engine.queue_ahead(order.order_id) == pytest.approx(0.4)
    # A buy aggressor at our price does not touch a resting buy.
    assert engine.on_trade(64000.0, 5.0, OrderSide.BUY, ts_ms=3) == []
    partial = engine.on_trade(64000.0, 0.5, OrderSide.SELL, ts_ms=4)
    assert [(f.size, f.price, f.liquidity) for f in partial] == [
        (pytest.approx(0.1), 64000.0, Liquidity.MAKER)
    ]
    assert engine.order(order.order_id).status is OrderStatus.PARTIALLY_FILLED  # type: ignore[union-attr]
    rest = engine.on_trade(64000.0, 1.0, OrderSide.SELL, ts_ms=5)
    assert sum(f.size for f in rest) == pytest.approx(0.4)
    assert engine.order(order.order_id).status is OrderStatus.FILLED  # type: ignore[union-attr]
    assert engine.open_orders() == []


def test_cancellations_shrink_queue_ahead_proportionally() -> None:
    engine = make_engine()
    show(engine, bids=[(64000.0, 2.0), *BIDS[1:]])
    order_id = engine.submit(limit(OrderSide.BUY, 0.1, 64000.0), ts_ms=1).order.order_id
    assert engine.queue_ahead(order_id) == pytest.approx(2.0)
    engine.on_trade(64000.0, 0.5, OrderSide.SELL, ts_ms=2)
    assert engine.queue_ahead(order_id) == pytest.approx(1.5)
    # 2.0 displayed, 0.5 traded, now 1.0 shown: 0.5 of the remaining 1.5 was cancelled.
    show(engine, bids=[(64000.0, 1.0), *BIDS[1:]], ts=3)
    assert engine.queue_ahead(order_id) == pytest.approx(1.0)
    # Growth queues behind us.
    show(engine, bids=[(64000.0, 4.0), *BIDS[1:]], ts=4)
    assert engine.queue_ahead(order_id) == pytest.approx(1.0)
    # The level emptying puts us at the front.
    show(engine, bids=BIDS[1:], ts=5)
    assert engine.queue_ahead(order_id) == 0.0


def test_trade_through_our_price_fills_the_whole_remainder() -> None:
    engine = make_engine()
    show(engine)
    order_id = engine.submit(limit(OrderSide.BUY, 0.3, 64000.0), ts_ms=1).order.order_id
    fills = engine.on_trade(63999.9, 0.001, OrderSide.SELL, ts_ms=2)
    assert [(f.size, f.price) for f in fills] == [(pytest.approx(0.3), 64000.0)]
    assert engine.order(order_id).status is OrderStatus.FILLED  # type: ignore[union-attr]


def test_opposite_best_reaching_our_price_fills_as_maker() -> None:
    engine = make_engine()
    show(engine)
    engine.submit(limit(OrderSide.SELL, 0.2, 64000.5), ts_ms=1)
    fills = show(engine, bids=[(64000.5, 1.0)], asks=[(64000.7, 1.0)], ts=2)
    assert [(f.side, f.size, f.price, f.liquidity) for f in fills] == [
        (OrderSide.SELL, pytest.approx(0.2), 64000.5, Liquidity.MAKER)
    ]


def test_market_order_walks_levels_and_pays_taker_fee() -> None:
    engine = make_engine()
    show(engine)
    result = engine.submit(market(OrderSide.BUY, 1.5), ts_ms=1)
    assert [(f.price, f.size) for f in result.fills] == [
        (pytest.approx(64000.1), pytest.approx(0.5)),
        (pytest.approx(64000.2), pytest.approx(0.7)),
        (pytest.approx(64000.5), pytest.approx(0.3)),
    ]
    assert all(f.liquidity is Liquidity.TAKER for f in result.fills)
    assert result.fills[0].fee == pytest.approx(64000.1 * 0.5 * 0.0006)
    assert result.order.fee == pytest.approx(
        0.0006 * (64000.1 * 0.5 + 64000.2 * 0.7 + 64000.5 * 0.3)
    )
    assert result.order.average_price == pytest.approx(
        (64000.1 * 0.5 + 64000.2 * 0.7 + 64000.5 * 0.3) / 1.5
    )
    assert result.order.status is OrderStatus.FILLED


def test_a_market_order_reads_only_the_levels_it_takes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A close of a position takes a level or two of a hundred-level book: the rest are not
    walked (a flash close of a book of symbols does this once per symbol)."""
    engine = make_engine()
    deep_asks = [(64000.1 + 0.1 * depth, 0.5) for depth in range(100)]
    show(engine, asks=deep_asks)
    read: list[int] = []
    available = matching._DisplayedSide.available

    def spy(side: matching._DisplayedSide, index: int) -> float:
        read.append(index)
        return available(side, index)

    monkeypatch.setattr(matching._DisplayedSide, "available", spy)
    result = engine.submit(market(OrderSide.BUY, 0.7), 1)
    assert [fill.size for fill in result.fills] == pytest.approx([0.5, 0.2])
    assert max(read) == 1


def test_liquidity_taken_is_not_available_again_until_the_next_book() -> None:
    engine = make_engine()
    show(engine)
    engine.submit(market(OrderSide.BUY, 1.0), ts_ms=1)
    second = engine.submit(market(OrderSide.BUY, 2.0), ts_ms=2)
    assert [(f.price, f.size) for f in second.fills] == [
        (pytest.approx(64000.2), pytest.approx(0.2)),
        (pytest.approx(64000.5), pytest.approx(1.0)),
    ]
    assert second.order.status is OrderStatus.CANCELED
    assert second.order.filled_size == pytest.approx(1.2)
    show(engine, ts=3)
    third = engine.submit(market(OrderSide.BUY, 0.5), ts_ms=4)
    assert third.fills[0].price == pytest.approx(64000.1)


def test_marketable_gtc_limit_takes_then_rests_the_remainder() -> None:
    engine = make_engine()
    show(engine)
    result = engine.submit(limit(OrderSide.BUY, 2.0, 64000.2), ts_ms=1)
    assert sum(f.size for f in result.fills) == pytest.approx(1.2)
    assert result.order.status is OrderStatus.PARTIALLY_FILLED
    (resting,) = engine.open_orders()
    assert resting.remaining_size == pytest.approx(0.8)
    assert engine.queue_ahead(resting.order_id) == 0.0


def test_ioc_cancels_the_remainder() -> None:
    engine = make_engine()
    show(engine)
    result = engine.submit(limit(OrderSide.BUY, 1.0, 64000.1, TimeInForce.IOC), ts_ms=1)
    assert sum(f.size for f in result.fills) == pytest.approx(0.5)
    assert result.order.status is OrderStatus.CANCELED
    assert engine.open_orders() == []


def test_fok_fills_all_or_nothing() -> None:
    engine = make_engine()
    show(engine)
    refused = engine.submit(limit(OrderSide.BUY, 1.3, 64000.2, TimeInForce.FOK), ts_ms=1)
    assert refused.fills == [] and refused.order.status is OrderStatus.CANCELED
    filled = engine.submit(limit(OrderSide.BUY, 1.2, 64000.2, TimeInForce.FOK), ts_ms=2)
    assert sum(f.size for f in filled.fills) == pytest.approx(1.2)
    assert filled.order.status is OrderStatus.FILLED


def test_post_only_that_would_cross_is_cancelled_and_otherwise_rests() -> None:
    engine = make_engine()
    show(engine)
    crossing = engine.submit(limit(OrderSide.BUY, 0.1, 64000.1, TimeInForce.POST_ONLY), ts_ms=1)
    assert crossing.fills == []
    assert crossing.order.status is OrderStatus.CANCELED
    assert "post_only" in crossing.order.cancel_reason
    passive = engine.submit(limit(OrderSide.BUY, 0.1, 64000.0, TimeInForce.POST_ONLY), ts_ms=2)
    assert passive.order.status is OrderStatus.LIVE
    assert [o.order_id for o in engine.open_orders()] == [passive.order.order_id]


def test_maker_and_taker_fees_are_exact() -> None:
    engine = make_engine()
    show(engine)
    maker_id = engine.submit(limit(OrderSide.SELL, 0.25, 64000.5), ts_ms=1).order.order_id
    (maker_fill,) = engine.on_trade(64001.0, 0.01, OrderSide.BUY, ts_ms=2)
    assert maker_fill.order_id == maker_id
    assert maker_fill.fee == pytest.approx(64000.5 * 0.25 * 0.0002, rel=1e-12)
    (taker_fill,) = engine.submit(market(OrderSide.BUY, 0.25), ts_ms=3).fills
    assert taker_fill.fee == pytest.approx(64000.1 * 0.25 * 0.0006, rel=1e-12)
    custom = MatchingEngine(
        MatchingEngineConfig(BTCUSDT, maker_fee_rate=-0.0001, taker_fee_rate=0.001), SimAccount()
    )
    show(custom)
    custom.submit(limit(OrderSide.BUY, 0.1, 64000.0), ts_ms=1)
    (rebate,) = custom.on_trade(63999.0, 0.1, OrderSide.SELL, ts_ms=2)
    assert rebate.fee == pytest.approx(-64000.0 * 0.1 * 0.0001)


def test_cancel_by_id_or_client_oid_and_unknown_order() -> None:
    engine = make_engine()
    show(engine)
    first = engine.submit(limit(OrderSide.BUY, 0.1, 63990.0, client_oid="a-1"), ts_ms=1).order
    engine.submit(limit(OrderSide.BUY, 0.1, 63991.0, client_oid="a-2"), ts_ms=1)
    assert engine.cancel(2, order_id=first.order_id).status is OrderStatus.CANCELED
    assert engine.cancel(2, client_oid="a-2").client_oid == "a-2"
    assert engine.open_orders() == []
    with pytest.raises(OrderRejected) as rejected:
        engine.cancel(3, order_id=first.order_id)
    assert rejected.value.code == "43001"


def test_price_time_priority_between_our_orders() -> None:
    engine = make_engine()
    show(engine)
    first = engine.submit(limit(OrderSide.BUY, 0.3, 64000.0), ts_ms=1).order.order_id
    second = engine.submit(limit(OrderSide.BUY, 0.3, 64000.0), ts_ms=2).order.order_id
    assert engine.queue_ahead(second) == pytest.approx(1.0)
    fills = engine.on_trade(64000.0, 1.4, OrderSide.SELL, ts_ms=3)
    assert [(f.order_id, f.size) for f in fills] == [
        (first, pytest.approx(0.3)),
        (second, pytest.approx(0.1)),
    ]
    better = engine.submit(limit(OrderSide.BUY, 0.2, 64000.0), ts_ms=4).order.order_id
    fills = engine.on_trade(64000.0, 0.25, OrderSide.SELL, ts_ms=5)
    assert [f.order_id for f in fills] == [second]
    assert engine.order(better).filled_size == 0  # type: ignore[union-attr]


def test_reduce_only_never_flips_the_position() -> None:
    account = SimAccount()
    engine = MatchingEngine(MatchingEngineConfig(BTCUSDT), account)
    show(engine)
    engine.submit(market(OrderSide.BUY, 0.5), ts_ms=1)
    assert account.position("BTCUSDT").size == pytest.approx(0.5)
    show(engine, ts=2)
    result = engine.submit(market(OrderSide.SELL, 2.0, reduce_only=True), ts_ms=3)
    assert sum(f.size for f in result.fills) == pytest.approx(0.5)
    assert result.order.status is OrderStatus.CANCELED
    assert account.position("BTCUSDT").size == 0
    with pytest.raises(OrderRejected) as rejected:
        engine.submit(market(OrderSide.SELL, 0.1, reduce_only=True), ts_ms=4)
    assert rejected.value.code == "40757"
    # A plain (not reduce-only) sell may open a short.
    engine.submit(market(OrderSide.SELL, 0.1), ts_ms=5)
    assert account.position("BTCUSDT").size == pytest.approx(-0.1)


def test_resting_reduce_only_is_capped_to_what_remains_of_the_position() -> None:
    account = SimAccount()
    engine = MatchingEngine(MatchingEngineConfig(BTCUSDT), account)
    show(engine)
    engine.submit(market(OrderSide.BUY, 0.3), ts_ms=1)
    show(engine, ts=2)
    a = engine.submit(limit(OrderSide.SELL, 0.3, 64001.0, reduce_only=True), ts_ms=3).order.order_id
    b = engine.submit(limit(OrderSide.SELL, 0.3, 64001.0, reduce_only=True), ts_ms=4).order.order_id
    engine.on_trade(64002.0, 0.01, OrderSide.BUY, ts_ms=5)  # trades through both
    assert account.position("BTCUSDT").size == 0
    assert engine.order(a).status is OrderStatus.FILLED  # type: ignore[union-attr]
    closed_b = engine.order(b)
    assert closed_b is not None and closed_b.status is OrderStatus.CANCELED
    assert closed_b.filled_size == 0


def test_order_validation_uses_bitget_codes() -> None:
    engine = make_engine(balance=1_000.0)
    show(engine)
    cases = [
        (limit(OrderSide.BUY, 0.0015, 64000.0), "45111"),
        (limit(OrderSide.BUY, 0.001, 64000.05), "45115"),
        (limit(OrderSide.BUY, 0.001, 1000.0), "45110"),
        (limit(OrderSide.BUY, 1.0, 64000.0), "40762"),
    ]
    for request, code in cases:
        with pytest.raises(OrderRejected) as rejected:
            engine.submit(request, ts_ms=1)
        assert rejected.value.code == code, request
    engine.submit(limit(OrderSide.BUY, 0.001, 63000.0, client_oid="dup"), ts_ms=1)
    with pytest.raises(OrderRejected) as rejected:
        engine.submit(limit(OrderSide.BUY, 0.001, 63000.0, client_oid="dup"), ts_ms=2)
    assert rejected.value.code == "43118"


def test_order_deeper_than_displayed_learns_its_queue_when_the_level_shows() -> None:
    engine = make_engine()
    show(engine)
    order_id = engine.submit(limit(OrderSide.BUY, 0.1, 63999.0), ts_ms=1).order.order_id
    assert engine.queue_ahead(order_id) is None
    show(engine, bids=[(64000.0, 1.0), (63999.0, 2.5)], ts=2)
    assert engine.queue_ahead(order_id) == pytest.approx(2.5)


def test_market_order_without_a_book_is_cancelled_unfilled() -> None:
    engine = make_engine()
    result = engine.submit(market(OrderSide.BUY, 0.1), ts_ms=1)
    assert result.fills == [] and result.order.status is OrderStatus.CANCELED


def test_account_tracks_entry_realized_fees_and_flip() -> None:
    account = SimAccount()

    def fill(side: OrderSide, price: float, size: float, fee: float = 0.0) -> None:
        account.apply_fill(
            Fill("o", "c", "BTCUSDT", side, price, size, fee, Liquidity.TAKER, 1, "t")
        )

    fill(OrderSide.BUY, 100.0, 1.0, fee=0.06)
    fill(OrderSide.BUY, 110.0, 1.0, fee=0.066)
    position = account.position("BTCUSDT")
    assert position.size == 2.0 and position.entry_price == pytest.approx(105.0)
    fill(OrderSide.SELL, 120.0, 3.0)
    position = account.position("BTCUSDT")
    assert position.realized_pnl == pytest.approx(30.0)
    assert position.size == pytest.approx(-1.0) and position.entry_price == pytest.approx(120.0)
    account.mark("BTCUSDT", 115.0)
    assert account.position("BTCUSDT").unrealized_pnl == pytest.approx(5.0)
    assert account.fees == pytest.approx(0.126)
    assert account.balance == pytest.approx(10_000.0 + 30.0 - 0.126)
    assert account.equity == pytest.approx(account.balance + 5.0)
    fill(OrderSide.BUY, 100.0, 1.0)
    assert account.positions() == []
    assert account.realized_pnl == pytest.approx(50.0)


def test_request_and_config_validation() -> None:
    with pytest.raises(ValueError, match="price"):
        OrderRequest(OrderSide.BUY, OrderType.LIMIT, 1.0)
    with pytest.raises(ValueError, match="size"):
        OrderRequest(OrderSide.BUY, OrderType.MARKET, -1.0)
    with pytest.raises(ValueError, match="taker_fee_rate"):
        MatchingEngineConfig(BTCUSDT, taker_fee_rate=0.5)
    with pytest.raises(ValueError, match="leverage"):
        SimAccountConfig(leverage=0)
