"""BitgetRestClient against the real simulated exchange on loopback."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal

import pytest
from support.bitget import sim_credentials

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import CANCEL_ORDER, PLACE_ORDER
from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.rest import BitgetApiError, BitgetRestClient
from engine.sim.server import SimExchange

StartClient = Callable[..., Awaitable[BitgetRestClient]]
StartSim = Callable[..., Awaitable[SimExchange]]


def passive_bid(sim: SimExchange, ticks_below: int = 3000) -> str:
    """A buy price far enough below the touch (0.5 %) that it rests for the whole test,
    informed-burst jumps and a CPU-starved sim clock included."""
    assert sim.market is not None
    return f"{sim.market.book('BTCUSDT', 1).best_bid - ticks_below * 0.1:.1f}"


def sim_orders_with(sim: SimExchange, client_oid: str) -> list[str]:
    return [order.order_id for order in sim.open_orders() if order.client_oid == client_oid]


async def test_signed_order_is_accepted_and_listed(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    price = passive_bid(sim)
    ack = await client.place_order("BTCUSDT", OrderSide.BUY, Decimal("0.010"), price=price)
    assert ack.order_id is not None and not ack.reconciled and ack.attempts == 1
    assert len(ack.client_oid) == 32 and ack.client_oid.startswith("hc")
    (order,) = sim.open_orders()
    assert (order.order_id, order.client_oid) == (ack.order_id, ack.client_oid)
    assert order.price == pytest.approx(float(price)) and order.size == pytest.approx(0.010)
    assert not order.reduce_only
    (pending,) = await client.pending_orders("BTCUSDT")
    assert pending.order_id == ack.order_id and pending.client_oid == ack.client_oid
    assert pending.price == Decimal(price) and pending.size == Decimal("0.010")
    assert pending.side is OrderSide.BUY and pending.order_type is OrderType.LIMIT
    assert pending.force is TimeInForce.GTC and pending.status == "live"
    stats = client.stats()
    assert stats.requests[PLACE_ORDER] == 1 and stats.retries == 0 and not stats.errors
    assert stats.last_latency_ms[PLACE_ORDER] > 0


async def test_given_client_oid_post_only_and_reduce_only_reach_the_exchange(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    await client.place_order("BTCUSDT", "buy", "0.010", order_type="market")
    ack = await client.place_order(
        "BTCUSDT", "sell", "0.010", price="99999.0", force="post_only",
        reduce_only=True, client_oid="exit-1",
    )  # fmt: skip
    assert ack.client_oid == "exit-1"
    (order,) = sim.open_orders()
    assert order.client_oid == "exit-1" and order.reduce_only and order.force == "post_only"


async def test_cancel_by_client_oid_and_by_order_id(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    first = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    second = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim, 3020))
    cancelled = await client.cancel_order("BTCUSDT", client_oid=first.client_oid)
    assert cancelled.order_id == first.order_id
    assert second.order_id is not None
    await client.cancel_order("BTCUSDT", order_id=second.order_id)
    assert sim.open_orders() == []
    with pytest.raises(BitgetApiError) as caught:
        await client.cancel_order("BTCUSDT", order_id=second.order_id)
    assert caught.value.code in ("40768", "43001") and not caught.value.retryable
    assert "order not found" in caught.value.message_for_operator
    assert client.stats().requests[CANCEL_ORDER] == 3


async def test_batch_cancel_reports_each_order(client: BitgetRestClient, sim: SimExchange) -> None:
    acks = [
        await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim, 3000 + i))
        for i in range(3)
    ]
    keep = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim, 3010))
    assert acks[2].order_id is not None
    result = await client.batch_cancel(
        "BTCUSDT",
        client_oids=[acks[0].client_oid, acks[1].client_oid, "never-placed"],
        order_ids=[acks[2].order_id],
    )
    assert {ref.order_id for ref in result.succeeded} == {ack.order_id for ack in acks}
    (failure,) = result.failed
    assert failure.client_oid == "never-placed" and failure.code
    assert [order.client_oid for order in sim.open_orders()] == [keep.client_oid]


async def test_cancel_all_by_symbol_and_everywhere(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    assert sim.market is not None
    eth_bid = sim.market.book("ETHUSDT", 1).best_bid
    btc = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    eth = await client.place_order("ETHUSDT", "buy", "0.10", price=f"{eth_bid - 5:.2f}")
    by_symbol = await client.cancel_all("BTCUSDT")
    assert [ref.order_id for ref in by_symbol.succeeded] == [btc.order_id]
    assert [order.client_oid for order in sim.open_orders()] == [eth.client_oid]
    everywhere = await client.cancel_all()
    assert [ref.order_id for ref in everywhere.succeeded] == [eth.order_id]
    # Nothing left: Bitget's "no order to cancel" is the goal state, not an error.
    assert await client.cancel_all() == await client.cancel_all("BTCUSDT")
    assert (await client.cancel_all()).succeeded == ()


async def test_positions_and_close_positions(client: BitgetRestClient, sim: SimExchange) -> None:
    assert await client.positions() == []
    await client.place_order("BTCUSDT", "buy", "0.020", order_type="market")
    (position,) = await client.positions()
    assert position.symbol == "BTCUSDT" and position.hold_side == "long"
    assert position.total == Decimal("0.020") and position.open_price_avg > 0
    assert position.leverage > 0 and position.pos_mode == "one_way_mode"
    closed = await client.close_positions("BTCUSDT")
    assert [ref.symbol for ref in closed.succeeded] == ["BTCUSDT"] and closed.failed == ()
    assert all(p.size == 0 for p in sim.positions())
    assert await client.positions() == []
    # Flat already: "no position to close" is the goal state. The second call also waits
    # out close-positions' 1 request/s limit on the client side.
    started = time.monotonic()
    assert (await client.close_positions()).succeeded == ()
    assert time.monotonic() - started >= 0.9
    assert client.stats().rate_limit_waits["/api/v2/mix/order/close-positions"] == 1


async def test_wrong_secret_is_40009_with_the_operator_message_and_not_retried(
    sim: SimExchange, start_client: StartClient
) -> None:
    config = sim.config
    wrong = Credentials(config.api_key, "not-the-secret", config.passphrase)
    client = await start_client(sim.rest_url, wrong)
    with pytest.raises(BitgetApiError) as caught:
        await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    error = caught.value
    assert (error.code, error.http_status, error.retryable) == ("40009", 400, False)
    assert error.endpoint == PLACE_ORDER
    assert error.message_for_operator.startswith("40009: signature mismatch: check the API secret")
    assert "not-the-secret" not in str(error) and "not-the-secret" not in repr(error)
    stats = client.stats()
    assert stats.requests[PLACE_ORDER] == 1 and stats.retries == 0
    assert stats.errors == {"40009": 1} and stats.reconciliations == 0
    assert sim.open_orders() == []


@pytest.mark.parametrize(("sim_demo", "client_demo"), [(True, False), (False, True)])
async def test_demo_environment_mismatch_is_40099(
    start_sim: StartSim, start_client: StartClient, sim_demo: bool, client_demo: bool
) -> None:
    sim = await start_sim(demo=sim_demo)
    client = await start_client(sim.rest_url, sim_credentials(sim), demo=client_demo)
    with pytest.raises(BitgetApiError) as caught:
        await client.positions()
    assert caught.value.code == "40099" and not caught.value.retryable
    assert "demo/live mismatch" in caught.value.message_for_operator


async def test_demo_flag_trades_on_a_demo_exchange(
    start_sim: StartSim, start_client: StartClient
) -> None:
    sim = await start_sim(demo=True)
    client = await start_client(sim.rest_url, sim_credentials(sim), demo=True)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    assert sim_orders_with(sim, ack.client_oid) == [ack.order_id]


async def test_429_is_retried_and_the_order_placed_once(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    sim.faults.add("rest-error:429:3")
    ack = await client.place_order(
        "BTCUSDT", "buy", "0.010", price=passive_bid(sim), client_oid="rl-1"
    )
    assert ack.attempts == 4 and not ack.reconciled
    assert sim_orders_with(sim, "rl-1") == [ack.order_id]
    stats = client.stats()
    assert stats.errors == {"429": 3} and stats.retries == 3
    # A 429 is refused before processing: no clientOid lookup was needed.
    assert stats.reconciliations == 0


async def test_retries_are_bounded(client: BitgetRestClient, sim: SimExchange) -> None:
    sim.faults.rest_error(429, 10)
    with pytest.raises(BitgetApiError) as caught:
        await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    assert caught.value.code == "429" and caught.value.retryable
    assert client.stats().requests[PLACE_ORDER] == client.config.max_attempts
    assert sim.open_orders() == []


async def test_timeout_during_place_is_reconciled_then_resent_with_the_same_client_oid(
    sim: SimExchange, start_client: StartClient
) -> None:
    # The sim holds each answer 1.5 s, past the client's 0.5 s timeout. The delay is read when
    # a request arrives, so ending it at 0.25 s only speeds up later requests (the lookup at
    # 0.6 s). The sim reads the body after the delay, so the abandoned original dies with its
    # connection: the lookup finds nothing and the same clientOid goes out again.
    client = await start_client(
        sim.rest_url, sim_credentials(sim), request_timeout_s=0.5, reconcile_grace_s=0.1
    )
    sim.faults.slow_rest(1.5)
    placing = asyncio.create_task(
        client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim), client_oid="slow-1")
    )
    await asyncio.sleep(0.25)
    sim.faults.slow_rest(0)
    ack = await placing
    assert not ack.reconciled and ack.attempts == 2
    stats = client.stats()
    assert stats.requests[PLACE_ORDER] == 2 and stats.errors == {"transport": 1}
    assert stats.reconciliations == 1 and stats.reconciled_placed == 0
    # Once the held original's time has passed, there is still exactly one order.
    await asyncio.sleep(1.0)
    assert sim.stats().rest_requests >= 3, "the held original has been served by now"
    assert sim_orders_with(sim, "slow-1") == [ack.order_id]
    assert len(sim.open_orders()) == 1


async def test_5xx_on_cancel_is_retried(client: BitgetRestClient, sim: SimExchange) -> None:
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    sim.faults.rest_error(503, 2)
    cancelled = await client.cancel_order("BTCUSDT", client_oid=ack.client_oid)
    assert cancelled.order_id == ack.order_id and sim.open_orders() == []
    stats = client.stats()
    assert stats.errors == {"503": 2} and stats.requests[CANCEL_ORDER] == 3


async def test_502_gateway_page_on_batch_cancel_is_retried(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    sim.faults.rest_error(502, 1)
    result = await client.batch_cancel("BTCUSDT", client_oids=[ack.client_oid])
    assert [ref.order_id for ref in result.succeeded] == [ack.order_id]
    assert client.stats().errors == {"502": 1}


async def test_place_orders_stay_within_the_exchange_rate_limit(
    client: BitgetRestClient, sim: SimExchange
) -> None:
    # 12 concurrent orders: the sim answers 429 to an 11th in any 1 s window, so all 12
    # succeeding on the first attempt means the client spaced them.
    acks = await asyncio.gather(
        *(
            client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim, 3000 + i))
            for i in range(12)
        )
    )
    assert all(ack.attempts == 1 for ack in acks)
    assert len(sim.open_orders()) == 12
    stats = client.stats()
    assert "429" not in stats.errors and stats.retries == 0
    assert stats.rate_limit_waits[PLACE_ORDER] >= 1


async def test_clock_skew_is_reported_and_corrected(
    sim: SimExchange, start_client: StartClient, caplog: pytest.LogCaptureFixture
) -> None:
    def fast_clock() -> int:
        return time.time_ns() + 60 * 1_000_000_000

    client = await start_client(sim.rest_url, sim_credentials(sim), wall_clock_ns=fast_clock)
    # Unsynced, the first call is refused 40008; the client re-measures and retries once.
    assert await client.positions() == []
    assert client.stats().errors == {"40008": 1}
    assert -61_000 < client.clock_offset_ms < -59_000
    sync = await client.sync_time()
    assert sync.beyond_signing_window and sync.round_trip_ms >= 0
    assert "60.0 s ahead of Bitget's" in caplog.text and "NTP" in caplog.text
