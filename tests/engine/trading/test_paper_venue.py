"""PaperVenue: our orders matched in-process against real-looking books and trades."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import pytest
from market_frames import MarketScript

from engine.bitget.orders import OrderSide, OrderStatus, OrderType, TimeInForce
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PositionsUpdate,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.risk.intents import OrderIntent, Source
from engine.trading.config import PaperVenueConfig
from engine.trading.paper_venue import PaperVenue
from engine.trading.venue import VenueRejected, VenueUnavailable

BIDS = [(64_000.0, 0.5), (63_999.9, 1.0)]
ASKS = [(64_000.1, 0.5), (64_000.2, 1.0)]


def limit(side, price, size, oid, force=TimeInForce.GTC, reduce_only=False):
    return OrderIntent(
        "BTCUSDT", side, size, price, OrderType.LIMIT, oid, Source.STRATEGY, force, reduce_only
    )


@pytest.fixture
async def paper():
    venue = PaperVenue(PaperVenueConfig(round_trip_ms=2.0, reaction_us=0.0), (BTCUSDT, ETHUSDT))
    events: list[object] = []
    await venue.start(events.append)
    venue.on_book(MarketScript().book("BTCUSDT", BIDS, ASKS))
    yield venue, events
    await venue.stop()


def of(events, kind):
    return [event for event in events if type(event) is kind]


async def test_start_and_stop_report_the_stream_state(paper):
    venue, events = paper
    assert venue.stream_state is PrivateStreamState.LIVE
    assert of(events, PrivateStreamChanged)[0].state is PrivateStreamState.LIVE


async def test_a_resting_order_is_acknowledged_then_filled_by_a_trade(paper):
    venue, events = paper
    ack = await venue.place(limit(OrderSide.BUY, 64_000.0, 0.01, "b1"))
    assert ack.client_oid == "b1" and ack.order_id
    assert of(events, OrderUpdate)[-1].status is OrderStatus.LIVE
    # Queue ahead is the displayed 0.5; a 0.505 sell eats it and fills 0.005 of ours.
    venue.on_trades(MarketScript().trade("BTCUSDT", 64_000.0, 0.505, "sell"))
    fills = of(events, FillUpdate)  # its push reaches us with the trade, in the market's frame
    assert [(f.client_oid, f.size, f.price, f.maker) for f in fills] == [
        ("b1", pytest.approx(0.005), pytest.approx(64_000.0), True)
    ]
    assert fills[0].fee == pytest.approx(64_000.0 * 0.005 * 0.0002)
    assert of(events, OrderUpdate)[-1].status is OrderStatus.PARTIALLY_FILLED
    positions = of(events, PositionsUpdate)[-1].positions
    assert [(p.symbol, p.size) for p in positions] == [("BTCUSDT", pytest.approx(0.005))]


async def test_a_book_through_our_price_fills_the_rest(paper):
    venue, events = paper
    await venue.place(limit(OrderSide.SELL, 64_000.2, 0.01, "a1"))
    venue.on_book(MarketScript().book("BTCUSDT", [(64_000.3, 1.0)], [(64_000.4, 1.0)]))
    fill = of(events, FillUpdate)[-1]
    assert (fill.client_oid, fill.side, fill.size) == ("a1", OrderSide.SELL, pytest.approx(0.01))
    assert of(events, OrderUpdate)[-1].status is OrderStatus.FILLED
    snapshot = await venue.snapshot()
    assert snapshot.orders == ()
    assert [(p.symbol, p.size) for p in snapshot.positions] == [("BTCUSDT", pytest.approx(-0.01))]


async def test_a_marketable_ioc_takes_liquidity_at_the_taker_fee(paper):
    venue, events = paper
    await venue.place(limit(OrderSide.BUY, 64_000.2, 0.6, "h1", TimeInForce.IOC))
    fills = of(events, FillUpdate)
    assert [(f.price, f.size, f.maker) for f in fills] == [
        (pytest.approx(64_000.1), 0.5, False),
        (pytest.approx(64_000.2), pytest.approx(0.1), False),
    ]
    assert fills[0].fee == pytest.approx(64_000.1 * 0.5 * 0.0006)


async def test_post_only_that_would_cross_is_cancelled(paper):
    venue, events = paper
    await venue.place(limit(OrderSide.BUY, 64_000.1, 0.01, "p1", TimeInForce.POST_ONLY))
    update = of(events, OrderUpdate)[-1]
    assert update.status is OrderStatus.CANCELED
    assert "post_only" in update.cancel_reason


async def test_a_refused_order_raises_with_the_exchange_code(paper):
    venue, _ = paper
    with pytest.raises(VenueRejected) as refused:
        await venue.place(limit(OrderSide.BUY, 64_000.0, 0.0015, "x1"))
    assert refused.value.code == "45111"
    with pytest.raises(VenueRejected) as unknown:
        await venue.place(limit(OrderSide.BUY, 64_000.0, 0.01, "x2")._replace(symbol="SOLUSDT"))
    assert unknown.value.code == "40034"


async def test_a_request_meets_the_book_our_reaction_and_a_round_trip_later():
    venue = PaperVenue(PaperVenueConfig(round_trip_ms=60.0, reaction_us=2_000.0), (BTCUSDT,))
    await venue.start(lambda event: None)
    venue.on_book(MarketScript(("BTCUSDT",)).book("BTCUSDT", BIDS, ASKS))
    started = time.perf_counter()
    await venue.place(limit(OrderSide.BUY, 63_999.0, 0.01, "slow"))
    assert time.perf_counter() - started >= 0.061  # 2 ms of ours, 60 ms there and the feed back
    await venue.stop()


async def test_a_cancel_loses_the_race_against_a_fill_that_comes_first():
    venue = PaperVenue(PaperVenueConfig(round_trip_ms=40.0, reaction_us=0.0), (BTCUSDT,))
    events: list[object] = []
    await venue.start(events.append)
    market = MarketScript(("BTCUSDT",))
    venue.on_book(market.book("BTCUSDT", BIDS, ASKS))
    await venue.place(limit(OrderSide.SELL, 64_000.2, 0.01, "r1"))
    ticket = venue.cancel_all_now()
    assert ticket.sent_ns is not None and ticket.path == "paper"
    # Within the latency the market trades through our ask: the fill wins.
    venue.on_book(market.book("BTCUSDT", [(64_000.3, 1.0)], [(64_000.4, 1.0)]))
    assert await ticket.result == ()
    assert of(events, FillUpdate)[-1].client_oid == "r1"
    await venue.stop()


async def test_cancel_all_cancels_every_resting_order(paper):
    venue, events = paper
    await venue.place(limit(OrderSide.BUY, 63_990.0, 0.01, "c1"))
    await venue.place(limit(OrderSide.SELL, 64_010.0, 0.01, "c2"))
    cancelled = await venue.cancel_all_now().result
    assert sorted(cancelled) == ["c1", "c2"]
    assert (await venue.snapshot()).orders == ()
    assert {u.client_oid for u in of(events, OrderUpdate) if u.status is OrderStatus.CANCELED} == {
        "c1",
        "c2",
    }


async def test_close_positions_flattens_at_market(paper):
    venue, events = paper
    await venue.place(limit(OrderSide.BUY, 64_000.2, 0.3, "o1", TimeInForce.IOC))
    positions = (await venue.snapshot()).positions
    assert [(p.symbol, p.size) for p in positions] == [("BTCUSDT", pytest.approx(0.3))]
    venue.on_book(MarketScript().book("BTCUSDT", BIDS, ASKS))  # fresh liquidity
    await venue.close_positions()
    assert (await venue.snapshot()).positions == ()
    assert of(events, PositionsUpdate)[-1].positions == ()


async def test_close_positions_closes_a_position_worth_less_than_the_minimum_amount():
    """Flash close takes the whole position, however small, as Bitget's does."""
    btc = dataclasses.replace(BTCUSDT, min_notional=100.0)
    venue = PaperVenue(PaperVenueConfig(round_trip_ms=0.0, reaction_us=0.0), (btc,))
    await venue.start(lambda event: None)
    try:
        venue.on_book(MarketScript().book("BTCUSDT", BIDS, ASKS))
        await venue.place(limit(OrderSide.BUY, 64_000.2, 0.003, "o1", TimeInForce.IOC))
        await venue.place(limit(OrderSide.SELL, 63_999.9, 0.002, "o2", TimeInForce.IOC))
        positions = (await venue.snapshot()).positions
        assert [(p.symbol, p.size) for p in positions] == [("BTCUSDT", pytest.approx(0.001))]
        with pytest.raises(VenueRejected):  # an order of that size is under the minimum
            await venue.place(limit(OrderSide.SELL, 63_999.9, 0.001, "o3", TimeInForce.IOC))
        venue.on_book(MarketScript().book("BTCUSDT", BIDS, ASKS))
        await venue.close_positions()
        assert (await venue.snapshot()).positions == ()
    finally:
        await venue.stop()


async def test_a_stopped_venue_refuses_requests():
    venue = PaperVenue(PaperVenueConfig(round_trip_ms=0.0, reaction_us=0.0), (BTCUSDT,))
    with pytest.raises(VenueUnavailable):
        await venue.place(limit(OrderSide.BUY, 64_000.0, 0.01, "z"))
    await asyncio.sleep(0)


async def test_order_and_trade_ids_are_unique_across_symbols(paper):
    venue, events = paper
    venue.on_book(MarketScript().book("ETHUSDT", [(3_400.0, 5.0)], [(3_400.02, 5.0)]))
    await venue.place(limit(OrderSide.BUY, 64_000.1, 0.002, "u1", TimeInForce.IOC))
    eth = limit(OrderSide.SELL, 3_400.0, 0.05, "u2", TimeInForce.IOC)._replace(symbol="ETHUSDT")
    await venue.place(eth)
    fills = of(events, FillUpdate)
    assert len({fill.trade_id for fill in fills}) == len(fills) == 2
    assert len({fill.order_id for fill in fills}) == 2


async def test_a_feed_delay_of_its_own_replaces_the_half_trip_back():
    config = PaperVenueConfig(round_trip_ms=10.0, reaction_us=0.0, feed_latency_ms=30.0)
    venue = PaperVenue(config, (BTCUSDT,))
    await venue.start(lambda event: None)
    venue.on_book(MarketScript(("BTCUSDT",)).book("BTCUSDT", BIDS, ASKS))
    started = time.perf_counter()
    await venue.place(limit(OrderSide.BUY, 63_999.0, 0.01, "far"))
    assert time.perf_counter() - started >= 0.034  # 5 ms there, then the feed's 30 ms
    await venue.stop()
    with pytest.raises(ValueError, match="feed_latency_ms"):
        PaperVenueConfig(feed_latency_ms=-1.0)
