"""What the journal keeps of the gateway's events: the entry each one becomes, if any."""

from __future__ import annotations

from engine.journal import EntryKind
from engine.risk.events import (
    CommandRejected,
    DailyPnlReset,
    EventsDropped,
    OrderDenied,
    PositionReconciled,
    RiskEvent,
    RiskLimitChanged,
    SymbolPauseChanged,
    TradingStateChanged,
)
from engine.risk.intents import CancelIntent, ClosePositionsIntent, OrderIntent, Source


def risk_event_entry(event: RiskEvent) -> tuple[EntryKind, dict[str, object], int] | None:
    """The journal entry (kind, payload, time) for one of the gateway's events."""
    if isinstance(event, OrderDenied):
        payload: dict[str, object] = {
            "reason": event.reason.name,
            "text": event.text,
            "intent": _intent_payload(event.intent),
        }
        return EntryKind.ORDER_DENIED, payload, event.at_ns
    if isinstance(event, TradingStateChanged):
        payload = {
            "old": event.old.name,
            "new": event.new.name,
            "reason": event.reason,
            "source": event.source.value,
        }
        return EntryKind.STATE_CHANGE, payload, event.at_ns
    if isinstance(event, SymbolPauseChanged):
        payload = {
            "symbol": event.symbol,
            "paused": event.paused,
            "reason": event.reason,
            "source": event.source.value,
        }
        return EntryKind.STATE_CHANGE, payload, event.at_ns
    if isinstance(event, RiskLimitChanged):
        payload = {
            "limit": event.limit.value,
            "symbol": event.symbol,
            "old": event.old,
            "new": event.new,
            "source": event.source.value,
        }
        return EntryKind.STATE_CHANGE, payload, event.at_ns
    if isinstance(event, CommandRejected):
        # Kev's refusals are in the hub's entry for the decision (its gateway notes): a
        # decision is journaled once.
        if event.source is Source.KEV:
            return None
        payload = {"command": event.command, "accepted": False, "text": event.text}
        return EntryKind.OPERATOR_COMMAND, payload, event.at_ns
    if isinstance(event, PositionReconciled):
        payload = {
            "event": "gateway_reconciled",
            "symbol": event.symbol,
            "old_size": event.old_size,
            "new_size": event.new_size,
        }
        return EntryKind.POSITION, payload, event.at_ns
    if isinstance(event, DailyPnlReset):
        return EntryKind.STATE_CHANGE, {"daily_pnl_reset": event.closed_day_pnl}, event.at_ns
    if isinstance(event, EventsDropped):
        return EntryKind.FAULT, {"risk_events_dropped": event.count}, event.last_at_ns
    return None


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
