"""OrderExecutor: every order through the risk gateway, into the journal, out to the venue.

Order path. `submit` runs `RiskGateway.check` (which reserves the order); a denial is an
event in the gateway's outbox and nothing else happens. An approved order is journaled with
`append_durable` and only then sent: an order is never on the wire before it is on disk. Its
state then follows the venue: JOURNALING -> SENDING -> LIVE (-> PARTIALLY_FILLED) -> FILLED
or CANCELED, or REJECTED; UNKNOWN when the venue could not say whether it was placed (it is
then looked up by clientOid). Cancels on the reaction path are journaled with a plain append,
which never waits, so nothing delays the cancel.

Updates (acks, the private stream's orders, fills and positions) may arrive in any order and
more than once: acks count once, fills are applied once per trade id, an update for an order
already closed is ignored. Every ack, reject, fill, position change, cancel and state change is
journaled, and every one reaches the node's event log as its own event.

Private pushes can be lost (Bitget says so; the simulator's `silence` drops them). An order
the venue no longer lists is looked up by id or clientOid: the fills it made that never
reached us are applied and journaled (a push arriving later is a duplicate by trade id), then
its status is taken. That runs at start, after a private-stream reconnect, after a feed
outage, and in the periodic check.

Positions come from fills. The venue's view replaces them (`on_position_sync`) at start, after
every private-stream reconnect, and, while quoting, when a check finds them apart at two reads
`position_settle_ms` apart with neither the venue's nor ours moving in between (a fill on its
way would move one of them). A fill stamped no later than the venue snapshot a sync came from
is already in that position and moves nothing again.

A jump in the venue's clock offset (the REST client re-measures it after a 40008) is
explained as a fault event and journaled.

Kill and flatten cancel everything and close every position, again and again, until the
venue itself reports no open order and no position.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import itertools
import logging
import math
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine.bitget.endpoints import SIGNING_WINDOW_MS
from engine.bitget.orders import OrderSide
from engine.bitget.private_events import (
    FillUpdate,
    OrderStatus,
    OrderUpdate,
    PositionEntry,
    PositionsUpdate,
    PrivateEvent,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.journal import EntryKind, Journal, JournalBackpressure, JournalError, JournalFault
from engine.pipeline import EventLog
from engine.risk.events import (
    CommandRejected,
    DailyPnlReset,
    EventsDropped,
    OrderDenied,
    PositionReconciled,
    RiskEvent,
    RiskLimitChanged,
    TradingState,
    TradingStateChanged,
)
from engine.risk.gateway import RiskGateway
from engine.risk.intents import (
    CancelIntent,
    CancelScope,
    ClosePositionsIntent,
    OrderIntent,
    RiskDecision,
    Source,
)
from engine.risk.snapshot import RiskSnapshot
from engine.trading.config import OrderExecutorConfig
from engine.trading.events import (
    OrderAcknowledged,
    OrderCancelled,
    OrderFilled,
    OrderMissingAtVenue,
    OrderRejectedByVenue,
    ReconciliationDone,
    TradingFault,
    UnknownOrderAtVenue,
)
from engine.trading.venue import (
    CancelAllTicket,
    Venue,
    VenueOrder,
    VenueOutcomeUnknown,
    VenueRejected,
    VenueSnapshot,
    VenueUnavailable,
)
from engine.units import coin

logger = logging.getLogger(__name__)

_FILL_TOLERANCE = 1e-9
_SIZE_DECIMALS = 12
_NOT_OPEN_CODES = frozenset({"43001", "40768", "40109", "22001", "43004"})
"""Cancel answers meaning the order is not open (any more)."""
_VENUE_ERRORS = (VenueRejected, VenueOutcomeUnknown, VenueUnavailable)
_CLOCK_JUMP_MS = 1_000
"""A change of the venue's clock offset worth explaining (resyncs move it by a few ms)."""


class OrderRole(enum.StrEnum):
    BID = "bid"
    ASK = "ask"
    HEDGE = "hedge"
    CLOSE = "close"
    OPERATOR = "operator"


_ROLE_LETTER = {
    OrderRole.BID: "b",
    OrderRole.ASK: "a",
    OrderRole.HEDGE: "h",
    OrderRole.CLOSE: "c",
    OrderRole.OPERATOR: "o",
}


class OrderState(enum.StrEnum):
    JOURNALING = "journaling"
    SENDING = "sending"
    LIVE = "live"
    PARTIALLY_FILLED = "partially_filled"
    UNKNOWN = "unknown"
    FILLED = "filled"
    CANCELED = "canceled"
    REJECTED = "rejected"

    @property
    def terminal(self) -> bool:
        return self in (OrderState.FILLED, OrderState.CANCELED, OrderState.REJECTED)


_IN_FLIGHT = (OrderState.JOURNALING, OrderState.SENDING)


class TrackedOrder:
    """One order's life as the executor knows it."""

    __slots__ = (
        "acknowledged",
        "cancel_requested",
        "created_ns",
        "filled",
        "gateway_open",
        "intent",
        "order_id",
        "reason",
        "role",
        "state",
        "updated_ns",
    )

    def __init__(self, intent: OrderIntent, role: OrderRole, now_ns: int) -> None:
        self.intent = intent
        self.role = role
        self.state = OrderState.JOURNALING
        self.order_id: str | None = None
        self.filled = 0.0
        self.acknowledged = False
        self.cancel_requested = False
        self.gateway_open = True
        """The gateway still reserves it: released exactly once, by whichever comes first."""
        self.created_ns = now_ns
        self.updated_ns = now_ns
        self.reason = ""

    @property
    def remaining(self) -> float:
        return max(0.0, self.intent.size - self.filled)

    @property
    def complete(self) -> bool:
        return self.filled >= self.intent.size * (1.0 - _FILL_TOLERANCE)


class OrderView(NamedTuple):
    """A frozen copy of one tracked order for the UI."""

    client_oid: str
    order_id: str | None
    symbol: str
    side: OrderSide
    price: float | None
    size: float
    filled: float
    state: OrderState
    role: OrderRole
    source: Source
    reduce_only: bool
    created_ns: int
    reason: str


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


class SequenceOutcome(NamedTuple):
    """How a kill or flatten sequence ended."""

    ok: bool
    message: str
    elapsed_ms: float
    attempts: int


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
        clock: Callable[[], int] = time.time_ns,
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
        self._stream_positions: dict[str, float] | None = None
        self._last_fill_ns: dict[str, int] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._maintenance: asyncio.Task[None] | None = None
        self._check_task: asyncio.Task[None] | None = None
        self._next_check_ns = 0
        self._risk_view: RiskSnapshot | None = None
        self._stream_was_live = False
        self._running = False
        self._last_fault_ns = 0
        self._journal_fault_shown = False
        self._feed_outages: set[str] = set()
        self._check_reason: str | None = None
        self._clock_offset_ms = 0
        self._clock_note = ""
        self._counts: Counter[str] = Counter()
        self._venue_errors: Counter[str] = Counter()

    # Lifecycle

    async def start(self, journal_orders: Iterable[Mapping[str, object]] = ()) -> None:
        """Connect the venue, reconcile with it (and with the journal's open orders from a
        previous run), then keep orders and positions in step until `stop`."""
        await self.venue.start(self.on_private_event)
        self._running = True
        self._clock_offset_ms = self.venue.clock_offset_ms
        if abs(self._clock_offset_ms) > SIGNING_WINDOW_MS:
            self._explain_clock(self._clock_offset_ms, None)
        await self.reconcile("start", journal_orders, cancel_open=self.config.cancel_on_start)
        self._next_check_ns = self._clock() + self.config.poll_interval_ms * 1_000_000
        self._maintenance = asyncio.create_task(self._maintain(), name="executor-maintenance")

    async def stop(self) -> None:
        if not self._running:
            await self.venue.stop()  # a start that failed half-way may have connected it
            return
        self._running = False
        if self._maintenance is not None:
            self._maintenance.cancel()
            await asyncio.gather(self._maintenance, return_exceptions=True)
        if self.config.cancel_on_stop and self.has_open_orders():
            ticket = self.cancel_all_now(Source.OPERATOR, "engine stopping")
            with contextlib.suppress(*_VENUE_ERRORS, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(ticket.result), 5.0)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self.drain_risk_events()
        await self.venue.stop()

    # Orders

    def new_client_oid(self, role: OrderRole) -> str:
        return f"{self._oid_prefix}{_ROLE_LETTER[role]}{next(self._counter):x}"

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
        self._spawn(self._send(order), f"place-{intent.client_oid}")
        return decision

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
        if order.state in _IN_FLIGHT:
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
        return tuple(_view(order) for order in self._orders.values())

    def recent_orders(self) -> tuple[OrderView, ...]:
        """The last `closed_orders_kept` finished orders, oldest first."""
        return tuple(_view(order) for order in self._closed.values())

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
            if order is not None and order.complete and order.gateway_open:
                order.gateway_open = False
                self.gateway.on_order_cancelled(order.intent.client_oid, now)
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
        """Load the venue's open orders and positions into the executor and the gateway.

        Orders we track that the venue no longer has are released (they ended unheard);
        orders the venue has that we do not track are reported and, when they are ours or
        `cancel_open` is set, cancelled. `journal_orders` are the orders a previous run's
        journal shows acknowledged and not finished: each one the venue does not have is
        reported, each one it has is adopted. Positions are synced from the venue.
        """
        try:
            snapshot = await self.venue.snapshot()
        except _VENUE_ERRORS as error:
            self._venue_error("snapshot", error)
            self._fault(f"reconciliation ({reason}) failed: {error}")
            return None
        now = self._clock()
        self._counts["reconciliations"] += 1
        venue_orders = {order.client_oid: order for order in snapshot.orders}
        # Positions first: a fill the lookups below recover that the snapshot already holds
        # is then recognised as included and not counted twice.
        synced = self._sync_positions(snapshot, now, reason)
        missing = unknown = 0
        for order in list(self._orders.values()):
            if order.state in _IN_FLIGHT:
                continue  # may still land; the next check sees it
            venue_order = venue_orders.get(order.intent.client_oid)
            if venue_order is not None:
                self._acknowledge(order, venue_order.order_id, now)
                if venue_order.filled_size > order.filled + _FILL_TOLERANCE * order.intent.size:
                    await self._recover(order, reason)
                continue
            missing += 1
            await self._recover(order, reason)
        now = self._clock()
        journal_open = {str(entry.get("client_oid")): entry for entry in journal_orders}
        for client_oid, entry in journal_open.items():
            if client_oid in venue_orders or client_oid in self._orders:
                continue
            missing += 1
            if entry.get("acknowledged"):
                detail = "acknowledged in the journal, not open at the venue: filled or cancelled"
            else:
                detail = (
                    "approved in the journal, never acknowledged, not open at the venue: "
                    "not placed, or filled or cancelled at once"
                )
            self._report_missing(client_oid, str(entry.get("symbol", "")), detail, now)
        stale: list[VenueOrder] = []
        for client_oid, venue_order in venue_orders.items():
            if client_oid in self._orders:
                continue
            unknown += 1
            known = "from the journal" if client_oid in journal_open else "not in the journal"
            detail = f"open at the venue, {known} ({reason})"
            self.events.append(
                UnknownOrderAtVenue(
                    client_oid, venue_order.order_id, venue_order.symbol, detail, now
                )
            )
            self._journal(
                EntryKind.ORDER_ACK,
                {
                    "event": "unknown_at_venue",
                    "client_oid": client_oid,
                    "order_id": venue_order.order_id,
                    "symbol": venue_order.symbol,
                    "side": venue_order.side.value,
                    "price": venue_order.price,
                    "size": venue_order.size,
                    "filled": venue_order.filled_size,
                    "in_journal": client_oid in journal_open,
                    "reason": reason,
                    "session": self.session,
                },
                now,
            )
            stale.append(venue_order)
        done = ReconciliationDone(reason, len(venue_orders), missing, unknown, synced, now)
        self.events.append(done)
        self._journal(
            EntryKind.POSITION,
            {
                "event": "reconciled",
                "reason": reason,
                "venue_orders": len(venue_orders),
                "missing": missing,
                "unknown": unknown,
                "positions": {entry.symbol: entry.size for entry in snapshot.positions},
                "session": self.session,
            },
            now,
        )
        if stale and (cancel_open or any(self._is_ours(o.client_oid) for o in stale)):
            if cancel_open:
                ticket = self.cancel_all_now(Source.RISK, f"stale orders at {reason}")
                with contextlib.suppress(*_VENUE_ERRORS):
                    cancelled = await ticket.result
                    stale_ids = {venue_order.client_oid: venue_order for venue_order in stale}
                    for client_oid in cancelled:
                        venue_order = stale_ids.get(client_oid)
                        if venue_order is not None:  # journaled, so no later run reports it
                            self._journal_stale_cancel(venue_order, reason)
            else:
                for venue_order in stale:
                    if self._is_ours(venue_order.client_oid):
                        with contextlib.suppress(*_VENUE_ERRORS):
                            await self.venue.cancel(venue_order.symbol, venue_order.client_oid)
        return done

    def _journal_stale_cancel(self, venue_order: VenueOrder, reason: str) -> None:
        self._journal(
            EntryKind.ORDER_ACK,
            {
                "event": "canceled",
                "client_oid": venue_order.client_oid,
                "order_id": venue_order.order_id,
                "symbol": venue_order.symbol,
                "filled": venue_order.filled_size,
                "reason": f"stale at {reason}",
                "session": self.session,
            },
            self._clock(),
        )

    def _is_ours(self, client_oid: str) -> bool:
        return client_oid.startswith(self.config.client_oid_prefix)

    def _sync_positions(self, snapshot: VenueSnapshot, now: int, reason: str) -> int:
        """Replace the gateway's positions with the venue's (every fill stamped up to the
        snapshot is in them); the count of symbols that changed."""
        venue_sizes = {entry.symbol: entry for entry in snapshot.positions}
        synced = 0
        for position in self.gateway.snapshot().positions:
            symbol = position.symbol
            entry = venue_sizes.get(symbol)
            self._synced_ms[symbol] = max(self._synced_ms.get(symbol, 0), snapshot.exchange_ms)
            if not _same_size(entry.size if entry is not None else 0.0, position.size):
                synced += 1
                self._sync_symbol(symbol, entry, position.size, now, reason)
        self._risk_view = None
        return synced

    def _sync_symbol(
        self, symbol: str, entry: PositionEntry | None, old_size: float, now: int, reason: str
    ) -> None:
        size = entry.size if entry is not None else 0.0
        entry_price = entry.entry_price if entry is not None else 0.0
        self._counts["position_syncs"] += 1
        self.gateway.on_position_sync(symbol, size, entry_price, now)
        self._journal(
            EntryKind.POSITION,
            {
                "event": "synced",
                "symbol": symbol,
                "old_size": old_size,
                "new_size": size,
                "entry_price": entry_price,
                "reason": reason,
                "session": self.session,
            },
            now,
        )

    async def check_with_venue(self, reason: str) -> None:
        """The periodic check, and the one after a feed outage: orders that ended unheard are
        looked up (their fills recovered), unknown outcomes resolved, positions re-synced."""
        sent_ns = self._clock()
        try:
            snapshot = await self.venue.snapshot()
        except _VENUE_ERRORS as error:
            self._venue_error("snapshot", error)
            return
        now = self._clock()
        venue_orders = {order.client_oid: order for order in snapshot.orders}
        grace_ns = self.config.unknown_order_grace_ms * 1_000_000
        polling = self.venue.stream_state is not PrivateStreamState.LIVE
        if polling:  # no stream to wait for: the venue's view is the truth (before the lookups)
            self._sync_positions(snapshot, now, reason)
        for order in list(self._orders.values()):
            if self._orders.get(order.intent.client_oid) is not order:
                continue  # settled while an earlier lookup was awaited
            venue_order = venue_orders.get(order.intent.client_oid)
            if venue_order is not None:
                if order.state is OrderState.UNKNOWN:
                    self._acknowledge(order, venue_order.order_id, now)
                if venue_order.filled_size > order.filled + _FILL_TOLERANCE * order.intent.size:
                    await self._recover(order, reason)  # partly filled unheard
                continue
            if order.state in _IN_FLIGHT or now - order.updated_ns < grace_ns:
                continue
            await self._recover(order, reason)
        if not polling:
            await self._confirm_drift(snapshot, sent_ns, reason)

    async def _recover(self, order: TrackedOrder, reason: str) -> None:
        """Settle an order from the venue's own record: the fills it made that never reached
        us are applied (once: by trade id) and journaled, then its status is taken."""
        intent = order.intent
        client_oid = intent.client_oid
        try:
            record = await self.venue.order_record(intent.symbol, client_oid, order.order_id)
        except _VENUE_ERRORS as error:
            self._venue_error("order lookup", error)
            return  # still open here; the next check asks again
        if self._orders.get(client_oid) is not order:
            return  # the stream settled it meanwhile
        now = self._clock()
        if record is None:
            detail = f"not open at the venue and unknown to it ({reason}): never placed"
            self._report_missing(client_oid, intent.symbol, detail, now)
            self._cancelled(order, detail, now)
            return
        recovered = 0
        for fill in record.fills:
            if fill.trade_id not in self._seen_trades:
                recovered += 1
                self._on_fill_update(fill, f"venue lookup ({reason})")
        self._counts["fills_recovered"] += recovered
        now = self._clock()
        status = record.status
        self._journal(
            EntryKind.ORDER_ACK,
            {
                "event": "looked_up",
                "client_oid": client_oid,
                "order_id": record.order_id,
                "symbol": intent.symbol,
                "status": status.value,
                "filled": record.filled_size,
                "fills_recovered": recovered,
                "reason": reason,
                "session": self.session,
            },
            now,
        )
        detail = f"{status.value} at the venue, unheard ({reason}): {recovered} fills recovered"
        if recovered or status.terminal:
            self.events.append(OrderMissingAtVenue(client_oid, intent.symbol, detail, now))
        if self._orders.get(client_oid) is not order:
            return  # its fills completed it
        if status is OrderStatus.CANCELED:
            cancel_reason = f"; {record.cancel_reason}" if record.cancel_reason else ""
            self._cancelled(order, f"{detail}{cancel_reason}", now)
        elif status is OrderStatus.FILLED:
            # Fewer fills than the venue counts (a history cut short): finish it, say so.
            order.state = OrderState.FILLED
            if order.gateway_open:
                order.gateway_open = False
                self.gateway.on_order_cancelled(client_oid, now)
            self._report_missing(
                client_oid,
                intent.symbol,
                f"filled at the venue ({coin(intent.symbol, record.filled_size)}) but only "
                f"{coin(intent.symbol, order.filled)} of its fills were found",
                now,
            )
            self._finish(order, now)
        else:
            self._acknowledge(order, record.order_id, now)
            if status is OrderStatus.PARTIALLY_FILLED:
                order.state = OrderState.PARTIALLY_FILLED

    async def _confirm_drift(self, first: VenueSnapshot, sent_ns: int, reason: str) -> None:
        """Re-sync positions the venue reports differently while orders rest. A fill still
        on its way would explain a gap, so a symbol is synced only when the gap holds at two
        reads `position_settle_ms` apart with neither side's position moving in between."""
        apart = self._positions_apart(first)
        if not apart:
            return
        if any(self._last_fill_ns.get(symbol, 0) >= sent_ns for symbol in apart):
            # Fills were applied since that read (the lookups): compare with a fresh one.
            sent_ns = self._clock()
            try:
                first = await self.venue.snapshot()
            except _VENUE_ERRORS as error:
                self._venue_error("snapshot", error)
                return
            apart = self._positions_apart(first)
            if not apart:
                return
        await asyncio.sleep(self.config.position_settle_ms / 1000.0)
        try:
            second = await self.venue.snapshot()
        except _VENUE_ERRORS as error:
            self._venue_error("snapshot", error)
            return
        now = self._clock()
        engine = {p.symbol: p.size for p in self.gateway.snapshot().positions}
        venue_second = {entry.symbol: entry for entry in second.positions}
        for symbol, venue_first in apart.items():
            if self._last_fill_ns.get(symbol, 0) >= sent_ns:
                continue  # a fill reached us meanwhile: not settled yet
            entry = venue_second.get(symbol)
            size = entry.size if entry is not None else 0.0
            if not _same_size(size, venue_first) or _same_size(size, engine.get(symbol, 0.0)):
                continue  # the venue's moved (fills in flight), or the two agree now
            # Every fill stamped up to the first read is in the second (nothing moved since).
            self._synced_ms[symbol] = max(self._synced_ms.get(symbol, 0), first.exchange_ms)
            self._sync_symbol(
                symbol,
                entry,
                engine.get(symbol, 0.0),
                now,
                f"{reason}: apart at two reads {self.config.position_settle_ms} ms apart",
            )
        self._risk_view = None

    def _positions_apart(self, snapshot: VenueSnapshot) -> dict[str, float]:
        """The symbols whose venue position differs from the gateway's, with the venue's."""
        venue = {entry.symbol: entry.size for entry in snapshot.positions}
        return {
            p.symbol: venue.get(p.symbol, 0.0)
            for p in self.gateway.snapshot().positions
            if not _same_size(venue.get(p.symbol, 0.0), p.size)
        }

    # Kill and flatten

    async def holds_nothing(self) -> bool:
        """No order tracked, no position in the gateway, and the venue reports neither (a
        venue that cannot answer holds something, as far as anyone knows)."""
        if self.has_open_orders() or any(p.size for p in self.gateway.snapshot().positions):
            return False
        try:
            snapshot = await self.venue.snapshot()
        except _VENUE_ERRORS:
            return False
        return not snapshot.orders and not any(p.size for p in snapshot.positions)

    async def run_close_sequence(
        self, source: Source, reason: str, timeout_s: float
    ) -> SequenceOutcome:
        """Cancel all and close all, repeated until the venue reports no open order and no
        position, or `timeout_s` has passed (on the engine clock: market time in a replay)."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout_s
        retry_s = self.config.kill_retry_interval_ms / 1000.0
        attempts = 0
        last_error = ""
        while True:
            attempts += 1
            ticket = self.cancel_all_now(source, reason)
            closing = asyncio.ensure_future(self._close_all(source, reason))
            for waited in (ticket.result, closing):
                try:
                    await waited
                except _VENUE_ERRORS as error:
                    last_error = str(error)
            try:
                snapshot = await self.venue.snapshot()
            except _VENUE_ERRORS as error:
                self._venue_error("snapshot", error)
                last_error = str(error)
                snapshot = None
            if snapshot is not None:
                open_positions = [p for p in snapshot.positions if p.size]
                if not snapshot.orders and not open_positions:
                    self._sync_positions(snapshot, self._clock(), reason)
                    elapsed = (loop.time() - started) * 1000
                    return SequenceOutcome(
                        True,
                        f"venue confirms no open orders and flat after {elapsed:.1f} ms "
                        f"({attempts} attempt{'s' if attempts > 1 else ''})",
                        elapsed,
                        attempts,
                    )
                last_error = f"{len(snapshot.orders)} orders open, positions " + (
                    ", ".join(coin(p.symbol, p.size, signed=True) for p in open_positions) or "flat"
                )
            if loop.time() >= deadline:
                elapsed = (loop.time() - started) * 1000
                return SequenceOutcome(
                    False,
                    f"not confirmed flat after {elapsed:,.0f} ms and {attempts} attempts; "
                    f"last: {last_error}",
                    elapsed,
                    attempts,
                )
            await asyncio.sleep(min(retry_s * 2 ** min(attempts - 1, 10), 0.5))

    async def _close_all(self, source: Source, reason: str) -> None:
        """Flash close (1 request a second at Bitget); inside that limit, the gateway's
        reduce-only market orders close instead."""
        if self.gateway.state is TradingState.PAUSED:
            # A flatten that found no position paused: PAUSED keeps positions, so a close
            # would only be denied.
            return
        now = self._clock()
        decision = self.gateway.check_close_positions(ClosePositionsIntent(source), now)
        if decision.approved:
            self._journal_cancel("close_positions", source, reason, now)
            await self.venue.close_positions()
            return
        for intent in self.gateway.closing_intents():
            self.submit(intent, OrderRole.CLOSE)
        placing = [task for task in self._tasks if task.get_name().startswith("place-")]
        if placing:
            await asyncio.gather(*placing, return_exceptions=True)

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
        state = self.gateway.state
        if order.cancel_requested:
            self._withdraw(order, f"not sent: cancelled first ({order.reason})")
            return
        if state is TradingState.PAUSED or (
            state is TradingState.HALTED and not intent.reduce_only
        ):
            self._withdraw(order, f"not sent: trading is {state.name}")
            return
        order.state = OrderState.SENDING
        self._counts["sent"] += 1
        try:
            ack = await self.venue.place(intent)
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
                if order.state not in _IN_FLIGHT:
                    order.cancel_requested = False
            return
        now = self._clock()
        for client_oid in result.result():
            order = self._orders.get(client_oid)
            if order is not None:
                self._cancelled(order, order.reason or "cancel all", now)

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
        if order.state in _IN_FLIGHT or order.state is OrderState.UNKNOWN:
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
        order.state = OrderState.CANCELED
        order.reason = reason
        if order.gateway_open:
            order.gateway_open = False
            self.gateway.on_order_cancelled(order.intent.client_oid, now)
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
        order.state = OrderState.REJECTED
        order.reason = reason
        if order.gateway_open:
            order.gateway_open = False
            self.gateway.on_order_rejected(order.intent.client_oid, now)
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

    async def _maintain(self) -> None:
        interval_s = self.config.maintenance_interval_ms / 1000.0
        while True:
            await asyncio.sleep(interval_s)
            try:
                self.drain_risk_events()
                self._watch_clock()
                self._schedule_check()
            except Exception as error:  # the loop keeps the executor alive; say what broke
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
        offset = self.venue.clock_offset_ms
        if abs(offset - self._clock_offset_ms) >= _CLOCK_JUMP_MS:
            previous, self._clock_offset_ms = self._clock_offset_ms, offset
            self._explain_clock(offset, previous)

    def _explain_clock(self, offset_ms: int, previous_ms: int | None) -> None:
        """The venue re-measured its clock against ours and found it moved (a 40008 makes the
        REST client do that): say how far apart the clocks are and what it means."""
        now = self._clock()
        apart = f"{abs(offset_ms) / 1000:.1f} s {'ahead of' if offset_ms > 0 else 'behind'} ours"
        was = "at start" if previous_ms is None else f"was {previous_ms / 1000:+.1f} s"
        window_s = SIGNING_WINDOW_MS // 1000
        if abs(offset_ms) > SIGNING_WINDOW_MS:
            text = (
                f"clock skew: the exchange clock is {apart} ({was}), beyond Bitget's "
                f"{window_s} s signing window: requests stamped with our clock are refused "
                "(40008). Resynced from the exchange's server time: requests are now stamped "
                "with exchange time. Fix the system clock (NTP)"
            )
        else:
            text = (
                f"clock resynced: the exchange clock is {apart} ({was}), within Bitget's "
                f"{window_s} s signing window"
            )
        self._clock_note = text
        self._journal(
            EntryKind.FAULT,
            {
                "clock_offset_ms": offset_ms,
                "previous_offset_ms": previous_ms,
                "signing_window_ms": SIGNING_WINDOW_MS,
                "text": text,
                "session": self.session,
            },
            now,
        )
        self.events.append(TradingFault(text, now))

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
        if isinstance(event, OrderDenied):
            payload: dict[str, object] = {
                "reason": event.reason.name,
                "text": event.text,
                "intent": _intent_payload(event.intent),
            }
            self._journal(EntryKind.ORDER_DENIED, payload, event.at_ns)
        elif isinstance(event, TradingStateChanged):
            payload = {
                "old": event.old.name,
                "new": event.new.name,
                "reason": event.reason,
                "source": event.source.value,
            }
            self._journal(EntryKind.STATE_CHANGE, payload, event.at_ns)
        elif isinstance(event, RiskLimitChanged):
            payload = {
                "limit": event.name,
                "old": event.old,
                "new": event.new,
                "source": event.source.value,
            }
            self._journal(EntryKind.STATE_CHANGE, payload, event.at_ns)
        elif isinstance(event, CommandRejected):
            # Kev's refusals are in the hub's entry for the decision (its gateway notes): a
            # decision is journaled once.
            if event.source is not Source.KEV:
                payload = {"command": event.command, "accepted": False, "text": event.text}
                self._journal(EntryKind.OPERATOR_COMMAND, payload, event.at_ns)
        elif isinstance(event, PositionReconciled):
            payload = {
                "event": "gateway_reconciled",
                "symbol": event.symbol,
                "old_size": event.old_size,
                "new_size": event.new_size,
            }
            self._journal(EntryKind.POSITION, payload, event.at_ns)
        elif isinstance(event, DailyPnlReset):
            payload = {"daily_pnl_reset": event.closed_day_pnl}
            self._journal(EntryKind.STATE_CHANGE, payload, event.at_ns)
        elif isinstance(event, EventsDropped):
            payload = {"risk_events_dropped": event.count}
            self._journal(EntryKind.FAULT, payload, event.last_at_ns)

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
            clock_offset_ms=self._clock_offset_ms,
            clock_note=self._clock_note,
        )


def _same_size(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _intent_payload(intent: object) -> dict[str, object]:
    if isinstance(intent, OrderIntent):
        return {
            "client_oid": intent.client_oid,
            "symbol": intent.symbol,
            "side": str(intent.side),
            "size": intent.size,
            "price": intent.price,
            "type": str(intent.order_type),
            "force": str(intent.force),
            "reduce_only": intent.reduce_only,
            "source": str(intent.source),
            "purpose": intent.purpose,
        }
    if isinstance(intent, CancelIntent):
        return {
            "cancel": str(intent.scope),
            "symbol": intent.symbol,
            "client_oid": intent.client_oid,
        }
    if isinstance(intent, ClosePositionsIntent):
        return {"close_positions": intent.symbol or "all", "source": str(intent.source)}
    return {"request": repr(intent)}


def _view(order: TrackedOrder) -> OrderView:
    intent = order.intent
    return OrderView(
        intent.client_oid,
        order.order_id,
        intent.symbol,
        intent.side,
        intent.price,
        intent.size,
        order.filled,
        order.state,
        order.role,
        intent.source,
        intent.reduce_only,
        order.created_ns,
        order.reason,
    )
