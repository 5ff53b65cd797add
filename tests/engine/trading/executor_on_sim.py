"""An OrderExecutor on the real simulator over REST and the private websocket, for the tests
of what happens when private pushes are lost (its `silence` fault drops them) or its clock
is skewed: the rig, and orders placed through it."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from support.waiting import eventually

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.private_events import PrivateStreamState
from engine.bitget.rest import BitgetRestConfig
from engine.journal import EntryKind, Journal, JournalConfig, read_journal
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.pipeline import EventLog
from engine.risk.gateway import RiskGateway
from engine.risk.intents import OrderIntent, Source
from engine.sim.server import SimExchange
from engine.trading.config import OrderExecutorConfig, default_risk_config
from engine.trading.executor import OrderExecutor
from engine.trading.rest_venue import RestVenue
from engine.trading.tracked_order import OrderRole

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


@contextlib.asynccontextmanager
async def started_rig(
    sim: SimExchange, tmp_path: Path, rate_window_margin_s: float = 0.1
) -> AsyncIterator[Rig]:
    """A rig on `sim`, its private stream live; stopped on the way out. A wide
    `rate_window_margin_s` keeps a request waiting for the rate limit as long as a test needs."""
    journal = Journal(JournalConfig(tmp_path / "journal.sqlite"))
    journal.start()
    config = sim.config
    venue = RestVenue(
        "sim",
        BitgetRestConfig(
            base_url=sim.rest_url,
            retry_initial_s=0.01,
            rate_window_margin_s=rate_window_margin_s,
        ),
        config.credentials(),
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
    try:
        await eventually(lambda: venue.stream_state is PrivateStreamState.LIVE, 5)
        yield Rig(sim, executor, venue, gateway, journal, events)
    finally:
        sim.faults.clear()
        await executor.stop()
        journal.stop()
