"""OrderExecutor: every order through the risk gateway, into the journal, out to the venue.

Order path. `submit` runs `RiskGateway.check` (which reserves the order); a denial is an
event in the gateway's outbox and nothing else happens. An approved order is journaled with
`append_durable` and only then sent: an order is never on the wire before it is on disk. Its
state then follows the venue: JOURNALING -> SENDING -> LIVE (-> PARTIALLY_FILLED) -> FILLED
or CANCELED, or REJECTED; UNKNOWN when the venue could not say whether it was placed (it is
then looked up by clientOid). An order that a cancel, pause, kill or flatten overtakes before
its request leaves (while journaling, or waiting for the venue's request limit) is withdrawn
unsent. Cancels on the reaction path are journaled with a plain append, which never waits, so
nothing delays the cancel.

Updates (acks, the private stream's orders, fills and positions) may arrive in any order and
more than once: acks count once, fills are applied once per trade id, an update for an order
already closed is ignored. Every ack, reject, fill, position change, cancel and state change is
journaled, and every one reaches the node's event log as its own event.

Positions come from fills. A fill stamped no later than the venue snapshot a position sync came
from is already in that position and moves nothing again.

Beside the lifecycle, in their own modules: reconciliation with the venue (lost pushes, the
position syncs; `reconciliation`), the kill and flatten sequence (`close_sequence`, which the
desk runs on the executor), the journal entries of the gateway's events (`risk_journal`) and
the venue clock's explainer (`clock_skew`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from engine.bitget.orders import OrderStatus
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PositionsUpdate,
    PrivateEvent,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.clock import Periodic, WallClock
from engine.journal import EntryKind, Journal, JournalBackpressure, JournalError, JournalFault
from engine.pipeline import EventLog
from engine.risk.events import RiskEvent, TradingState
from engine.risk.gateway import RiskGateway
from engine.risk.intents import CancelIntent, CancelScope, OrderIntent, RiskDecision, Source
from engine.risk.snapshot import RiskSnapshot
from engine.trading import reconciliation
from engine.trading.clock_skew import ClockWatch
from engine.trading.config import OrderExecutorConfig
from engine.trading.events import (
    OrderAcknowledged,
    OrderCancelled,
    OrderFilled,
    OrderMissingAtVenue,
    OrderRejectedByVenue,
    ReconciliationDone,
    TradingFault,
)
from engine.trading.risk_journal import risk_event_entry
from engine.trading.tracked_order import (
    IN_FLIGHT,
    ROLE_LETTER,
    OrderRole,
    OrderState,
    OrderView,
    TrackedOrder,
    order_view,
)
from engine.trading.venue import (
    VENUE_ERRORS,
    CancelAllTicket,
    PlacementWithdrawn,
    Venue,
    VenueOutcomeUnknown,
    VenueRejected,
    VenueUnavailable,
)

logger = logging.getLogger(__name__)

_SIZE_DECIMALS = 12
_NOT_OPEN_CODES = frozenset({"43001", "40768", "40109", "22001", "43004"})
"""Cancel answers meaning the order is not open (any more)."""


@dataclass(frozen=True, slots=True)
class ExecutorStats:
    submitted: int
    denied: int
    sent: int
    acknowledged: int
    rejected: int
    cancels_sent: int
    fills: int
    duplicate_fills: int
    foreign_updates: int
    position_syncs: int
    journal_refused: int
    reconciliations: int
    venue_errors: Mapping[str, int]
    fills_recovered: int = 0
    """Fills the private stream never delivered, recovered by looking their order up."""
    clock_offset_ms: int = 0
    """Exchange time minus ours, as the venue last measured it."""
    clock_note: str = ""
    """The last explanation of a clock change (beyond Bitget's 30 s window: why 40008)."""


class OrderExecutor:
    """Orders, fills and positions between the gateway and the venue; see the module docstring.

    `on_fill` (a fill was applied) and `on_risk_event` (an event drained from the gateway) let
    the trading desk react; both run on the engine loop.
    """

    def __init__(
        self,
        config: OrderExecutorConfig,
        gateway: RiskGateway,
        venue: Venue,
        journal: Journal,
        events: EventLog,
        *,
        session: str,
        clock: Callable[[], int] = WallClock.time_ns,
        on_fill: Callable[[FillUpdate], None] | None = None,
        on_risk_event: Callable[[RiskEvent], None] | None = None,
    ) -> None:
        self.config = config
        self.gateway = gateway
        self.venue = venue
        self.journal = journal
        self.events = events
        self.session = session
        self._clock = clock
        self._on_fill = on_fill
        self._on_risk_event = on_risk_event
        self._oid_prefix = f"{config.client_oid_prefix}{session}"
        self._counter = itertools.count(1)
        self._orders: dict[str, TrackedOrder] = {}
        self._closed: OrderedDict[str, TrackedOrder] = OrderedDict()
        self._seen_trades: OrderedDict[str, None] = OrderedDict()
        self._synced_ms: dict[str, int] = {}
        """Per symbol, the venue time up to which fills are in the synced position
        (reconciliation moves it)."""
        self._stream_positions: dict[str, float] | None = None
        self._last_fill_ns: dict[str, int] = {}
        """Per symbol, when a fill was last applied (reconciliation waits for quiet)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._placing: dict[str, asyncio.Task[Any]] = {}
        """Each placement not answered yet, journaled or not, by client oid (in `_tasks`)."""
        self._maintenance: Periodic | None = None
        self._check_task: asyncio.Task[None] | None = None
        self._next_check_ns = 0
        self._risk_view: RiskSnapshot | None = None
        self._stream_was_live = False
        self._running = False
        self._last_fault_ns = 0
        self._journal_fault_shown = False
        self._feed_outages: set[str] = set()
        self._check_reason: str | None = None
        self._clock_watch = ClockWatch()
        self._counts: Counter[str] = Counter()
        self._venue_errors: Counter[str] = Counter()

    # Lifecycle

    async def start(self, journal_orders: Iterable[Mapping[str, object]] = ()) -> None:
        """Connect the venue, reconcile with it (and with the journal's open orders from a
        previous run), then keep orders and positions in step until `stop`."""
        await self.venue.start(self.on_private_event)
        self._running = True
        explained = self._clock_watch.started(self.venue.clock_offset_ms)
        if explained is not None:
            self._report_clock(explained)
        await self.reconcile("start", journal_orders, cancel_open=self.config.cancel_on_start)
        self._next_check_ns = self._clock() + self.config.poll_interval_ms * 1_000_000
        self._maintenance = Periodic(self.config.maintenance_interval_ms / 1000.0, self._maintain)

    async def stop(self) -> None:
        if not self._running:
            await self.venue.stop()  # a start that failed half-way may have connected it
            return
        self._running = False
        if self._maintenance is not None:
            self._maintenance.cancel()
        if self.config.cancel_on_stop and self.has_open_orders():
            ticket = self.cancel_all_now(Source.OPERATOR, "engine stopping")
            with contextlib.suppress(*VENUE_ERRORS, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(ticket.result), 5.0)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.drain_risk_events()
        await self.venue.stop()

    # Orders

    def new_client_oid(self, role: OrderRole) -> str:
        return f"{self._oid_prefix}{ROLE_LETTER[role]}{next(self._counter):x}"

    def submit(self, intent: OrderIntent, role: OrderRole) -> RiskDecision:
        """Check, reserve, journal durably, then send (the last two in a task)."""
        now = self._clock()
        self._counts["submitted"] += 1
        decision = self.gateway.check(intent, now)
        if not decision.approved:
            self._counts["denied"] += 1
            self.drain_risk_events()  # the denial is an event: journaled and shown now
            return decision
        order = TrackedOrder(intent, role, now)
        self._orders[intent.client_oid] = order
        client_oid = intent.client_oid
        placing = self._spawn(self._send(order), f"place-{client_oid}")
        self._placing[client_oid] = placing
        placing.add_done_callback(lambda _: self._placing.pop(client_oid, None))
        return decision

    async def placements_answered(
        self, timeout_s: float | None = None, *, of: Collection[str] | None = None
    ) -> bool:
        """Whether every placement handed to the venue (SENDING) is answered or failed (`of`:
        these orders' placements, sent yet or not), waiting up to `timeout_s` (None: as long
        as it takes): the venue has each then, so a snapshot taken after it shows the order if
        it still rests. One still waiting for the venue's request limit when a kill's or
        flatten's cancel-all leaves is withdrawn unsent at once (`_may_leave`)."""
        if of is None:
            of = [oid for oid, order in self._orders.items() if order.state is OrderState.SENDING]
        waited = tuple(task for oid in of if (task := self._placing.get(oid)) is not None)
        if waited:
            await asyncio.wait(waited, timeout=timeout_s)
        return all(task.done() for task in waited)

    def cancel(self, client_oid: str, source: Source, reason: str) -> bool:
        """Ask the venue to cancel one order; False when it is not open here."""
        order = self._orders.get(client_oid)
        if order is None or order.cancel_requested:
            return False
        now = self._clock()
        order.cancel_requested = True
        order.reason = reason
        intent = order.intent
        self.gateway.check_cancel(
            CancelIntent(CancelScope.ORDER, source, intent.symbol, client_oid), now
        )
        if order.state in IN_FLIGHT:
            return True  # withdrawn before sending, or cancelled right after its ack
        self._journal_cancel("cancel", source, reason, now, client_oid=client_oid)
        self._spawn(self._cancel(order), f"cancel-{client_oid}")
        return True

    def cancel_all_now(self, source: Source, reason: str) -> CancelAllTicket:
        """Cancel every open order with one request that leaves before this returns (when the
        venue has a ready lane); journaled after the request, with a plain append."""
        now = self._clock()
        self.gateway.check_cancel(CancelIntent(CancelScope.ALL, source), now)
        ticket = self.venue.cancel_all_now()
        self._counts["cancels_sent"] += 1
        for order in self._orders.values():
            if not order.cancel_requested:
                order.cancel_requested = True
                order.reason = reason
        self._journal_cancel("cancel_all", source, reason, now, path=ticket.path)
        ticket.result.add_done_callback(self._on_cancel_all_done)
        return ticket

    def has_open_orders(self) -> bool:
        return bool(self._orders)

    def has_uncancelled_orders(self) -> bool:
        """Some open order has no cancel on its way yet."""
        return any(not order.cancel_requested for order in self._orders.values())

    def has_open_role(self, role: OrderRole) -> bool:
        return any(order.role is role for order in self._orders.values())

    def order(self, client_oid: str) -> TrackedOrder | None:
        return self._orders.get(client_oid)

    def open_orders(self) -> tuple[OrderView, ...]:
        return tuple(order_view(order) for order in self._orders.values())

    def recent_orders(self) -> tuple[OrderView, ...]:
        """The last `closed_orders_kept` finished orders, oldest first."""
        return tuple(order_view(order) for order in self._closed.values())

    @property
    def finished_kept(self) -> int:
        """How many finished orders `recent_orders` holds."""
        return len(self._closed)

    # Market inputs (hot path)

    def on_mark(
        self,
        symbol: str,
        best_bid: float,
        bid_size: float,
        best_ask: float,
        ask_size: float,
        now_ns: int,
    ) -> None:
        total = bid_size + ask_size
        mid = 0.5 * (best_bid + best_ask)
        microprice = (best_bid * ask_size + best_ask * bid_size) / total if total > 0 else mid
        gateway = self.gateway
        gateway.on_mark(symbol, mid, microprice, best_bid, best_ask, now_ns)
        if gateway.pending_events:  # a mark can halt (the daily loss): said at once
            self.drain_risk_events()

    def on_feed_health(self, symbol: str, healthy: bool, reason: str) -> None:
        self.gateway.on_feed_health(symbol, healthy, reason)
        if not healthy:
            self._feed_outages.add(symbol)
        elif symbol in self._feed_outages:
            self._feed_outages.discard(symbol)
            # Whatever silenced the feed may have swallowed private pushes too.
            self.check_soon(f"{symbol} feed back")

    def check_soon(self, reason: str) -> None:
        """Check orders and positions with the venue at the next maintenance tick."""
        self._check_reason = reason
        self._next_check_ns = 0

    # The risk view

    def risk_view(self) -> RiskSnapshot:
        """The gateway's snapshot, rebuilt only after something it shows has changed."""
        view = self._risk_view
        if view is None:
            view = self._risk_view = self.gateway.snapshot()
        return view

    def invalidate_risk_view(self) -> None:
        self._risk_view = None

    def drain_risk_events(self) -> tuple[RiskEvent, ...]:
        """Journal the gateway's events, put them in the event log, pass them to the desk."""
        events = self.gateway.drain_events()
        if not events:
            return events
        self._risk_view = None
        for event in events:
            self._journal_risk_event(event)
            self.events.append(event)
            if self._on_risk_event is not None:
                self._on_risk_event(event)
        return events

    # Private stream

    def on_private_event(self, event: PrivateEvent) -> None:
        """The venue's sink: never raises, whatever the venue sends."""
        try:
            if isinstance(event, FillUpdate):
                self._on_fill_update(event)
            elif isinstance(event, OrderUpdate):
                self._on_order_update(event)
            elif isinstance(event, PositionsUpdate):
                self._on_positions_update(event)
            elif isinstance(event, PrivateStreamChanged):
                self._on_stream_changed(event)
            else:
                self._counts["foreign_updates"] += 1
            if self.gateway.pending_events:  # fills and rejects move the gateway: say it now
                self.drain_risk_events()
        except Exception as error:  # a malformed update must not stop the stream
            logger.exception("private event %r could not be applied", event)
            self._fault(f"private event not applied: {type(error).__name__}: {error}")

    def _on_order_update(self, update: OrderUpdate) -> None:
        order = self._orders.get(update.client_oid)
        if order is None:
            if update.client_oid not in self._closed:  # a late update of a finished order is not
                self._counts["foreign_updates"] += 1
            return
        now = self._clock()
        if order.order_id is None:
            order.order_id = update.order_id
        status = update.status
        if status is OrderStatus.LIVE or status is OrderStatus.PARTIALLY_FILLED:
            self._acknowledge(order, update.order_id, now)
            if status is OrderStatus.PARTIALLY_FILLED and not order.state.terminal:
                order.state = OrderState.PARTIALLY_FILLED
        elif status is OrderStatus.FILLED:
            self._acknowledge(order, update.order_id, now)
            order.state = OrderState.FILLED
            if order.complete:
                self._finish(order, now)
        elif status is OrderStatus.CANCELED:
            reason = update.cancel_reason or order.reason or "cancelled"
            self._cancelled(order, reason, now)

    def _on_fill_update(self, fill: FillUpdate, source: str = "stream") -> None:
        seen = self._seen_trades
        if fill.trade_id in seen:
            self._counts["duplicate_fills"] += 1
            return
        seen[fill.trade_id] = None
        if len(seen) > self.config.seen_trades_kept:
            seen.popitem(last=False)
        now = self._clock()
        self._counts["fills"] += 1
        order = self._orders.get(fill.client_oid)
        included = fill.filled_ms <= self._synced_ms.get(fill.symbol, 0)
        if order is not None:
            order.filled = round(order.filled + fill.size, _SIZE_DECIMALS)
            order.updated_ns = now
            self._acknowledge(order, fill.order_id, now)
        if included:
            # Already in the position a venue snapshot brought: only the reservation goes.
            if order is not None and order.complete:
                self._release_at_gateway(order, now)
        else:
            self.gateway.on_fill(
                fill.client_oid, fill.symbol, fill.side, fill.size, fill.price, fill.fee, now
            )
            if order is not None and order.complete:
                order.gateway_open = False  # the gateway closes a fully filled order itself
        self._risk_view = None
        self._last_fill_ns[fill.symbol] = now
        self._journal(
            EntryKind.FILL,
            {
                "client_oid": fill.client_oid,
                "order_id": fill.order_id,
                "trade_id": fill.trade_id,
                "symbol": fill.symbol,
                "side": fill.side.value,
                "price": fill.price,
                "size": fill.size,
                "fee": fill.fee,
                "maker": fill.maker,
                "filled_ms": fill.filled_ms,
                "in_position_sync": included,
                "source": source,
                "session": self.session,
            },
            now,
        )
        self.events.append(
            OrderFilled(
                fill.client_oid,
                fill.symbol,
                fill.side,
                fill.price,
                fill.size,
                fill.fee,
                fill.maker,
                fill.trade_id,
                now,
            )
        )
        if order is not None and order.complete and order.state is not OrderState.CANCELED:
            order.state = OrderState.FILLED
            self._finish(order, now)
        if self._on_fill is not None:
            self._on_fill(fill)

    def _on_positions_update(self, update: PositionsUpdate) -> None:
        """Journal the venue's positions when they changed (the push repeats them all)."""
        positions = {entry.symbol: entry.size for entry in update.positions}
        if positions == self._stream_positions:
            return
        self._stream_positions = positions
        self._journal(
            EntryKind.POSITION,
            {
                "source": "stream",
                "positions": {
                    entry.symbol: {"size": entry.size, "entry_price": entry.entry_price}
                    for entry in update.positions
                },
                "updated_ms": update.updated_ms,
                "session": self.session,
            },
            self._clock(),
        )

    def _on_stream_changed(self, change: PrivateStreamChanged) -> None:
        now = self._clock()
        self.events.append(change)
        self._journal(
            EntryKind.STATE_CHANGE,
            {"private_stream": change.state.value, "reason": change.reason},
            now,
        )
        if change.state is PrivateStreamState.LIVE:
            if self._stream_was_live and self._running:
                self._spawn(self.reconcile("private stream reconnected"), "reconcile")
            self._stream_was_live = True

    # Reconciliation

    async def reconcile(
        self,
        reason: str,
        journal_orders: Iterable[Mapping[str, object]] = (),
        *,
        cancel_open: bool = False,
    ) -> ReconciliationDone | None:
        """Load the venue's open orders and positions; see `reconciliation.reconcile`."""
        return await reconciliation.reconcile(self, reason, journal_orders, cancel_open=cancel_open)

    async def check_with_venue(self, reason: str) -> None:
        """Look up orders that ended unheard, re-sync positions; see `reconciliation`."""
        await reconciliation.check_with_venue(self, reason)

    # Internals: placing and cancelling

    async def _send(self, order: TrackedOrder) -> None:
        intent = order.intent
        payload = {
            "client_oid": intent.client_oid,
            "symbol": intent.symbol,
            "side": intent.side.value,
            "size": intent.size,
            "price": intent.price,
            "type": intent.order_type.value,
            "force": intent.force.value,
            "reduce_only": intent.reduce_only,
            "source": intent.source.value,
            "purpose": intent.purpose,
            "role": order.role.value,
            "venue": self.venue.name,
            "session": self.session,
        }
        try:
            await self.journal.append_durable_async(
                EntryKind.ORDER_APPROVED, payload, order.created_ns
            )
        except JournalError as error:
            self._withdraw(order, f"not sent: the journal did not take it ({error})")
            if isinstance(error, JournalFault):
                self._journal_failed(error)
            return
        unwanted = self._unsent_reason(order)
        if unwanted is not None:
            self._withdraw(order, unwanted)
            return
        order.state = OrderState.SENDING
        self._counts["sent"] += 1
        try:
            ack = await self.venue.place(intent, partial(self._may_leave, order))
        except PlacementWithdrawn:
            self._withdraw(order, self._unsent_reason(order) or "not sent: withdrawn")
            return
        except VenueRejected as rejection:
            self._rejected(order, rejection.code, rejection.message)
            return
        except VenueUnavailable as error:
            self._rejected(order, "", f"not sent: {error}")
            return
        except VenueOutcomeUnknown as error:
            now = self._clock()
            self._venue_error("place", error)
            if not order.state.terminal:
                order.state = OrderState.UNKNOWN
                order.reason = str(error)
                order.updated_ns = now
            return
        finally:
            # A 40008 makes the REST client re-measure the venue's clock: say so at once.
            self._watch_clock()
        now = self._clock()
        self._acknowledge(order, ack.order_id, now)
        if order.cancel_requested and not order.state.terminal:
            self._spawn(self._cancel(order), f"cancel-{intent.client_oid}")

    def _unsent_reason(self, order: TrackedOrder) -> str | None:
        """Why an approved order must not leave now; None: it may."""
        if order.cancel_requested:
            return f"not sent: cancelled first ({order.reason})"
        # Approved before a pause, a kill or a flatten began: only what can close still goes
        # (and a kill or flatten waits for what has left, never for these).
        state = self.gateway.state
        if state is TradingState.PAUSED or (
            state in (TradingState.HALTED, TradingState.REDUCING) and not order.intent.reduce_only
        ):
            return f"not sent: trading is {state.name}"
        return None

    def _may_leave(self, order: TrackedOrder) -> bool:
        """The venue asks this before the order's request leaves (and while it waits for the
        venue's request limit, after a cancel-all)."""
        return self._unsent_reason(order) is None

    async def _cancel(self, order: TrackedOrder) -> None:
        intent = order.intent
        self._counts["cancels_sent"] += 1
        try:
            await self.venue.cancel(intent.symbol, intent.client_oid)
        except VenueRejected as rejection:
            if rejection.code not in _NOT_OPEN_CODES:
                self._venue_error("cancel", rejection)
            # Not open: it filled or was cancelled; its update settles it.
            return
        except (VenueOutcomeUnknown, VenueUnavailable) as error:
            self._venue_error("cancel", error)
            order.cancel_requested = False  # let the next decision try again
            return
        if self._orders.get(intent.client_oid) is order:
            self._cancelled(order, order.reason or "cancelled", self._clock())

    def _on_cancel_all_done(self, result: asyncio.Future[tuple[str, ...]]) -> None:
        if result.cancelled():
            return
        error = result.exception()
        if error is not None:
            self._venue_error("cancel_all", error)
            for order in self._orders.values():
                if order.state not in IN_FLIGHT:
                    order.cancel_requested = False
            return
        now = self._clock()
        for client_oid in result.result():
            cancelled = self._orders.get(client_oid)
            if cancelled is not None:
                self._cancelled(cancelled, cancelled.reason or "cancel all", now)

    # Internals: state changes

    def _acknowledge(self, order: TrackedOrder, order_id: str | None, now: int) -> None:
        if order_id and order.order_id is None:
            order.order_id = order_id
        if order.acknowledged:
            return
        order.acknowledged = True
        order.updated_ns = now
        self._counts["acknowledged"] += 1
        if order.gateway_open:
            self.gateway.on_order_acknowledged(order.intent.client_oid, now)
        if order.state in IN_FLIGHT or order.state is OrderState.UNKNOWN:
            order.state = OrderState.LIVE
        intent = order.intent
        self._journal(
            EntryKind.ORDER_ACK,
            {
                "event": "placed",
                "client_oid": intent.client_oid,
                "order_id": order.order_id,
                "symbol": intent.symbol,
                "side": intent.side.value,
                "price": intent.price,
                "size": intent.size,
                "role": order.role.value,
                "venue": self.venue.name,
                "session": self.session,
            },
            now,
        )
        self.events.append(
            OrderAcknowledged(
                intent.client_oid,
                order.order_id,
                intent.symbol,
                intent.side,
                intent.price,
                intent.size,
                order.role.value,
                now,
            )
        )

    def _cancelled(self, order: TrackedOrder, reason: str, now: int) -> None:
        if order.state.terminal and self._orders.get(order.intent.client_oid) is not order:
            return
        self._end(order, OrderState.CANCELED, reason, now)
        intent = order.intent
        self._journal(
            EntryKind.ORDER_ACK,
            {
                "event": "canceled",
                "client_oid": intent.client_oid,
                "order_id": order.order_id,
                "symbol": intent.symbol,
                "filled": order.filled,
                "reason": reason,
                "session": self.session,
            },
            now,
        )
        self.events.append(OrderCancelled(intent.client_oid, intent.symbol, reason, now))
        self._finish(order, now)

    def _rejected(self, order: TrackedOrder, code: str, reason: str) -> None:
        now = self._clock()
        self._counts["rejected"] += 1
        self._end(order, OrderState.REJECTED, reason, now)
        intent = order.intent
        self._journal(
            EntryKind.ORDER_REJECT,
            {
                "client_oid": intent.client_oid,
                "symbol": intent.symbol,
                "code": code,
                "reason": reason,
                "sent": bool(code),
                "session": self.session,
            },
            now,
        )
        self.events.append(
            OrderRejectedByVenue(intent.client_oid, intent.symbol, code, reason, now)
        )
        self._finish(order, now)

    def _withdraw(self, order: TrackedOrder, reason: str) -> None:
        self._rejected(order, "", reason)

    def _end(self, order: TrackedOrder, state: OrderState, reason: str, now: int) -> None:
        order.state = state
        order.reason = reason
        self._release_at_gateway(order, now)

    def _release_at_gateway(self, order: TrackedOrder, now: int) -> None:
        """The gateway stops reserving for the order (once: it may end several ways)."""
        if order.gateway_open:
            order.gateway_open = False
            self.gateway.on_order_closed(order.intent.client_oid, now)

    def _finish(self, order: TrackedOrder, now: int) -> None:
        client_oid = order.intent.client_oid
        if self._orders.pop(client_oid, None) is None:
            return
        order.updated_ns = now
        self._closed[client_oid] = order
        if len(self._closed) > self.config.closed_orders_kept:
            self._closed.popitem(last=False)
        self._risk_view = None

    def _report_missing(self, client_oid: str, symbol: str, detail: str, now: int) -> None:
        self.events.append(OrderMissingAtVenue(client_oid, symbol, detail, now))
        self._journal(
            EntryKind.ORDER_ACK,
            {
                "event": "missing_at_venue",
                "client_oid": client_oid,
                "symbol": symbol,
                "detail": detail,
                "session": self.session,
            },
            now,
        )

    # Internals: maintenance

    def _maintain(self) -> None:
        try:
            self.drain_risk_events()
            self._watch_clock()
            self._schedule_check()
        except Exception as error:  # keep the executor alive; say what broke
            logger.exception("executor maintenance failed")
            self._fault(f"maintenance failed: {type(error).__name__}: {error}")

    def _schedule_check(self) -> None:
        if self._check_task is not None and not self._check_task.done():
            return
        now = self._clock()
        if now < self._next_check_ns:
            return
        polling = self.venue.stream_state is not PrivateStreamState.LIVE
        interval_ns = (
            self.config.poll_interval_ms * 1_000_000
            if polling
            else int(self.config.drift_check_interval_s * 1e9)
        )
        unknown = any(order.state is OrderState.UNKNOWN for order in self._orders.values())
        if unknown:
            interval_ns = min(interval_ns, self.config.unknown_order_grace_ms * 1_000_000)
        self._next_check_ns = now + interval_ns
        reason = self._check_reason or ("polling" if polling else "periodic check")
        self._check_reason = None
        self._check_task = self._spawn(self.check_with_venue(reason), "venue-check")

    def _watch_clock(self) -> None:
        explained = self._clock_watch.moved(self.venue.clock_offset_ms)
        if explained is not None:
            self._report_clock(explained)

    def _report_clock(self, explained: Mapping[str, object]) -> None:
        now = self._clock()
        self._journal(EntryKind.FAULT, {**explained, "session": self.session}, now)
        self.events.append(TradingFault(str(explained["text"]), now))

    # Internals: journal and faults

    def _journal(self, kind: EntryKind, payload: Mapping[str, object], at_ns: int) -> None:
        try:
            self.journal.append(kind, payload, at_ns)
        except JournalFault as fault:
            self._journal_failed(fault)
        except JournalBackpressure:
            self._counts["journal_refused"] += 1
            self._fault("journal queue full: an entry was refused")

    def _journal_cancel(
        self, action: str, source: Source, reason: str, now: int, **details: object
    ) -> None:
        self._journal(
            EntryKind.ORDER_INTENT,
            {"action": action, "source": source.value, "reason": reason, **details},
            now,
        )

    def _journal_risk_event(self, event: RiskEvent) -> None:
        entry = risk_event_entry(event)
        if entry is not None:
            self._journal(*entry)

    def _journal_failed(self, fault: JournalFault) -> None:
        """Trading must not go on unjournaled: halt (the desk then cancels and flattens)."""
        now = self._clock()
        if self.gateway.state is not TradingState.HALTED:
            self.gateway.kill(now, f"journal fault: {fault}")
        if not self._journal_fault_shown:  # the fault is permanent: every later write says it
            self._journal_fault_shown = True
            self._fault(f"journal fault, trading halted: {fault}")

    def _fault(self, reason: str) -> None:
        now = self._clock()
        if now - self._last_fault_ns < 1_000_000_000 and "journal queue full" in reason:
            return  # one line a second is enough for a flood of refusals
        self._last_fault_ns = now
        self.events.append(TradingFault(reason, now))

    def _venue_error(self, what: str, error: BaseException) -> None:
        code = error.code if isinstance(error, VenueRejected) else type(error).__name__
        self._venue_errors[f"{what} {code}"] += 1
        self._fault(f"venue {what} failed: {error}")

    def _spawn(self, coroutine: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            logger.error("executor task %s failed", task.get_name(), exc_info=error)
            self._fault(f"{task.get_name()} failed: {type(error).__name__}: {error}")

    def stats(self) -> ExecutorStats:
        counts = self._counts
        return ExecutorStats(
            submitted=counts["submitted"],
            denied=counts["denied"],
            sent=counts["sent"],
            acknowledged=counts["acknowledged"],
            rejected=counts["rejected"],
            cancels_sent=counts["cancels_sent"],
            fills=counts["fills"],
            duplicate_fills=counts["duplicate_fills"],
            foreign_updates=counts["foreign_updates"],
            position_syncs=counts["position_syncs"],
            journal_refused=counts["journal_refused"],
            reconciliations=counts["reconciliations"],
            venue_errors=dict(self._venue_errors),
            fills_recovered=counts["fills_recovered"],
            clock_offset_ms=self._clock_watch.offset_ms,
            clock_note=self._clock_watch.note,
        )
