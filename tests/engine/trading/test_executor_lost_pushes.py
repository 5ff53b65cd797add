"""OrderExecutor on the real simulator when private pushes are lost (its `silence` fault drops
them, as Bitget warns live pushes can be): fills recovered by looking the order up, journaled
once; positions re-synced while orders rest; the clock skew behind a 40008 explained."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from decimal import Decimal

import pytest
from sim_engine import eventually, sim_rest

from engine.bitget.credentials import Credentials
from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.private_events import FillUpdate, PrivateStreamState
from engine.bitget.rest import BitgetRestConfig
from engine.journal import EntryKind, Journal, JournalConfig, read_journal
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.pipeline import EventLog
from engine.risk.gateway import RiskGateway
from engine.risk.intents import OrderIntent, Source
from engine.sim.server import SimExchange
from engine.trading.config import OrderExecutorConfig, default_risk_config
from engine.trading.events import OrderMissingAtVenue, TradingFault
from engine.trading.executor import OrderExecutor, OrderRole, OrderState
from engine.trading.rest_venue import RestVenue

SYMBOL = "BTCUSDT"
SIZE = 0.002


@dataclass
class Rig:
    sim: SimExchange
    executor: OrderExecutor
    venue: RestVenue
    gateway: RiskGateway
    journal: Journal
    events: EventLog

    def mark(self) -> None:
        for symbol in (SYMBOL, "ETHUSDT"):
            book = self.sim.market.book(symbol, 1)
            self.executor.on_mark(
                symbol, book.best_bid, 1.0, book.best_ask, 1.0, self.executor._clock()
            )

    def intent(self, price: float, force: TimeInForce) -> OrderIntent:
        return OrderIntent(
            SYMBOL,
            OrderSide.BUY,
            SIZE,
            price,
            OrderType.LIMIT,
            self.executor.new_client_oid(OrderRole.BID),
            Source.STRATEGY,
            force,
            False,
            "test",
        )

    def entries(self, kind: EntryKind) -> list[dict[str, object]]:
        self.journal.flush()
        return [e.payload for e in read_journal(self.journal.config.path, kinds=[kind])]

    def logged(self, kind: type) -> list:
        return [event for _, event in self.events.since(-1)[0] if type(event) is kind]

    def engine_position(self) -> float:
        self.executor.invalidate_risk_view()
        view = self.executor.risk_view()
        return next(p.size for p in view.positions if p.symbol == SYMBOL)

    def venue_position(self) -> float:
        return sum(p.size for p in self.sim.positions() if p.symbol == SYMBOL)

    async def place(self, price: float, force: TimeInForce) -> str:
        self.mark()
        intent = self.intent(price, force)
        assert self.executor.submit(intent, OrderRole.BID).approved
        await eventually(lambda: _acknowledged(self.executor, intent.client_oid), 5)
        return intent.client_oid

    async def place_resting_bid(self) -> str:
        return await self.place(round(self.sim.market.book(SYMBOL, 1).best_bid - 60, 1), GTC)

    async def place_filled_unheard(self) -> str:
        """A buy that takes the ask at once while the fill's pushes are dropped."""
        self.sim.faults.silence(30)
        # Through the ask by 10 USDT: the simulator's market may move before it arrives.
        return await self.place(round(self.sim.market.book(SYMBOL, 1).best_ask + 10, 1), GTC)


GTC = TimeInForce.GTC


def _acknowledged(executor: OrderExecutor, client_oid: str) -> bool:
    order = executor.order(client_oid)
    return order is not None and order.acknowledged


@pytest.fixture
async def rig(sim, tmp_path) -> AsyncIterator[Rig]:
    journal = Journal(JournalConfig(tmp_path / "journal.sqlite"))
    journal.start()
    config = sim.config
    venue = RestVenue(
        "sim",
        BitgetRestConfig(base_url=sim.rest_url, retry_initial_s=0.01),
        Credentials(config.api_key, config.api_secret, config.passphrase),
        (BTCUSDT, ETHUSDT),
        private_ws_url=sim.private_ws_url,
    )
    gateway = RiskGateway(dataclasses.replace(default_risk_config(), max_mark_age_ms=60_000))
    events = EventLog(10_000)
    executor = OrderExecutor(
        # No periodic check during a test (every check here is asked for).
        OrderExecutorConfig(
            unknown_order_grace_ms=50,
            position_settle_ms=150,
            drift_check_interval_s=600.0,
            poll_interval_ms=600_000,
        ),
        gateway,
        venue,
        journal,
        events,
        session="lost01",
    )
    await executor.start()
    await eventually(lambda: venue.stream_state is PrivateStreamState.LIVE, 5)
    yield Rig(sim, executor, venue, gateway, journal, events)
    sim.faults.clear()
    await executor.stop()
    journal.stop()


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


async def test_a_clock_skew_behind_a_40008_is_explained_and_journaled(rig):
    rig.sim.faults.clock_skew(-45)
    await rig.executor.check_with_venue("test")  # refused 40008, re-measured, answered
    await eventually(lambda: bool(rig.logged(TradingFault)), 2)
    (fault,) = rig.logged(TradingFault)
    assert fault.reason.startswith("clock skew: the exchange clock is 45.0 s behind ours")
    assert "30 s signing window" in fault.reason and "40008" in fault.reason
    assert "now stamped with exchange time" in fault.reason
    stats = rig.executor.stats()
    assert stats.clock_note == fault.reason and abs(stats.clock_offset_ms + 45_000) < 2_000
    assert rig.venue.stats()["clock_resyncs"] >= 1
    (entry,) = [e for e in rig.entries(EntryKind.FAULT) if "clock_offset_ms" in e]
    assert abs(int(entry["clock_offset_ms"]) + 45_000) < 2_000
    assert entry["signing_window_ms"] == 30_000

    rig.sim.faults.clock_skew(0)
    await rig.executor.check_with_venue("test")
    await eventually(lambda: len(rig.logged(TradingFault)) == 2, 2)
    back = rig.logged(TradingFault)[1].reason
    assert back.startswith("clock resynced") and "within Bitget's 30 s signing window" in back
