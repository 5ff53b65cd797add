"""Reconciliation on the paper venue: a synced position takes in the fills before it, a
restart reconciles the journal with the venue."""

from __future__ import annotations

import pytest
from executor_on_paper import make_rig, order, started_rig
from support.waiting import eventually

from engine.bitget.orders import OrderSide, TimeInForce
from engine.bitget.private_events import FillUpdate
from engine.journal import EntryKind, read_journal
from engine.trading.desk import orders_open_in_journal
from engine.trading.events import OrderMissingAtVenue, ReconciliationDone, UnknownOrderAtVenue
from engine.trading.tracked_order import OrderRole
from engine.trading.venue import VenueSnapshot


@pytest.fixture
async def rig(tmp_path):
    async with started_rig(tmp_path) as rig:
        yield rig


async def test_a_fill_already_in_a_synced_position_moves_nothing_again(rig):
    intent = order(rig, OrderSide.BUY, 64_000.1, size=0.002, force=TimeInForce.IOC)
    rig.executor.submit(intent, OrderRole.HEDGE)
    await eventually(lambda: rig.executor.order(intent.client_oid) is None, 3.0)
    late = FillUpdate(
        "BTCUSDT",
        "9",
        "someone",
        "late-1",
        OrderSide.BUY,
        64_000.1,
        0.002,
        0.0,
        False,
        rig.executor._clock() // 1_000_000 - 10,
        1,
    )
    await rig.executor.reconcile("test")  # synced through now: the late fill is inside
    rig.executor.on_private_event(late)
    assert rig.gateway.snapshot().positions[0].size == pytest.approx(0.002)
    assert rig.entries(EntryKind.FILL)[-1]["in_position_sync"] is True


async def test_restart_reconciles_against_the_journal_and_the_venue(tmp_path):
    first = await make_rig(tmp_path)
    await first.executor.start()
    first.book()
    kept = order(first, OrderSide.BUY, 63_900.0)
    gone = order(first, OrderSide.BUY, 63_901.0)
    for intent in (kept, gone):
        first.executor.submit(intent, OrderRole.BID)
    await eventually(
        lambda: all(first.executor.order(i.client_oid).acknowledged for i in (kept, gone)),
        3.0,
    )
    # The engine dies here (no stop: nothing is cancelled). While it is down, `gone` is
    # cancelled at the venue; `kept` stays open.
    first.venue.engines["BTCUSDT"].cancel(0, client_oid=gone.client_oid)
    first.journal.stop()

    second = await make_rig(tmp_path)
    second.venue = first.venue  # the same exchange
    second.executor.venue = first.venue
    entries = read_journal(tmp_path / "journal.sqlite")
    journal_orders = orders_open_in_journal(entries, "paper")
    assert {o["client_oid"] for o in journal_orders} == {kept.client_oid, gone.client_oid}
    done = await second.executor.reconcile("start", journal_orders, cancel_open=True)
    assert done is not None and (done.missing, done.unknown) == (1, 1)
    assert [e.client_oid for e in second.logged(OrderMissingAtVenue)] == [gone.client_oid]
    unknown = second.logged(UnknownOrderAtVenue)
    assert [e.client_oid for e in unknown] == [kept.client_oid]
    assert "from the journal" in unknown[0].detail
    assert (await first.venue.snapshot()).orders == ()  # the stale one was cancelled
    assert second.logged(ReconciliationDone)
    second.journal.stop()


def test_a_snapshot_holds_the_fills_before_its_answer_and_those_that_moved_its_positions():
    snapshot = VenueSnapshot((), (), 1_000, {"BTCUSDT": 1_000, "ETHUSDT": 400})
    # A fill in the answer's own millisecond is in it only if it moved the position.
    assert snapshot.fills_through("BTCUSDT") == 1_000
    assert snapshot.fills_through("ETHUSDT") == 999
    assert snapshot.fills_through("SOLUSDT") == 999  # flat: only the answer's time says
