"""PaperVenue: real market data, in-process matching, the private stream's events.

The pipeline's books and trades drive one simulator `MatchingEngine` per symbol (queue
position behind the displayed size, partial fills, maker and taker fees) and a `SimAccount`;
our orders never touch the real exchange. What happens is reported as `OrderUpdate`,
`FillUpdate` and `PositionsUpdate`, exactly the events a private websocket delivers. All of it
waits on the engine's loop, so on a recording it runs in market time.

Latency. The matching engine sees the market as we received it, a feed's delay after the
exchange had it. A request that reaches the exchange half a round trip after we send it meets
the book we would receive a feed's delay later again (`feed_latency_ms`, else the same half
trip): it reaches the matching engine our reaction plus a whole round trip after it was
made (`PaperVenueConfig`), and what the exchange then says reaches us at once in that frame (its
answer and pushes travel back as the market data does). So a cancel can lose its race against a
fill as it would live, and an order meets the book it would really meet, not one half a trip
older (hftbacktest's local and exchange timestamps, in one frame; docs/backtesting.md).
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Callable, Iterable

from engine.bitget.orders import OrderSide, OrderType
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PositionEntry,
    PositionsUpdate,
    PrivateEvent,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.clock import WallClock
from engine.feed.events import BookSnapshot
from engine.feed.tape import Trades
from engine.market.instruments import Instrument
from engine.market.matching import (
    FIRST_FILL_ID,
    FIRST_ORDER_ID,
    Fill,
    IdSequence,
    Liquidity,
    MatchingEngine,
    MatchingEngineConfig,
    Order,
    OrderRejected,
    OrderRequest,
    SimAccount,
    SimAccountConfig,
)
from engine.risk.intents import OrderIntent
from engine.trading.config import PaperVenueConfig
from engine.trading.venue import (
    CancelAllTicket,
    PlaceAck,
    PlacementWithdrawn,
    PrivateSink,
    VenueOrder,
    VenueOrderRecord,
    VenueRejected,
    VenueSnapshot,
    VenueUnavailable,
)


class PaperVenue:
    """The paper venue; feed it the market with `on_book` and `on_trades` (hot path)."""

    name = "paper"

    def __init__(
        self,
        config: PaperVenueConfig,
        instruments: Iterable[Instrument],
        clock: Callable[[], int] = WallClock.time_ns,
    ) -> None:
        self.config = config
        self.account = SimAccount(
            SimAccountConfig(initial_balance=config.initial_balance, leverage=config.leverage)
        )
        # One id sequence for every symbol: order and trade ids are unique account-wide.
        order_ids, fill_ids = IdSequence(FIRST_ORDER_ID), IdSequence(FIRST_FILL_ID)
        self.engines = {
            instrument.symbol: MatchingEngine(
                MatchingEngineConfig(instrument, *config.fee_rates(instrument)),
                self.account,
                order_ids,
                fill_ids,
            )
            for instrument in instruments
        }
        self._reaction_s = config.reaction_us / 1e6
        self._leg_s = config.round_trip_ms / 2000.0
        feed_ms = config.feed_latency_ms
        self._feed_s = feed_ms / 1000.0 if feed_ms is not None else None
        self._rng = random.Random(config.latency_seed)
        self._clock = clock
        self._sink: PrivateSink | None = None
        self._state = PrivateStreamState.STOPPED
        self._pending: set[asyncio.TimerHandle] = set()
        self._requests: Counter[str] = Counter()
        self._fills = 0

    # Lifecycle

    async def start(self, sink: PrivateSink) -> None:
        self._sink = sink
        self._set_state(PrivateStreamState.LIVE, "paper venue started")

    async def stop(self) -> None:
        for handle in self._pending:
            handle.cancel()
        self._pending.clear()
        self._set_state(PrivateStreamState.STOPPED, "paper venue stopped")
        self._sink = None

    @property
    def stream_state(self) -> PrivateStreamState:
        return self._state

    @property
    def clock_offset_ms(self) -> int:
        return 0

    # Market data

    def on_book(self, snapshot: BookSnapshot) -> None:
        self.on_levels(snapshot.symbol, snapshot.levels.tolist(), snapshot.n_bids, snapshot.n_asks)

    def on_levels(self, symbol: str, levels: list[list[float]], n_bids: int, n_asks: int) -> None:
        """`on_book` from the book's levels as lists (bid prices, bid sizes, ask prices, ask
        sizes, the first `n_bids` and `n_asks` filled), which the venue keeps."""
        engine = self.engines.get(symbol)
        if engine is None or not n_bids or not n_asks:
            return
        bid_prices, bid_sizes, ask_prices, ask_sizes = levels
        if n_bids < len(bid_prices):
            bid_prices, bid_sizes = bid_prices[:n_bids], bid_sizes[:n_bids]
        if n_asks < len(ask_prices):
            ask_prices, ask_sizes = ask_prices[:n_asks], ask_sizes[:n_asks]
        fills = engine.on_book(bid_prices, bid_sizes, ask_prices, ask_sizes, self._now_ms())
        self.account.mark(symbol, 0.5 * (bid_prices[0] + ask_prices[0]))
        if fills:
            self._report_fills(engine, fills)

    def on_trades(self, trades: Trades) -> None:
        engine = self.engines.get(trades.symbol)
        if engine is None or not engine.has_resting:  # a trade reaches only orders that rest
            return
        fills: list[Fill] = []
        now_ms = self._now_ms()
        for price, size, aggressor in trades.tape.read_prices(
            trades.symbol_row, trades.first, trades.count
        ):
            side = OrderSide.BUY if aggressor > 0 else OrderSide.SELL
            fills.extend(engine.on_trade(price, size, side, now_ms))
        if fills:
            self._report_fills(engine, fills)

    # Requests

    async def place(
        self, intent: OrderIntent, departing: Callable[[], bool] | None = None
    ) -> PlaceAck:
        engine = self._engine(intent.symbol)
        if departing is not None and not departing():  # no request limit to wait for here
            raise PlacementWithdrawn(f"{intent.client_oid} withdrawn before it was sent")
        self._requests["place"] += 1
        await asyncio.sleep(self._to_venue_s())
        request = OrderRequest(
            intent.side,
            intent.order_type,
            intent.size,
            intent.price,
            intent.force,
            intent.reduce_only,
            intent.client_oid,
        )
        order = self._submit(engine, request)
        return PlaceAck(intent.client_oid, order.order_id, False)

    async def cancel(self, symbol: str, client_oid: str) -> None:
        engine = self._engine(symbol)
        self._requests["cancel"] += 1
        await asyncio.sleep(self._to_venue_s())
        try:
            order = engine.cancel(self._now_ms(), client_oid=client_oid)
        except OrderRejected as rejection:
            raise VenueRejected(rejection.code, rejection.message) from None
        self._emit(_order_update(order, self._clock()))

    def cancel_all_now(self) -> CancelAllTicket:
        self._requests["cancel_all"] += 1
        loop = asyncio.get_running_loop()
        ticket = CancelAllTicket(loop.create_future(), "paper")
        ticket.sent_ns = self._clock()
        self._later(self._cancel_all_arrives, ticket)
        return ticket

    def _cancel_all_arrives(self, ticket: CancelAllTicket) -> None:
        if ticket.result.done():
            return
        now_ms = self._now_ms()
        cancelled = [
            order for engine in self.engines.values() for order in engine.cancel_all(now_ms)
        ]
        recv_ns = self._clock()
        for order in cancelled:
            self._emit(_order_update(order, recv_ns))
        ticket.result.set_result(tuple(order.client_oid for order in cancelled))

    def _later(self, callback: Callable[[CancelAllTicket], None], ticket: CancelAllTicket) -> None:
        """Run `callback` when the request reaches the matching engine."""

        def arrive() -> None:
            self._pending.discard(handle)
            callback(ticket)

        handle = asyncio.get_running_loop().call_later(self._to_venue_s(), arrive)
        self._pending.add(handle)

    # Latency

    def _leg(self) -> float:
        """One trip across the network, seconds: half the round trip, drawn around that mean
        (mean-preserving lognormal) when there is jitter."""
        sigma = self.config.latency_jitter
        if not sigma:
            return self._leg_s
        return self._leg_s * math.exp(self._rng.gauss(0.0, sigma) - 0.5 * sigma * sigma)

    def _to_venue_s(self) -> float:
        """From the decision to the request reaching the matching engine: our reaction, the
        trip there, and the feed's delay back to the market we match on."""
        feed_s = self._feed_s
        return self._reaction_s + self._leg() + (self._leg() if feed_s is None else feed_s)

    async def close_positions(self, symbol: str | None = None) -> None:
        self._requests["close_positions"] += 1
        await asyncio.sleep(self._to_venue_s())
        targets = [self._engine(symbol)] if symbol is not None else list(self.engines.values())
        for engine in targets:
            size = self.account.position(engine.symbol).size
            if not size:
                continue
            request = OrderRequest(
                OrderSide.SELL if size > 0 else OrderSide.BUY,
                OrderType.MARKET,
                abs(size),
                reduce_only=True,
                flash_close=True,
            )
            self._submit(engine, request)

    async def snapshot(self) -> VenueSnapshot:
        if self._sink is None:
            raise VenueUnavailable("paper venue is not started")
        self._requests["snapshot"] += 1
        await asyncio.sleep(self._to_venue_s())
        orders = tuple(
            _venue_order(order)
            for engine in self.engines.values()
            for order in engine.open_orders()
        )
        position_ms = {p.symbol: p.updated_ms for p in self.account.positions()}
        return VenueSnapshot(orders, self._positions(), self._now_ms(), position_ms)

    async def order_record(
        self, symbol: str, client_oid: str, order_id: str | None
    ) -> VenueOrderRecord | None:
        engine = self._engine(symbol)
        self._requests["order_record"] += 1
        await asyncio.sleep(self._to_venue_s())
        order = engine.order(order_id) if order_id else engine.order_by_client_oid(client_oid)
        if order is None:
            return None
        recv_ns = self._clock()
        return VenueOrderRecord(
            order.symbol,
            order.order_id,
            order.client_oid,
            order.status,
            order.filled_size,
            order.cancel_reason,
            tuple(_fill_update(fill, recv_ns) for fill in engine.order_fills(order.order_id)),
        )

    def stats(self) -> dict[str, object]:
        return {
            "requests": dict(self._requests),
            "fills": self._fills,
            "balance": self.account.balance,
            "equity": self.account.equity,
        }

    # Internals

    def _engine(self, symbol: str) -> MatchingEngine:
        if self._sink is None:
            raise VenueUnavailable("paper venue is not started")
        engine = self.engines.get(symbol)
        if engine is None:
            raise VenueRejected("40034", f"Parameter {symbol} does not exist")
        return engine

    def _submit(self, engine: MatchingEngine, request: OrderRequest) -> Order:
        """Match `request` now and push its order update and fills, as the exchange would."""
        try:
            result = engine.submit(request, self._now_ms())
        except OrderRejected as rejection:
            raise VenueRejected(rejection.code, rejection.message) from None
        self._emit(_order_update(result.order, self._clock()))
        if result.fills:
            self._report_fills(engine, result.fills)
        return result.order

    def _report_fills(self, engine: MatchingEngine, fills: list[Fill]) -> None:
        recv_ns = self._clock()
        self._fills += len(fills)
        reported: set[str] = set()
        for fill in fills:
            self._emit(_fill_update(fill, recv_ns))
            if fill.order_id not in reported:
                reported.add(fill.order_id)
                order = engine.order(fill.order_id)
                if order is not None:
                    self._emit(_order_update(order, recv_ns))
        self._emit(PositionsUpdate(self._positions(), self._now_ms(), recv_ns))

    def _positions(self) -> tuple[PositionEntry, ...]:
        return tuple(
            PositionEntry(
                position.symbol,
                position.size,
                position.entry_price,
                position.mark_price or None,
                position.unrealized_pnl,
            )
            for position in self.account.positions()
        )

    def _emit(self, event: PrivateEvent) -> None:
        """A private push: it reaches us at once in the frame we match in (see above)."""
        if self._sink is not None:
            self._sink(event)

    def _set_state(self, state: PrivateStreamState, reason: str) -> None:
        self._state = state
        if self._sink is not None:  # our own connection's state: known at once
            self._sink(PrivateStreamChanged(state, reason, self._clock()))

    def _now_ms(self) -> int:
        return self._clock() // 1_000_000


def _order_update(order: Order, recv_ns: int) -> OrderUpdate:
    return OrderUpdate(
        order.symbol,
        order.order_id,
        order.client_oid,
        order.side,
        order.price,
        order.size,
        order.filled_size,
        order.average_price if order.filled_size else None,
        order.status,
        order.reduce_only,
        order.updated_ms,
        recv_ns,
        order.cancel_reason,
    )


def _fill_update(fill: Fill, recv_ns: int) -> FillUpdate:
    return FillUpdate(
        fill.symbol,
        fill.order_id,
        fill.client_oid,
        fill.trade_id,
        fill.side,
        fill.price,
        fill.size,
        fill.fee,
        fill.liquidity is Liquidity.MAKER,
        fill.ts_ms,
        recv_ns,
    )


def _venue_order(order: Order) -> VenueOrder:
    return VenueOrder(
        order.symbol,
        order.order_id,
        order.client_oid,
        order.side,
        order.price,
        order.size,
        order.filled_size,
        order.reduce_only,
    )
