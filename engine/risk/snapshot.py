"""Frozen views of the gateway's state for the UI (read at about 20 Hz, never on the hot path)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from engine.risk.events import TradingState
from engine.risk.intents import DenialReason


class PositionView(NamedTuple):
    """One symbol: signed size (base coin, > 0 long), entry and mark (mid) prices, PnL in USDT
    (`realized_pnl` before fees), the orders reserved on each side, the caps in force
    (already multiplied by the risk scale), and whether it is stood aside on its own."""

    symbol: str
    size: float
    entry_price: float
    mark_price: float
    notional: float
    realized_pnl: float
    fees: float
    unrealized_pnl: float
    pending_buy: float
    pending_sell: float
    open_orders: int
    max_position: float
    max_notional: float
    delta_weight: float
    feed_healthy: bool
    feed_reason: str
    mark_at_ns: int
    stood_aside: str
    """Why the symbol alone takes no risk-increasing order (the operator's pause, the venue's
    status; "; " between several), "" when it trades."""


class LimitsInForce(NamedTuple):
    """The limits as set (configuration plus operator overrides), before the risk scale."""

    max_position: Mapping[str, float]
    max_net_delta: float
    max_slippage_bps: float
    max_closing_slippage_bps: float
    orders_per_second: int
    orders_per_minute: int
    max_open_orders: int
    daily_loss_soft: float
    daily_loss_hard: float


@dataclass(frozen=True, slots=True)
class RiskSnapshot:
    """Everything the risk pane shows.

    `net_delta` is the current beta-adjusted net delta (USDT); `net_delta_long_bound` and
    `net_delta_short_bound` are what it would become if every reserved buy (resp. sell) filled
    at the current marks, the values the gateway holds within `max_net_delta` (scaled).
    `daily_pnl` is realized minus fees plus unrealized since the last daily reset.
    """

    state: TradingState
    state_reason: str
    flatten_requested: bool
    positions: tuple[PositionView, ...]
    net_delta: float
    net_delta_long_bound: float
    net_delta_short_bound: float
    max_net_delta: float
    gross_notional: float
    realized_pnl: float
    fees: float
    unrealized_pnl: float
    daily_pnl: float
    limits: LimitsInForce
    risk_scale: float
    hedge_symbol: str | None
    hedge_ratio: float
    betas: Mapping[str, float]
    """Each quoted symbol's beta in force (the hedge's weight is `hedge_ratio`)."""
    denial_counts: Mapping[DenialReason, int]
    denials_total: int
    open_orders: int
    unacknowledged_orders: int
    cancel_requests: int
    cancels_over_endpoint_limit: int
    unknown_order_updates: int
    invalid_inputs: int
    events_dropped: int

    @property
    def flat(self) -> bool:
        return all(position.size == 0 for position in self.positions)

    @property
    def session_pnl(self) -> float:
        """Realized minus fees plus unrealized since the gateway started (this run), across
        daily resets."""
        return self.realized_pnl - self.fees + self.unrealized_pnl
