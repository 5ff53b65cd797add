"""Reconciliation: the executor's orders and positions set against the venue's own view.

At start, after a private-stream reconnect, after a feed outage and in the periodic check, an
order the venue no longer lists is looked up by id or clientOid: the fills it made that never
reached us are applied and journaled (a push arriving later is a duplicate by trade id), then
its status is taken. Positions are replaced by the venue's at start and after a reconnect,
and, while quoting, when they are apart at two reads `position_settle_ms` apart with neither
side moving in between (a fill on its way would move one of them).

These work on the executor's own books (its orders, fills seen, positions synced), through
`ExecutorBooks`: what of the executor they read and move, so that they need not import it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from engine.bitget.orders import OrderStatus
from engine.bitget.private_events import FillUpdate, PositionEntry, PrivateStreamState
from engine.journal import EntryKind
from engine.pipeline import EventLog
from engine.risk.gateway import RiskGateway
from engine.risk.intents import Source
from engine.trading.config import OrderExecutorConfig
from engine.trading.events import OrderMissingAtVenue, ReconciliationDone, UnknownOrderAtVenue
from engine.trading.tracked_order import FILL_TOLERANCE, IN_FLIGHT, OrderState, TrackedOrder
from engine.trading.venue import VENUE_ERRORS, CancelAllTicket, Venue, VenueOrder, VenueSnapshot
from engine.units import coin


class ExecutorBooks(Protocol):
    """What reconciliation reads and moves of the executor (`OrderExecutor` is the one)."""

    config: OrderExecutorConfig
    gateway: RiskGateway
    venue: Venue
    events: EventLog
    session: str
    _clock: Callable[[], int]
    _orders: dict[str, TrackedOrder]
    _seen_trades: OrderedDict[str, None]
    _synced_ms: dict[str, int]
    _last_fill_ns: dict[str, int]
    _counts: Counter[str]

    def invalidate_risk_view(self) -> None: ...
    def cancel_all_now(self, source: Source, reason: str) -> CancelAllTicket: ...
    def _acknowledge(self, order: TrackedOrder, order_id: str | None, now: int) -> None: ...
    def _cancelled(self, order: TrackedOrder, reason: str, now: int) -> None: ...
    def _finish(self, order: TrackedOrder, now: int) -> None: ...
    def _release_at_gateway(self, order: TrackedOrder, now: int) -> None: ...
    def _report_missing(self, client_oid: str, symbol: str, detail: str, now: int) -> None: ...
    def _journal(self, kind: EntryKind, payload: Mapping[str, object], at_ns: int) -> None: ...
    def _fault(self, reason: str) -> None: ...
    def _venue_error(self, what: str, error: BaseException) -> None: ...
    def _on_fill_update(self, fill: FillUpdate, source: str = "stream") -> None: ...


async def reconcile(
    executor: ExecutorBooks,
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
        snapshot = await executor.venue.snapshot()
    except VENUE_ERRORS as error:
        executor._venue_error("snapshot", error)
        executor._fault(f"reconciliation ({reason}) failed: {error}")
        return None
    now = executor._clock()
    executor._counts["reconciliations"] += 1
    venue_orders = {order.client_oid: order for order in snapshot.orders}
    # Positions first: a fill the lookups below recover that the snapshot already holds
    # is then recognised as included and not counted twice.
    synced = sync_positions(executor, snapshot, now, reason)
    missing = unknown = 0
    tracked = executor._orders
    for order in list(tracked.values()):
        if order.state in IN_FLIGHT:
            continue  # may still land; the next check sees it
        venue_order = venue_orders.get(order.intent.client_oid)
        if venue_order is not None:
            executor._acknowledge(order, venue_order.order_id, now)
            if venue_order.filled_size > order.filled + FILL_TOLERANCE * order.intent.size:
                await _recover(executor, order, reason)
            continue
        missing += 1
        await _recover(executor, order, reason)
    now = executor._clock()
    journal_open = {str(entry.get("client_oid")): entry for entry in journal_orders}
    for client_oid, entry in journal_open.items():
        if client_oid in venue_orders or client_oid in tracked:
            continue
        missing += 1
        if entry.get("acknowledged"):
            detail = "acknowledged in the journal, not open at the venue: filled or cancelled"
        else:
            detail = (
                "approved in the journal, never acknowledged, not open at the venue: "
                "not placed, or filled or cancelled at once"
            )
        executor._report_missing(client_oid, str(entry.get("symbol", "")), detail, now)
    stale: list[VenueOrder] = []
    for client_oid, venue_order in venue_orders.items():
        if client_oid in tracked:
            continue
        unknown += 1
        known = "from the journal" if client_oid in journal_open else "not in the journal"
        detail = f"open at the venue, {known} ({reason})"
        executor.events.append(
            UnknownOrderAtVenue(client_oid, venue_order.order_id, venue_order.symbol, detail, now)
        )
        executor._journal(
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
                "session": executor.session,
            },
            now,
        )
        stale.append(venue_order)
    done = ReconciliationDone(reason, len(venue_orders), missing, unknown, synced, now)
    executor.events.append(done)
    executor._journal(
        EntryKind.POSITION,
        {
            "event": "reconciled",
            "reason": reason,
            "venue_orders": len(venue_orders),
            "missing": missing,
            "unknown": unknown,
            "positions": {entry.symbol: entry.size for entry in snapshot.positions},
            "session": executor.session,
        },
        now,
    )
    if stale and (cancel_open or any(_is_ours(executor, o.client_oid) for o in stale)):
        if cancel_open:
            ticket = executor.cancel_all_now(Source.RISK, f"stale orders at {reason}")
            with contextlib.suppress(*VENUE_ERRORS):
                cancelled = await ticket.result
                stale_ids = {venue_order.client_oid: venue_order for venue_order in stale}
                for client_oid in cancelled:
                    venue_order = stale_ids.get(client_oid)
                    if venue_order is not None:  # journaled, so no later run reports it
                        _journal_stale_cancel(executor, venue_order, reason)
        else:
            for venue_order in stale:
                if _is_ours(executor, venue_order.client_oid):
                    with contextlib.suppress(*VENUE_ERRORS):
                        await executor.venue.cancel(venue_order.symbol, venue_order.client_oid)
    return done


def _journal_stale_cancel(executor: ExecutorBooks, venue_order: VenueOrder, reason: str) -> None:
    executor._journal(
        EntryKind.ORDER_ACK,
        {
            "event": "canceled",
            "client_oid": venue_order.client_oid,
            "order_id": venue_order.order_id,
            "symbol": venue_order.symbol,
            "filled": venue_order.filled_size,
            "reason": f"stale at {reason}",
            "session": executor.session,
        },
        executor._clock(),
    )


def _is_ours(executor: ExecutorBooks, client_oid: str) -> bool:
    return client_oid.startswith(executor.config.client_oid_prefix)


def sync_positions(executor: ExecutorBooks, snapshot: VenueSnapshot, now: int, reason: str) -> int:
    """Replace the gateway's positions with the venue's (a later fill the snapshot holds,
    `VenueSnapshot.fills_through`, is not counted again); the count of symbols that changed."""
    venue_sizes = {entry.symbol: entry for entry in snapshot.positions}
    synced_ms = executor._synced_ms
    synced = 0
    for position in executor.gateway.snapshot().positions:
        symbol = position.symbol
        entry = venue_sizes.get(symbol)
        synced_ms[symbol] = max(synced_ms.get(symbol, 0), snapshot.fills_through(symbol))
        if not _same_size(entry.size if entry is not None else 0.0, position.size):
            synced += 1
            _sync_symbol(executor, symbol, entry, position.size, now, reason)
    executor.invalidate_risk_view()
    return synced


def _sync_symbol(
    executor: ExecutorBooks,
    symbol: str,
    entry: PositionEntry | None,
    old_size: float,
    now: int,
    reason: str,
) -> None:
    size = entry.size if entry is not None else 0.0
    entry_price = entry.entry_price if entry is not None else 0.0
    executor._counts["position_syncs"] += 1
    executor.gateway.on_position_sync(symbol, size, entry_price, now)
    executor._journal(
        EntryKind.POSITION,
        {
            "event": "synced",
            "symbol": symbol,
            "old_size": old_size,
            "new_size": size,
            "entry_price": entry_price,
            "reason": reason,
            "session": executor.session,
        },
        now,
    )


async def check_with_venue(executor: ExecutorBooks, reason: str) -> None:
    """The periodic check, and the one after a feed outage: orders that ended unheard are
    looked up (their fills recovered), unknown outcomes resolved, positions re-synced."""
    sent_ns = executor._clock()
    snapshot = await _read_snapshot(executor)
    if snapshot is None:
        return
    now = executor._clock()
    venue_orders = {order.client_oid: order for order in snapshot.orders}
    grace_ns = executor.config.unknown_order_grace_ms * 1_000_000
    polling = executor.venue.stream_state is not PrivateStreamState.LIVE
    if polling:  # no stream to wait for: the venue's view is the truth (before the lookups)
        sync_positions(executor, snapshot, now, reason)
    tracked = executor._orders
    for order in list(tracked.values()):
        if tracked.get(order.intent.client_oid) is not order:
            continue  # settled while an earlier lookup was awaited
        venue_order = venue_orders.get(order.intent.client_oid)
        if venue_order is not None:
            if order.state is OrderState.UNKNOWN:
                executor._acknowledge(order, venue_order.order_id, now)
            if venue_order.filled_size > order.filled + FILL_TOLERANCE * order.intent.size:
                await _recover(executor, order, reason)  # partly filled unheard
            continue
        if order.state in IN_FLIGHT or now - order.updated_ns < grace_ns:
            continue
        await _recover(executor, order, reason)
    if not polling:
        await _confirm_drift(executor, snapshot, sent_ns, reason)


async def _read_snapshot(executor: ExecutorBooks) -> VenueSnapshot | None:
    """The venue's snapshot, or None with the failure counted (the next check asks again)."""
    try:
        return await executor.venue.snapshot()
    except VENUE_ERRORS as error:
        executor._venue_error("snapshot", error)
        return None


async def _recover(executor: ExecutorBooks, order: TrackedOrder, reason: str) -> None:
    """Settle an order from the venue's own record: the fills it made that never reached
    us are applied (once: by trade id) and journaled, then its status is taken."""
    intent = order.intent
    client_oid = intent.client_oid
    tracked = executor._orders
    try:
        record = await executor.venue.order_record(intent.symbol, client_oid, order.order_id)
    except VENUE_ERRORS as error:
        executor._venue_error("order lookup", error)
        return  # still open here; the next check asks again
    if tracked.get(client_oid) is not order:
        return  # the stream settled it meanwhile
    now = executor._clock()
    if record is None:
        detail = f"not open at the venue and unknown to it ({reason}): never placed"
        executor._report_missing(client_oid, intent.symbol, detail, now)
        executor._cancelled(order, detail, now)
        return
    recovered = 0
    for fill in record.fills:
        if fill.trade_id not in executor._seen_trades:
            recovered += 1
            executor._on_fill_update(fill, f"venue lookup ({reason})")
    executor._counts["fills_recovered"] += recovered
    now = executor._clock()
    status = record.status
    executor._journal(
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
            "session": executor.session,
        },
        now,
    )
    detail = f"{status.value} at the venue, unheard ({reason}): {recovered} fills recovered"
    if recovered or status.terminal:
        executor.events.append(OrderMissingAtVenue(client_oid, intent.symbol, detail, now))
    if tracked.get(client_oid) is not order:
        return  # its fills completed it
    if status is OrderStatus.CANCELED:
        cancel_reason = f"; {record.cancel_reason}" if record.cancel_reason else ""
        executor._cancelled(order, f"{detail}{cancel_reason}", now)
    elif status is OrderStatus.FILLED:
        # Fewer fills than the venue counts (a history cut short): finish it, say so.
        order.state = OrderState.FILLED
        executor._release_at_gateway(order, now)
        executor._report_missing(
            client_oid,
            intent.symbol,
            f"filled at the venue ({coin(intent.symbol, record.filled_size)}) but only "
            f"{coin(intent.symbol, order.filled)} of its fills were found",
            now,
        )
        executor._finish(order, now)
    else:
        executor._acknowledge(order, record.order_id, now)
        if status is OrderStatus.PARTIALLY_FILLED:
            order.state = OrderState.PARTIALLY_FILLED


async def _confirm_drift(
    executor: ExecutorBooks, first: VenueSnapshot, sent_ns: int, reason: str
) -> None:
    """Re-sync positions the venue reports differently while orders rest. A fill still
    on its way would explain a gap, so a symbol is synced only when the gap holds at two
    reads `position_settle_ms` apart with neither side's position moving in between."""
    apart = _positions_apart(executor, first)
    if not apart:
        return
    last_fill_ns = executor._last_fill_ns
    if any(last_fill_ns.get(symbol, 0) >= sent_ns for symbol in apart):
        # Fills were applied since that read (the lookups): compare with a fresh one.
        sent_ns = executor._clock()
        fresh = await _read_snapshot(executor)
        if fresh is None:
            return
        first = fresh
        apart = _positions_apart(executor, first)
        if not apart:
            return
    settle_ms = executor.config.position_settle_ms
    await asyncio.sleep(settle_ms / 1000.0)
    second = await _read_snapshot(executor)
    if second is None:
        return
    now = executor._clock()
    engine = {p.symbol: p.size for p in executor.gateway.snapshot().positions}
    venue_second = {entry.symbol: entry for entry in second.positions}
    synced_ms = executor._synced_ms
    for symbol, venue_first in apart.items():
        if last_fill_ns.get(symbol, 0) >= sent_ns:
            continue  # a fill reached us meanwhile: not settled yet
        entry = venue_second.get(symbol)
        size = entry.size if entry is not None else 0.0
        if not _same_size(size, venue_first) or _same_size(size, engine.get(symbol, 0.0)):
            continue  # the venue's moved (fills in flight), or the two agree now
        # Every fill stamped up to the first read is in the second (nothing moved since).
        synced_ms[symbol] = max(synced_ms.get(symbol, 0), first.fills_through(symbol))
        _sync_symbol(
            executor,
            symbol,
            entry,
            engine.get(symbol, 0.0),
            now,
            f"{reason}: apart at two reads {settle_ms} ms apart",
        )
    executor.invalidate_risk_view()


def _positions_apart(executor: ExecutorBooks, snapshot: VenueSnapshot) -> dict[str, float]:
    """The symbols whose venue position differs from the gateway's, with the venue's."""
    venue = {entry.symbol: entry.size for entry in snapshot.positions}
    return {
        p.symbol: venue.get(p.symbol, 0.0)
        for p in executor.gateway.snapshot().positions
        if not _same_size(venue.get(p.symbol, 0.0), p.size)
    }


def _same_size(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
