"""OrderExecutor on the paper venue: journal before send, acks, fills once, reconciliation,
the close sequence."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass

import pytest
from market_frames import MarketScript

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.private_events import FillUpdate, OrderStatus, OrderUpdate
from engine.journal import EntryKind, Journal, JournalConfig, JournalFault, read_journal
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.pipeline import EventLog
from engine.risk.events import OrderDenied, TradingState
from engine.risk.gateway import RiskGateway
from engine.risk.intents import DenialReason, OrderIntent, Source
from engine.trading.config import OrderExecutorConfig, PaperVenueConfig, default_risk_config
from engine.trading.desk import orders_open_in_journal
from engine.trading.events import (
    OrderAcknowledged,
    OrderFilled,
    OrderMissingAtVenue,
    OrderRejectedByVenue,
    ReconciliationDone,
    TradingFault,
    UnknownOrderAtVenue,
)
from engine.trading.executor import OrderExecutor, OrderRole, OrderState
from engine.trading.paper_venue import PaperVenue
from engine.trading.venue import PlaceAck

BIDS = [(64_000.0, 0.5), (63_999.9, 1.0)]
ASKS = [(64_000.1, 0.5), (64_000.2, 1.0)]
ETH_BIDS = [(3_400.00, 20.0)]
ETH_ASKS = [(3_400.02, 20.0)]


class JournalCheckingVenue(PaperVenue):
    """The paper venue, noting for every order whether its approval was on disk when it
    arrived (a spy on the one property the executor promises about sending)."""

    def __init__(self, journal_path, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.journal_path = journal_path
        self.journaled_before_send: dict[str, bool] = {}

    async def place(self, intent: OrderIntent) -> PlaceAck:
        approvals = read_journal(self.journal_path, kinds=[EntryKind.ORDER_APPROVED])
        self.journaled_before_send[intent.client_oid] = any(
            entry.payload["client_oid"] == intent.client_oid for entry in approvals
        )
        return await super().place(intent)


@dataclass
class Rig:
    executor: OrderExecutor
    venue: JournalCheckingVenue
    gateway: RiskGateway
    journal: Journal
    events: EventLog
    market: MarketScript

    def book(self, symbol="BTCUSDT", bids=BIDS, asks=ASKS):
        snapshot = self.market.book(symbol, bids, asks)
        self.venue.on_book(snapshot)
        (bid, bid_size), (ask, ask_size) = bids[0], asks[0]
        self.executor.on_mark(symbol, bid, bid_size, ask, ask_size, self.executor._clock())

    def entries(self, kind):
        self.journal.flush()
        return [e.payload for e in read_journal(self.journal.config.path, kinds=[kind])]

    def logged(self, kind):
        return [event for _, event in self.events.since(-1)[0] if type(event) is kind]


async def make_rig(tmp_path, *, max_bytes=None) -> Rig:
    journal = Journal(JournalConfig(tmp_path / "journal.sqlite", max_bytes=max_bytes))
    journal.start()
    venue = JournalCheckingVenue(
        journal.config.path,
        PaperVenueConfig(round_trip_ms=1.0, reaction_us=0.0),
        (BTCUSDT, ETHUSDT),
    )
    gateway = RiskGateway(dataclasses.replace(default_risk_config(), max_mark_age_ms=60_000))
    events = EventLog(10_000)
    executor = OrderExecutor(
        OrderExecutorConfig(unknown_order_grace_ms=50),
        gateway,
        venue,
        journal,
        events,
        session="abc123",
    )
    rig = Rig(executor, venue, gateway, journal, events, MarketScript())
    return rig


@pytest.fixture
async def rig(tmp_path):
    rig = await make_rig(tmp_path)
    await rig.executor.start()
    rig.book()
    rig.book("ETHUSDT", ETH_BIDS, ETH_ASKS)
    yield rig
    await rig.executor.stop()
    rig.journal.stop()


def order(rig, side, price, size=0.002, force=TimeInForce.POST_ONLY, role=OrderRole.BID, **kw):
    return OrderIntent(
        kw.pop("symbol", "BTCUSDT"),
        side,
        size,
        price,
        kw.pop("order_type", OrderType.LIMIT),
        rig.executor.new_client_oid(role),
        kw.pop("source", Source.STRATEGY),
        force,
        kw.pop("reduce_only", False),
        "test",
    )


async def settle(rig, condition, timeout_s=3.0):
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


async def test_an_approved_order_is_on_disk_before_it_is_sent(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0)
    assert rig.executor.submit(intent, OrderRole.BID).approved
    await settle(rig, lambda: rig.executor.order(intent.client_oid).acknowledged)
    assert rig.venue.journaled_before_send == {intent.client_oid: True}
    approved = rig.entries(EntryKind.ORDER_APPROVED)
    assert approved[-1]["client_oid"] == intent.client_oid
    assert approved[-1]["venue"] == "paper" and approved[-1]["session"] == "abc123"
    ack = rig.entries(EntryKind.ORDER_ACK)[-1]
    assert ack["event"] == "placed" and ack["order_id"]
    assert [e.client_oid for e in rig.logged(OrderAcknowledged)] == [intent.client_oid]
    assert rig.gateway.snapshot().open_orders == 1


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
    await settle(rig, lambda: rig.executor.order(intent.client_oid) is None)
    assert rig.gateway.snapshot().open_orders == 0
    reject = rig.entries(EntryKind.ORDER_REJECT)[-1]
    assert (reject["code"], reject["sent"]) == ("45111", True)
    assert rig.logged(OrderRejectedByVenue)[-1].code == "45111"


async def test_fills_count_once_however_often_they_arrive(rig):
    intent = order(rig, OrderSide.BUY, 64_000.1, size=0.003, force=TimeInForce.IOC)
    rig.executor.submit(intent, OrderRole.HEDGE)
    await settle(rig, lambda: rig.executor.order(intent.client_oid) is None)
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
    await settle(rig, lambda: rig.executor.order(intent.client_oid).state is OrderState.LIVE)
    await asyncio.sleep(0.01)
    assert len([e for e in rig.entries(EntryKind.ORDER_ACK) if e["event"] == "placed"]) == 1


async def test_an_order_cancelled_before_it_is_sent_never_reaches_the_venue(rig):
    intent = order(rig, OrderSide.BUY, 63_990.0)
    rig.executor.submit(intent, OrderRole.BID)
    assert rig.executor.order(intent.client_oid).state is OrderState.JOURNALING
    rig.executor.cancel(intent.client_oid, Source.STRATEGY, "changed my mind")
    await settle(rig, lambda: rig.executor.order(intent.client_oid) is None)
    assert intent.client_oid not in rig.venue.journaled_before_send
    assert rig.gateway.snapshot().open_orders == 0
    reject = rig.entries(EntryKind.ORDER_REJECT)[-1]
    assert reject["sent"] is False and "cancelled first" in reject["reason"]


async def test_cancel_all_reaches_every_resting_order(rig):
    intents = [order(rig, OrderSide.BUY, 63_990.0 - k) for k in range(3)]
    for intent in intents:
        rig.executor.submit(intent, OrderRole.OPERATOR)
    await settle(rig, lambda: all(rig.executor.order(i.client_oid).acknowledged for i in intents))
    ticket = rig.executor.cancel_all_now(Source.OPERATOR, "test")
    assert sorted(await ticket.result) == sorted(i.client_oid for i in intents)
    await settle(rig, lambda: not rig.executor.has_open_orders())
    assert rig.gateway.snapshot().open_orders == 0
    cancel_all = rig.entries(EntryKind.ORDER_INTENT)[-1]
    assert cancel_all["action"] == "cancel_all" and cancel_all["reason"] == "test"


async def test_kill_sequence_ends_flat_with_nothing_open(rig):
    taking = [
        order(rig, OrderSide.BUY, 64_000.1, 0.004, TimeInForce.IOC),
        order(rig, OrderSide.SELL, 3_400.0, 0.3, TimeInForce.IOC, symbol="ETHUSDT"),
    ]
    resting = order(rig, OrderSide.BUY, 63_900.0)
    for intent in taking:
        assert rig.executor.submit(intent, OrderRole.HEDGE).approved
    assert rig.executor.submit(resting, OrderRole.BID).approved
    await settle(
        rig,
        lambda: (
            all(rig.executor.order(i.client_oid) is None for i in taking)
            and rig.executor.order(resting.client_oid).acknowledged
        ),
    )
    positions = {p.symbol: p.size for p in rig.gateway.snapshot().positions}
    assert positions == {"BTCUSDT": pytest.approx(0.004), "ETHUSDT": pytest.approx(-0.3)}
    rig.gateway.kill(rig.executor._clock())
    rig.book()  # fresh liquidity for the closing orders
    rig.book("ETHUSDT", ETH_BIDS, ETH_ASKS)
    outcome = await rig.executor.run_close_sequence(Source.OPERATOR, "test kill", 5.0)
    assert outcome.ok, outcome.message
    snapshot = await rig.venue.snapshot()
    assert snapshot.orders == () and snapshot.positions == ()
    assert all(p.size == 0 for p in rig.gateway.snapshot().positions)
    assert rig.gateway.state is TradingState.HALTED


async def test_a_fill_already_in_a_synced_position_moves_nothing_again(rig):
    intent = order(rig, OrderSide.BUY, 64_000.1, size=0.002, force=TimeInForce.IOC)
    rig.executor.submit(intent, OrderRole.HEDGE)
    await settle(rig, lambda: rig.executor.order(intent.client_oid) is None)
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
    await settle(
        first, lambda: all(first.executor.order(i.client_oid).acknowledged for i in (kept, gone))
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
    await settle(rig, lambda: rig.executor.order(intent.client_oid) is None)
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
