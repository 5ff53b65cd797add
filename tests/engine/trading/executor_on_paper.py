"""An OrderExecutor on the paper venue, for the executor's tests: the rig, and orders to send
through it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass

from market_frames import MarketScript

from engine.bitget.orders import OrderType, TimeInForce
from engine.journal import EntryKind, Journal, JournalConfig, read_journal
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.pipeline import EventLog
from engine.risk.gateway import RiskGateway
from engine.risk.intents import OrderIntent, Source
from engine.trading.config import OrderExecutorConfig, PaperVenueConfig, default_risk_config
from engine.trading.executor import OrderExecutor
from engine.trading.paper_venue import PaperVenue
from engine.trading.tracked_order import OrderRole
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

    async def place(self, intent: OrderIntent, departing=None) -> PlaceAck:
        approvals = read_journal(self.journal_path, kinds=[EntryKind.ORDER_APPROVED])
        self.journaled_before_send[intent.client_oid] = any(
            entry.payload["client_oid"] == intent.client_oid for entry in approvals
        )
        return await super().place(intent, departing)


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


async def make_rig(tmp_path, *, max_bytes=None, paper: PaperVenueConfig | None = None) -> Rig:
    """`paper`: the venue's latency (default: 1 ms round trip, no jitter)."""
    journal = Journal(JournalConfig(tmp_path / "journal.sqlite", max_bytes=max_bytes))
    journal.start()
    venue = JournalCheckingVenue(
        journal.config.path,
        paper or PaperVenueConfig(round_trip_ms=1.0, reaction_us=0.0),
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


@contextlib.asynccontextmanager
async def started_rig(tmp_path, paper: PaperVenueConfig | None = None) -> AsyncIterator[Rig]:
    """A rig started, with books on both symbols; stopped on the way out."""
    rig = await make_rig(tmp_path, paper=paper)
    await rig.executor.start()
    rig.book()
    rig.book("ETHUSDT", ETH_BIDS, ETH_ASKS)
    try:
        yield rig
    finally:
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
