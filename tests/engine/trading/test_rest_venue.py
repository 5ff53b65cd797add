"""RestVenue on the simulator: orders over REST, updates on the private stream, cancel-all
through the lane or the client, and the exchange's refusals as clear venue errors."""

from __future__ import annotations

import socket
from decimal import Decimal

import pytest
from support.waiting import eventually

from engine.bitget.endpoints import CANCEL_ALL_ORDERS
from engine.bitget.models import OpenPosition
from engine.bitget.orders import OrderSide, OrderStatus, OrderType, TimeInForce
from engine.bitget.private_events import OrderUpdate, PrivateStreamState
from engine.bitget.rest import BitgetRestConfig
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.risk.intents import OrderIntent, Source
from engine.trading.rest_venue import RestVenue, _net_positions
from engine.trading.venue import VenueRejected, VenueUnavailable


def venue_on(sim, *, demo=False, base_url=None) -> RestVenue:
    config = sim.config
    return RestVenue(
        "sim",
        BitgetRestConfig(base_url=base_url or sim.rest_url, demo=demo, retry_initial_s=0.01),
        config.credentials(),
        (BTCUSDT, ETHUSDT),
        private_ws_url=sim.private_ws_url,
    )


def bid(client_oid: str, price: float, size: float = 0.002) -> OrderIntent:
    return OrderIntent(
        "BTCUSDT",
        OrderSide.BUY,
        size,
        price,
        OrderType.LIMIT,
        client_oid,
        Source.OPERATOR,
        TimeInForce.POST_ONLY,
    )


@pytest.fixture
async def venue(sim):
    events: list[object] = []
    rest_venue = venue_on(sim)
    await rest_venue.start(events.append)
    await eventually(lambda: rest_venue.stream_state is PrivateStreamState.LIVE, 5)
    yield rest_venue, events
    await rest_venue.stop()


async def test_an_order_is_placed_reported_and_cancelled(sim, venue):
    rest_venue, events = venue
    price = round(sim.market.book("BTCUSDT", 1).best_bid - 50, 1)
    ack = await rest_venue.place(bid("rv-1", price))
    assert ack.client_oid == "rv-1" and ack.order_id and not ack.reconciled
    snapshot = await rest_venue.snapshot()
    assert [(o.client_oid, o.price, o.size) for o in snapshot.orders] == [("rv-1", price, 0.002)]
    await eventually(
        lambda: any(type(e) is OrderUpdate and e.client_oid == "rv-1" for e in events),
        5,
    )
    await rest_venue.cancel("BTCUSDT", "rv-1")
    assert (await rest_venue.snapshot()).orders == ()
    updates = [e for e in events if type(e) is OrderUpdate and e.client_oid == "rv-1"]
    await eventually(
        lambda: any(type(e) is OrderUpdate and e.status is OrderStatus.CANCELED for e in events),
        5,
    )
    assert updates[0].status is OrderStatus.LIVE


@pytest.mark.parametrize("lane", [True, False])
async def test_cancel_all_through_the_lane_or_the_client_is_stamped_when_sent(sim, venue, lane):
    rest_venue, _ = venue
    rest_venue.lane_enabled = lane
    price = round(sim.market.book("BTCUSDT", 1).best_bid - 50, 1)
    for k in range(2):
        await rest_venue.place(bid(f"ca-{k}", price - k))
    ticket = rest_venue.cancel_all_now()
    assert ticket.path == ("lane" if lane else "client")
    assert sorted(await ticket.result) == ["ca-0", "ca-1"]
    assert ticket.sent_ns is not None and ticket.sent_ns > 0
    assert sim.open_orders() == []
    nothing = rest_venue.cancel_all_now()
    assert await nothing.result == ()  # 22001, no order to cancel: the goal state


@pytest.mark.parametrize("first", ["lane", "client"])
async def test_the_lane_and_the_client_share_the_cancel_all_endpoints_window(sim, venue, first):
    """Bitget counts the cancel-alls of both paths together: ten through either fill the
    second, so the eleventh waits for the window in the client, never sent into a 429."""
    rest_venue, _ = venue
    rest_venue.lane_enabled = first == "lane"
    for _ in range(10):
        ticket = rest_venue.cancel_all_now()
        assert ticket.path == first
        await ticket.result
    rest_venue.lane_enabled = True
    assert rest_venue.lane is not None and not rest_venue.lane.ready
    ticket = rest_venue.cancel_all_now()
    assert ticket.path == "client"
    await ticket.result
    stats = rest_venue.client.stats()
    assert stats.rate_limit_waits[CANCEL_ALL_ORDERS] == 1
    assert stats.errors.get("429", 0) == 0


async def test_refusals_name_the_code_and_say_why(sim, venue):
    rest_venue, _ = venue
    price = round(sim.market.book("BTCUSDT", 1).best_bid - 50, 1)
    with pytest.raises(VenueRejected, match="not a multiple of BTCUSDT's lot"):
        await rest_venue.place(bid("off-grid", price, size=0.0015))
    with pytest.raises(VenueRejected) as refused:  # the exchange's own minimum notional
        await rest_venue.place(bid("tiny", 100.0, size=0.001))
    assert refused.value.code == "45110"
    assert "minimum" in refused.value.message
    with pytest.raises(VenueRejected) as unknown:
        await rest_venue.place(bid("no-spec", price)._replace(symbol="SOLUSDT"))
    assert "no instrument spec" in str(unknown.value)


async def test_a_demo_key_on_a_live_exchange_is_refused_with_40099(sim):
    demo = venue_on(sim, demo=True)
    await demo.start(lambda event: None)
    try:
        price = round(sim.market.book("BTCUSDT", 1).best_bid - 50, 1)
        with pytest.raises(VenueRejected) as refused:
            await demo.place(bid("demo-1", price))
        assert refused.value.code == "40099"
        assert "demo" in refused.value.message.lower()
    finally:
        await demo.stop()


async def test_an_exchange_that_does_not_answer_is_unavailable(sim):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    nowhere = venue_on(sim, base_url=f"http://127.0.0.1:{port}")
    with pytest.raises(VenueUnavailable, match="does not answer"):
        await nowhere.start(lambda event: None)


def test_hedge_mode_positions_are_netted_per_symbol():
    def position(side: str, total: str) -> OpenPosition:
        return OpenPosition(
            "BTCUSDT",
            side,
            Decimal(total),
            Decimal(total),
            Decimal("64000"),
            None,
            Decimal("1.5"),
            None,
            Decimal("20"),
            "crossed",
            "hedge_mode",
            1,
        )

    netted = _net_positions([position("long", "0.005"), position("short", "0.002")])
    assert [(p.symbol, p.size, p.unrealized_pnl) for p in netted] == [
        ("BTCUSDT", pytest.approx(0.003), 3.0)
    ]
    assert _net_positions([position("long", "0.002"), position("short", "0.002")]) == ()
