"""Reconciliation on the real simulator when private pushes are lost (its `silence` fault
drops them, as Bitget warns live pushes can be): fills recovered by looking the order up,
journaled once; a feed coming back checks at once; positions re-synced while orders rest."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from decimal import Decimal

import pytest
from executor_on_sim import SIZE, SYMBOL, Rig, started_rig
from sim_engine import sim_rest
from support.waiting import eventually

from engine.bitget.orders import OrderSide
from engine.bitget.private_events import FillUpdate
from engine.journal import EntryKind
from engine.trading.events import OrderMissingAtVenue
from engine.trading.tracked_order import OrderState


@pytest.fixture
async def rig(sim, tmp_path) -> AsyncIterator[Rig]:
    async with started_rig(sim, tmp_path) as rig:
        yield rig


async def test_a_fill_lost_with_its_pushes_is_recovered_and_journaled_once(rig):
    client_oid = await rig.place_filled_unheard()
    sim_fills = [fill for fill in rig.sim.fills() if fill.client_oid == client_oid]
    assert sim_fills, "the order should have taken the ask"
    await asyncio.sleep(0.1)  # beyond the grace an order gets before it is looked up
    assert rig.executor.order(client_oid).filled == 0  # nothing heard: still open here
    assert rig.engine_position() == 0.0 and rig.venue_position() == pytest.approx(SIZE)

    await rig.executor.check_with_venue("test")

    assert rig.executor.order(client_oid) is None
    (finished,) = [o for o in rig.executor.recent_orders() if o.client_oid == client_oid]
    assert finished.state is OrderState.FILLED and finished.filled == pytest.approx(SIZE)
    assert rig.engine_position() == pytest.approx(rig.venue_position())
    fills = [e for e in rig.entries(EntryKind.FILL) if e["client_oid"] == client_oid]
    assert sorted(e["trade_id"] for e in fills) == sorted(f.trade_id for f in sim_fills)
    assert all(str(e["source"]).startswith("venue lookup") for e in fills)
    assert rig.executor.stats().fills_recovered == len(sim_fills)
    (missing,) = [e for e in rig.logged(OrderMissingAtVenue) if e.client_oid == client_oid]
    assert f"{len(sim_fills)} fills recovered" in missing.detail

    # The push arriving after all is the same trade: applied once.
    late = sim_fills[0]
    rig.executor.on_private_event(
        FillUpdate(
            SYMBOL,
            late.order_id,
            client_oid,
            late.trade_id,
            OrderSide.BUY,
            late.price,
            late.size,
            late.fee,
            False,
            late.ts_ms,
            0,
        )
    )
    assert rig.executor.stats().duplicate_fills == 1
    assert len([e for e in rig.entries(EntryKind.FILL) if e["client_oid"] == client_oid]) == len(
        sim_fills
    )
    assert rig.engine_position() == pytest.approx(rig.venue_position())


async def test_an_order_cancelled_unheard_is_closed_as_cancelled(rig):
    client_oid = await rig.place_resting_bid()
    rig.sim.faults.silence(30)
    client = await sim_rest(rig.sim)
    try:
        await client.cancel_order(SYMBOL, client_oid=client_oid)  # by hand, at the exchange
    finally:
        await client.stop()
    await asyncio.sleep(0.1)
    assert rig.executor.order(client_oid) is not None
    await rig.executor.check_with_venue("test")
    assert rig.executor.order(client_oid) is None
    (closed,) = [o for o in rig.executor.recent_orders() if o.client_oid == client_oid]
    assert closed.state is OrderState.CANCELED
    assert closed.reason.startswith("canceled at the venue, unheard (test): 0 fills recovered")
    assert not rig.gateway.snapshot().open_orders  # its reservation released


async def test_a_feed_coming_back_checks_with_the_venue_at_once(rig):
    await asyncio.sleep(0.7)  # past the first scheduled check
    client_oid = await rig.place_filled_unheard()
    await asyncio.sleep(0.3)
    assert rig.executor.order(client_oid) is not None  # no check on its own for 10 minutes
    rig.executor.on_feed_health(SYMBOL, False, "stale")
    rig.executor.on_feed_health(SYMBOL, True, "")
    await eventually(lambda: rig.executor.order(client_oid) is None, 5)
    assert rig.engine_position() == pytest.approx(rig.venue_position())


async def _foreign_fill_unheard(rig: Rig) -> FillUpdate:
    """A buy placed at the exchange by someone else (no order of ours), its pushes lost."""
    rig.sim.faults.silence(30)
    client = await sim_rest(rig.sim)
    try:
        ack = await client.place_order(
            SYMBOL,
            OrderSide.BUY,
            Decimal("0.003"),
            # Through the ask by 10 USDT: the simulator's market may move before it arrives.
            price=Decimal(str(round(rig.sim.market.book(SYMBOL, 1).best_ask + 10, 1))),
            client_oid="by-hand-1",
        )
    finally:
        await client.stop()
    (fill,) = [f for f in rig.sim.fills() if f.order_id == ack.order_id]
    return FillUpdate(
        SYMBOL,
        fill.order_id,
        fill.client_oid,
        fill.trade_id,
        OrderSide.BUY,
        fill.price,
        fill.size,
        fill.fee,
        False,
        fill.ts_ms,
        0,
    )


async def test_a_position_apart_while_quoting_is_synced_once_it_holds(rig):
    resting = await rig.place_resting_bid()
    late_push = await _foreign_fill_unheard(rig)
    assert rig.engine_position() == 0.0 and rig.venue_position() == pytest.approx(0.003)

    await rig.executor.check_with_venue("test")

    assert rig.engine_position() == pytest.approx(0.003)
    assert rig.executor.order(resting).state is OrderState.LIVE  # quoting goes on
    (synced,) = [e for e in rig.entries(EntryKind.POSITION) if e.get("event") == "synced"]
    assert synced["new_size"] == pytest.approx(0.003) and "apart at two reads" in synced["reason"]
    # The push arrives at last: it is in the synced position already and moves nothing.
    rig.executor.on_private_event(late_push)
    assert rig.engine_position() == pytest.approx(0.003)


async def test_a_fill_arriving_during_the_confirmation_is_not_counted_twice(rig):
    await rig.place_resting_bid()
    late_push = await _foreign_fill_unheard(rig)
    check = asyncio.create_task(rig.executor.check_with_venue("test"))
    await asyncio.sleep(0.05)  # the first read is done; the confirmation waits 150 ms
    rig.executor.on_private_event(late_push)
    await check
    assert rig.engine_position() == pytest.approx(0.003)
    assert not [e for e in rig.entries(EntryKind.POSITION) if e.get("event") == "synced"]
