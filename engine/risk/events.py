"""Trading states, the gateway's events, and the bounded outbox the engine drains.

Every state change, denial, limit change and refused command is its own event; the outbox never
merges two events into one. When it is full, its overflow policy drops one event and counts it,
and the next drain starts with an `EventsDropped` marker saying how many were lost.
"""

from __future__ import annotations

import enum
from collections import deque
from typing import NamedTuple

from engine.risk.intents import DenialReason, RiskRequest, Source
from engine.validation import require_count


class TradingState(enum.IntEnum):
    """ACTIVE: every check applies. PAUSED: no new orders, positions kept. REDUCING: only
    orders that shrink a position. HALTED: the latched kill switch, only reduce-only closing
    orders until the operator re-arms."""

    ACTIVE = 0
    PAUSED = 1
    REDUCING = 2
    HALTED = 3


class TradingStateChanged(NamedTuple):
    old: TradingState
    new: TradingState
    reason: str
    source: Source
    at_ns: int


class OrderDenied(NamedTuple):
    """A refused order, cancel or close request."""

    intent: RiskRequest
    reason: DenialReason
    text: str
    at_ns: int


class SymbolPauseChanged(NamedTuple):
    """One symbol stood aside (`paused`: no risk-increasing orders on it, the others go on)
    or let back. `reason` says why it is aside, or, let back, what lifted it; `source` is who:
    OPERATOR (a console command) or RISK (the venue's contract table)."""

    symbol: str
    paused: bool
    reason: str
    source: Source
    at_ns: int

    @property
    def text(self) -> str:
        if self.paused:
            return f"{self.symbol} stood aside, its quotes pulled, the others go on: {self.reason}"
        return f"{self.symbol} let back: {self.reason}"


class RiskLimit(enum.StrEnum):
    """A limit the operator or Kev changes (`RiskLimitChanged`)."""

    MAX_POSITION = "max_position"
    MAX_NET_DELTA = "max_net_delta"
    MAX_SLIPPAGE_BPS = "max_slippage_bps"
    ORDERS_PER_SECOND = "orders_per_second"
    ORDERS_PER_MINUTE = "orders_per_minute"
    RISK_SCALE = "risk_scale"
    HEDGE_RATIO = "hedge_ratio"
    BETA = "beta"


class RiskLimitChanged(NamedTuple):
    """An operator override, a lower risk scale from Kev, a new hedge ratio or a new beta of a
    quoted symbol; `symbol`: the one a per-symbol limit (max position, beta) is of."""

    limit: RiskLimit
    symbol: str | None
    old: float
    new: float
    source: Source
    at_ns: int

    @property
    def name(self) -> str:
        """For people: `max_net_delta`, `beta SOLUSDT`."""
        return self.limit.value if self.symbol is None else f"{self.limit.value} {self.symbol}"


class CommandRejected(NamedTuple):
    """An operator or Kev command the gateway refused, or the part of it that it refused."""

    command: str
    text: str
    source: Source
    at_ns: int


class PositionReconciled(NamedTuple):
    """The exchange reported a position different from the one the fills built."""

    symbol: str
    old_size: float
    new_size: float
    at_ns: int


class DailyPnlReset(NamedTuple):
    """The daily loss counter started a new day; `closed_day_pnl` is the day that ended."""

    closed_day_pnl: float
    at_ns: int


class EventsDropped(NamedTuple):
    """The outbox was full: `count` events were dropped since the previous drain, the last
    of them stamped `last_at_ns`."""

    count: int
    last_at_ns: int


RiskEvent = (
    TradingStateChanged
    | SymbolPauseChanged
    | OrderDenied
    | RiskLimitChanged
    | CommandRejected
    | PositionReconciled
    | DailyPnlReset
    | EventsDropped
)


class OutboxOverflow(enum.StrEnum):
    """What a full outbox gives up. DROP_OLDEST keeps the latest events (what the operator
    needs now); DROP_NEWEST keeps the start of a burst (usually its cause)."""

    DROP_OLDEST = "drop_oldest"
    DROP_NEWEST = "drop_newest"


class EventOutbox:
    """A bounded FIFO of events with a named overflow policy and a count of what it dropped."""

    def __init__(self, capacity: int, overflow: OutboxOverflow) -> None:
        require_count("EventOutbox", "capacity", capacity)
        self.capacity = capacity
        self.overflow = overflow
        self._events: deque[RiskEvent] = deque()
        self._dropped_since_drain = 0
        self._last_dropped_at_ns = 0
        self.dropped_total = 0

    def __len__(self) -> int:
        return len(self._events)

    def append(self, event: RiskEvent) -> None:
        if len(self._events) >= self.capacity:
            if self.overflow is OutboxOverflow.DROP_NEWEST:
                self._count_drop(event.at_ns)
                return
            self._count_drop(self._events.popleft().at_ns)
        self._events.append(event)

    def drain(self) -> tuple[RiskEvent, ...]:
        """Every queued event, oldest first, after an `EventsDropped` marker if any were lost."""
        events = tuple(self._events)
        self._events.clear()
        if self._dropped_since_drain:
            marker = EventsDropped(self._dropped_since_drain, self._last_dropped_at_ns)
            self._dropped_since_drain = 0
            return (marker, *events)
        return events

    def _count_drop(self, at_ns: int) -> None:
        self._dropped_since_drain += 1
        self.dropped_total += 1
        self._last_dropped_at_ns = at_ns
