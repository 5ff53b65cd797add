"""OrderExecutor on the paper venue: journal before send, acks, fills once, cancels, a
journal that cannot write."""

from __future__ import annotations

import asyncio

import pytest
from executor_on_paper import make_rig, order, started_rig
from support.waiting import eventually

from engine.bitget.orders import OrderSide, OrderStatus, TimeInForce
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.journal import EntryKind, JournalFault
from engine.risk.events import OrderDenied, TradingState
from engine.risk.intents import DenialReason, Source
from engine.trading.events import (
    OrderAcknowledged,
    OrderFilled,
    OrderRejectedByVenue,
    TradingFault,
)
from engine.trading.tracked_order import OrderRole, OrderState


@pytest.fixture
async def rig(tmp_path):
    async with started_rig(tmp_path) as rig:
        yield rig


async def test_an_approved_order_is_on_disk_before_it_is_sent(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0)
    assert rig.executor.submit(intent, OrderRole.BID).approved
    await eventually(lambda: rig.executor.order(intent.client_oid).acknowledged, 3.0)
    assert rig.venue.journaled_before_send == {intent.client_oid: True}
    approved = rig.entries(EntryKind.ORDER_APPROVED)
    assert approved[-1]["client_oid"] == intent.client_oid
    assert approved[-1]["venue"] == "paper" and approved[-1]["session"] == "abc123"
    ack = rig.entries(EntryKind.ORDER_ACK)[-1]
    assert ack["event"] == "placed" and ack["order_id"]
    assert [e.client_oid for e in rig.logged(OrderAcknowledged)] == [intent.client_oid]
    assert rig.gateway.snapshot().open_orders == 1


@pytest.mark.parametrize("stop", ["kill", "flatten", "pause"])
async def test_a_quote_approved_before_a_kill_flatten_or_pause_is_not_sent(rig, stop):
    """It was still being journaled when trading stopped: withdrawn, never sent, so the kill
    or flatten has nothing on its way to wait for. A position is held: a flatten stays
    REDUCING until it is closed."""
    taking = order(rig, OrderSide.BUY, 64_000.1, 0.004, TimeInForce.IOC)
    assert rig.executor.submit(taking, OrderRole.HEDGE).approved
    await eventually(lambda: rig.executor.order(taking.client_oid) is None, 3.0)
    intent = order(rig, OrderSide.BUY, 63_990.0)
    assert rig.executor.submit(intent, OrderRole.BID).approved
    getattr(rig.gateway, stop)(rig.executor._clock())
    state = rig.gateway.state.name
    await eventually(lambda: rig.executor.order(intent.client_oid) is None, 3.0)
    assert intent.client_oid not in rig.venue.journaled_before_send
    assert await rig.executor.placements_answered(timeout_s=0)  # nothing on its way
    ended = rig.entries(EntryKind.ORDER_REJECT)[-1]
    assert ended["reason"] == f"not sent: trading is {state}"


async def test_a_denial_sends_nothing_and_is_journaled_with_its_reason(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0, size=0.05)  # above the 0.01 max order size
    decision = rig.executor.submit(intent, OrderRole.BID)
    assert decision.reason is DenialReason.ORDER_SIZE
    rig.executor.drain_risk_events()
    assert rig.executor.order(intent.client_oid) is None
    assert rig.venue.journaled_before_send == {}
    denied = rig.entries(EntryKind.ORDER_DENIED)
    assert denied[-1]["reason"] == "ORDER_SIZE"
    assert denied[-1]["intent"]["client_oid"] == intent.client_oid
    assert rig.logged(OrderDenied)[-1].reason is DenialReason.ORDER_SIZE


async def test_a_venue_refusal_releases_the_reservation(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0, size=0.0015)  # off the 0.001 lot: 45111
    assert rig.executor.submit(intent, OrderRole.BID).approved
    await eventually(lambda: rig.executor.order(intent.client_oid) is None, 3.0)
    assert rig.gateway.snapshot().open_orders == 0
    reject = rig.entries(EntryKind.ORDER_REJECT)[-1]
    assert (reject["code"], reject["sent"]) == ("45111", True)
    assert rig.logged(OrderRejectedByVenue)[-1].code == "45111"


async def test_fills_count_once_however_often_they_arrive(rig):
    intent = order(rig, OrderSide.BUY, 64_000.1, size=0.003, force=TimeInForce.IOC)
    rig.executor.submit(intent, OrderRole.HEDGE)
    await eventually(lambda: rig.executor.order(intent.client_oid) is None, 3.0)
    fill = next(e for e in rig.logged(OrderFilled) if e.client_oid == intent.client_oid)
    replay = FillUpdate(
        "BTCUSDT",
        "1",
        intent.client_oid,
        fill.trade_id,
        OrderSide.BUY,
        fill.price,
        fill.size,
        fill.fee,
        False,
        1,
        1,
    )
    rig.executor.on_private_event(replay)
    rig.executor.on_private_event(replay)
    assert rig.gateway.snapshot().positions[0].size == pytest.approx(0.003)
    assert rig.executor.stats().duplicate_fills == 2
    assert len(rig.entries(EntryKind.FILL)) == 1


async def test_an_update_before_the_ack_counts_as_the_ack_once(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0)
    rig.executor.submit(intent, OrderRole.BID)
    rig.executor.on_private_event(
        OrderUpdate(
            "BTCUSDT",
            "42",
            intent.client_oid,
            OrderSide.BUY,
            63_990.0,
            0.002,
            0.0,
            None,
            OrderStatus.LIVE,
            False,
            1,
            1,
        )
    )
    assert rig.executor.order(intent.client_oid).acknowledged
    await eventually(lambda: rig.executor.order(intent.client_oid).state is OrderState.LIVE, 3.0)
    await asyncio.sleep(0.01)
    assert len([e for e in rig.entries(EntryKind.ORDER_ACK) if e["event"] == "placed"]) == 1


async def test_an_order_cancelled_before_it_is_sent_never_reaches_the_venue(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0)
    rig.executor.submit(intent, OrderRole.BID)
    assert rig.executor.order(intent.client_oid).state is OrderState.JOURNALING
    rig.executor.cancel(intent.client_oid, Source.STRATEGY, "changed my mind")
    await eventually(lambda: rig.executor.order(intent.client_oid) is None, 3.0)
    assert intent.client_oid not in rig.venue.journaled_before_send
    assert rig.gateway.snapshot().open_orders == 0
    reject = rig.entries(EntryKind.ORDER_REJECT)[-1]
    assert reject["sent"] is False and "cancelled first" in reject["reason"]


async def test_cancel_all_reaches_every_resting_order(rig):
    intents = [order(rig, OrderSide.BUY, 63_990.0 - k) for k in range(3)]
    for intent in intents:
        rig.executor.submit(intent, OrderRole.OPERATOR)
    await eventually(
        lambda: all(rig.executor.order(i.client_oid).acknowledged for i in intents), 3.0
    )
    ticket = rig.executor.cancel_all_now(Source.OPERATOR, "test")
    assert sorted(await ticket.result) == sorted(i.client_oid for i in intents)
    await eventually(lambda: not rig.executor.has_open_orders(), 3.0)
    assert rig.gateway.snapshot().open_orders == 0
    cancel_all = rig.entries(EntryKind.ORDER_INTENT)[-1]
    assert cancel_all["action"] == "cancel_all" and cancel_all["reason"] == "test"


async def test_a_journal_that_cannot_write_halts_trading(tmp_path):
    rig = await make_rig(tmp_path, max_bytes=16_384 * 4)
    await rig.executor.start()
    rig.book()
    # Fill the journal past its cap: the writer faults, as on a full disk.
    rig.journal.append(EntryKind.FAULT, {"blob": "x" * 200_000}, 1)
    with pytest.raises(JournalFault):
        rig.journal.flush()
    intent = order(rig, OrderSide.BUY, 63_990.0)
    rig.executor.submit(intent, OrderRole.BID)
    await eventually(lambda: rig.executor.order(intent.client_oid) is None, 3.0)
    assert rig.gateway.state is TradingState.HALTED
    assert intent.client_oid not in rig.venue.journaled_before_send
    # The fault is permanent: said once, not again for every later write it refuses.
    for price in (63_980.0, 63_970.0):
        rig.executor.submit(order(rig, OrderSide.BUY, price), OrderRole.BID)
    await asyncio.sleep(0.05)
    faults = [e.reason for e in rig.logged(TradingFault) if "journal fault" in e.reason]
    assert len(faults) == 1 and faults[0].startswith("journal fault, trading halted")
    await rig.executor.stop()
    rig.journal.stop()
