"""RiskGateway: the one gate between every order (strategy, Kev, operator, hedge) and the
executor. Pure and deterministic: no I/O, no clock of its own (every input carries `now_ns`).

Order of checks in `check` (the first failing one is the denial reason):
 1. the symbol is configured                                      UNKNOWN_SYMBOL
 2. the intent is well formed: side, type, size > 0, a limit
    price > 0 (none for market), a known `force`                  INVALID_INTENT
 3. its client_oid is not already open                            DUPLICATE_CLIENT_OID
 4. trading state: PAUSED denies everything; HALTED allows only
    reduce-only orders that shrink a position; REDUCING allows
    only orders that shrink a position                            TRADING_PAUSED / _HALTED /
                                                                  REDUCING_ONLY
 5. risk-increasing orders only: the symbol is not stood aside
    on its own (`pause_symbol`: the operator, the venue's
    contract status)                                              SYMBOL_PAUSED
    and the feed is healthy and the mark is younger than
    `max_mark_age_ms`                                             FEED_UNHEALTHY /
                                                                  NO_MARKET_DATA /
                                                                  STALE_MARKET_DATA
 6. size <= the symbol's max order size                           ORDER_SIZE
 7. price: a buy's limit price (a market buy's estimated fill, the
    best ask) is at most `max_slippage_bps` above both the mid and
    the microprice; a sell's at most that far below both. Orders
    that shrink a position get `max_closing_slippage_bps`         SLIPPAGE
 8. risk-increasing orders only: position bound <= max position   POSITION_LIMIT
 9.   and position bound x mid <= max notional                    NOTIONAL_LIMIT
10. net delta bound within +-max net delta (risk-increasing
    orders; in ACTIVE every order)                                NET_DELTA_LIMIT
11. risk-increasing orders only: open orders < max open orders    MAX_OPEN_ORDERS
12. risk-increasing orders only: our own pace, per second then
    per minute                                                    ORDER_RATE
13. Bitget's place-order limit (every order)                      ENDPOINT_RATE
A denied order consumes nothing. An approved one is reserved at once: it counts as open, uses
its rate slots, and its whole size is pending on its side until it fills, is cancelled or is
rejected, so a burst of approvals can never together pass a limit.

Bounds with pending orders. For a symbol with position q (signed base coin) and reserved
buys B and sells S, every fill sequence keeps the position inside [q - S, q + B]; reduce-only
orders are counted like any other (conservative: the exchange caps them, but they can use up
the position that other reserved orders would have offset). A buy is risk-increasing unless
q < 0 and q + B + size <= 0, i.e. it can only shrink a short, never flip it; sells mirror.

Net delta (USDT). With w_s = beta_s for the quoted symbols (their beta to the book in force:
the configured one, 1 unless set, as Kev or the operator last moved it within
`RiskGatewayConfig.beta_range`) and w_H = h (the hedge ratio in force) for the hedge symbol,
and m_s the mid:
    net delta       = sum_s w_s * q_s * m_s
    long bound      = sum_s w_s * (q_s + B_s) * m_s      (every reserved buy filled)
    short bound     = sum_s w_s * (q_s - S_s) * m_s      (every reserved sell filled)
h is the part of the hedge instrument's notional that offsets the traded book (its beta to
the book: 1 offsets in full, 0 not at all). A buy needs long bound + w * size * m <= D and a
sell short bound - w * size * m >= -D, where D is max net delta times the risk scale. In
REDUCING and HALTED, orders that shrink a position skip this check: going flat can move the
net delta through the limit on the way (closing a long before the matching short), and a
flatten must never deadlock on it.

Risk scale (0..1) multiplies max position, max notional and max net delta; the operator sets
it, Kev may only lower it. The hedge ratio and the betas move inside their bands, set by Kev or
the operator: the last one holds. Limits carry a relative tolerance of 1e-9, and "shrinks a
position" a slack of 1e-12 base coin plus 1e-9 of the position, so that sums of decimal sizes
a few ulps off are judged as the decimals they stand for.
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.risk.commands import CommandOutcome, KevAction, KevCommandOutcome
from engine.risk.events import (
    CommandRejected,
    DailyPnlReset,
    EventOutbox,
    OrderDenied,
    PositionReconciled,
    RiskEvent,
    RiskLimit,
    RiskLimitChanged,
    SymbolPauseChanged,
    TradingState,
    TradingStateChanged,
)
from engine.risk.intents import (
    APPROVED,
    CancelIntent,
    CancelScope,
    ClosePositionsIntent,
    DenialReason,
    OrderIntent,
    RiskDecision,
    RiskRequest,
    Source,
)
from engine.risk.limits import (
    EndpointLimits,
    OverrideBounds,
    RiskGatewayConfig,
    RiskLimits,
    SymbolLimits,
)
from engine.risk.overrides import RiskOverrides
from engine.risk.snapshot import LimitsInForce, PositionView, RiskSnapshot
from engine.units import base_coin, coin, exact
from engine.validation import finite_number

__all__ = [
    "EndpointLimits",
    "OverrideBounds",
    "RiskGateway",
    "RiskGatewayConfig",
    "RiskLimits",
    "SymbolLimits",
]

_SECOND_NS = 1_000_000_000
_MINUTE_NS = 60 * _SECOND_NS
_HOUR_NS = 3_600 * _SECOND_NS
_DAY_NS = 24 * _HOUR_NS
_LIMIT_TOLERANCE = 1e-9
_SIZE_DECIMALS = 12
"""Positions and closing sizes are kept to this many decimals (as the simulator does)."""
_SIZE_RESOLUTION = 10.0**-_SIZE_DECIMALS
_NEVER_NS = -(1 << 62)
"""The time of a rate-window slot never used, and of a mark never received."""
_INF = math.inf
_BPS = 1e-4

# Enum members as module globals: `is` against a global is the cheapest test on the hot path.
_BUY = OrderSide.BUY
_SELL = OrderSide.SELL
_LIMIT = OrderType.LIMIT
_MARKET = OrderType.MARKET
_ACTIVE = TradingState.ACTIVE
_PAUSED = TradingState.PAUSED
_REDUCING = TradingState.REDUCING
_HALTED = TradingState.HALTED
# Enum attribute access costs about 0.15 us on the development VM, more than most checks.
_UNKNOWN_SYMBOL = DenialReason.UNKNOWN_SYMBOL
_INVALID_INTENT = DenialReason.INVALID_INTENT
_DUPLICATE_CLIENT_OID = DenialReason.DUPLICATE_CLIENT_OID
_TRADING_PAUSED = DenialReason.TRADING_PAUSED
_TRADING_HALTED = DenialReason.TRADING_HALTED
_REDUCING_ONLY = DenialReason.REDUCING_ONLY
_FEED_UNHEALTHY = DenialReason.FEED_UNHEALTHY
_NO_MARKET_DATA = DenialReason.NO_MARKET_DATA
_STALE_MARKET_DATA = DenialReason.STALE_MARKET_DATA
_ORDER_SIZE = DenialReason.ORDER_SIZE
_SLIPPAGE = DenialReason.SLIPPAGE
_POSITION_LIMIT = DenialReason.POSITION_LIMIT
_NOTIONAL_LIMIT = DenialReason.NOTIONAL_LIMIT
_NET_DELTA_LIMIT = DenialReason.NET_DELTA_LIMIT
_MAX_OPEN_ORDERS = DenialReason.MAX_OPEN_ORDERS
_ORDER_RATE = DenialReason.ORDER_RATE
_ENDPOINT_RATE = DenialReason.ENDPOINT_RATE
_SYMBOL_PAUSED = DenialReason.SYMBOL_PAUSED
_new_tuple = tuple.__new__  # skips NamedTuple's Python-level __new__ on the hot path


class _RateWindow:
    """A sliding window admitting at most `limit` events per `span_ns`: a ring of the last
    `limit` admission times, so the test is one comparison with the oldest of them."""

    __slots__ = ("index", "limit", "span_ns", "times")

    def __init__(self, limit: int, span_ns: int) -> None:
        self.times = [_NEVER_NS] * limit
        self.index = 0
        self.limit = limit
        self.span_ns = span_ns

    def admits(self, now_ns: int, spare: int = 0) -> bool:
        """Whether one more event is admitted now, with `spare` more still to come after it
        (at most all but one of a window)."""
        oldest_kept = self.times[(self.index + min(spare, self.limit - 1)) % self.limit]
        return now_ns - oldest_kept >= self.span_ns

    def record(self, now_ns: int) -> None:
        self.times[self.index] = now_ns
        self.index = (self.index + 1) % self.limit

    def resized(self, limit: int) -> _RateWindow:
        """A window with a new limit that keeps the most recent admission times."""
        chronological = self.times[self.index :] + self.times[: self.index]
        window = _RateWindow(limit, self.span_ns)
        kept = chronological[-limit:]
        window.times[limit - len(kept) :] = kept
        return window


class _SymbolRisk:
    """One symbol's mutable state, plain slots so the hot path reads it cheaply. Limits and
    price bands are precomputed here whenever a mark or a limit changes."""

    __slots__ = (
        "aside",
        "aside_reason",
        "best_ask",
        "best_bid",
        "delta_weight",
        "entry_price",
        "feed_healthy",
        "feed_reason",
        "fees",
        "mark_ns",
        "max_buy_price",
        "max_closing_buy_price",
        "max_notional",
        "max_notional_set",
        "max_order_size",
        "max_position",
        "max_position_set",
        "microprice",
        "mid",
        "min_closing_sell_price",
        "min_sell_price",
        "net_long",
        "net_short",
        "open_orders",
        "pending_buy",
        "pending_sell",
        "position",
        "realized_pnl",
        "symbol",
        "unrealized_pnl",
    )

    def __init__(self, limits: SymbolLimits, delta_weight: float) -> None:
        self.symbol = limits.symbol
        self.max_order_size = limits.max_order_size
        self.max_position_set = limits.max_position
        self.max_notional_set = limits.max_notional
        self.max_position = 0.0
        self.max_notional = 0.0
        self.delta_weight = delta_weight
        self.position = 0.0
        self.entry_price = 0.0
        self.realized_pnl = 0.0
        self.fees = 0.0
        self.unrealized_pnl = 0.0
        self.pending_buy = 0.0
        self.pending_sell = 0.0
        self.open_orders = 0
        self.net_long = 0.0
        self.net_short = 0.0
        self.mid = 0.0
        self.microprice = 0.0
        self.best_bid = 0.0
        self.best_ask = 0.0
        self.mark_ns = _NEVER_NS
        self.max_buy_price = 0.0
        self.min_sell_price = _INF
        self.max_closing_buy_price = 0.0
        self.min_closing_sell_price = _INF
        self.feed_healthy = True
        self.feed_reason = ""
        self.aside: dict[Source, str] = {}
        """Who stands this symbol aside on its own, and why (`RiskGateway.pause_symbol`)."""
        self.aside_reason = ""
        """The reasons of `aside` joined, "" when it trades: the one field `check` reads."""


def _parse_kev_command(
    action: KevAction | str,
    risk_scale: float | None,
    hedge_ratio: float | None,
    beta: tuple[str, float] | None,
    beta_ranges: Mapping[str, tuple[float, float]],
) -> tuple[KevAction | None, str]:
    """Kev's action, or None and why the command is malformed."""
    try:
        kev_action = KevAction(action)
    except (ValueError, TypeError):
        return None, f"unknown action {action!r}"
    if risk_scale is not None and not (finite_number(risk_scale) and 0 <= risk_scale <= 1):
        return None, f"risk scale must be within [0, 1], got {risk_scale!r}"
    if hedge_ratio is not None and not finite_number(hedge_ratio):
        return None, f"hedge ratio must be a number, got {hedge_ratio!r}"
    if beta is not None:
        symbol, value = beta
        if symbol not in beta_ranges:
            return None, f"a beta for {symbol!r}, which is not a quoted symbol of the book"
        if not finite_number(value):
            return None, f"{symbol} beta must be a number, got {value!r}"
    return kev_action, ""


class RiskGateway:
    """Checks every order, tracks positions, PnL and open orders from the engine's inputs,
    owns the trading state and emits an event for every change and every denial.

    Inputs: `on_order_acknowledged`, `on_order_closed`, `on_fill`,
    `on_mark`, `on_feed_health`, `on_position_sync`. Operator: `pause`, `resume`, `flatten`,
    `kill`, `rearm`, `set_limits`, and per symbol `pause_symbol`, `resume_symbol`. Kev:
    `apply_kev_command`. Out: `drain_events`, `snapshot`, `closing_intents`.
    """

    def __init__(self, config: RiskGatewayConfig) -> None:
        self.config = config
        limits = config.limits
        self._symbols: dict[str, _SymbolRisk] = {}
        for symbol_limits in limits.symbols:
            symbol = symbol_limits.symbol
            self._symbols[symbol] = _SymbolRisk(symbol_limits, config.delta_weight(symbol))
        self._symbol_list = tuple(self._symbols.values())
        self._book_list = tuple(
            risk for risk in self._symbol_list if risk.symbol != config.hedge_symbol
        )
        self._state = _ACTIVE
        self._state_reason = "started"
        self._flatten_requested = False
        self._risk_scale = config.risk_scale
        self._hedge_ratio = config.hedge_ratio
        self._beta_ranges = {
            risk.symbol: config.beta_range(risk.symbol) for risk in self._book_list
        }
        self._max_net_delta_set = limits.max_net_delta
        self._max_net_delta = 0.0
        self._max_slippage_bps = limits.max_slippage_bps
        self._orders_per_second = limits.orders_per_second
        self._orders_per_minute = limits.orders_per_minute
        self._max_open_orders = limits.max_open_orders
        self._max_mark_age_ns = config.max_mark_age_ms * 1_000_000
        self._own_second = _RateWindow(limits.orders_per_second, _SECOND_NS)
        self._own_minute = _RateWindow(limits.orders_per_minute, _MINUTE_NS)
        endpoints = limits.endpoints
        self._place_order = _RateWindow(endpoints.place_order_per_second, _SECOND_NS)
        self._cancel_order = _RateWindow(endpoints.cancel_order_per_second, _SECOND_NS)
        self._batch_cancel = _RateWindow(endpoints.batch_cancel_per_second, _SECOND_NS)
        self._close_positions = _RateWindow(endpoints.close_positions_per_second, _SECOND_NS)
        self._open_intents: dict[str, OrderIntent] = {}
        self._open_remaining: dict[str, float] = {}
        self._acknowledged: set[str] = set()
        self._open_count = 0
        self._net_long = 0.0
        self._net_short = 0.0
        self._realized_total = 0.0
        self._fees_total = 0.0
        self._unrealized_total = 0.0
        self._day_started = False
        self._next_day_ns = _NEVER_NS
        self._day_base_pnl = 0.0
        self._soft_loss_tripped = False
        self._denial_counts = [0] * len(DenialReason)
        self._closing_orders_made = 0
        self._cancel_requests = 0
        self._cancels_over_endpoint_limit = 0
        self._unknown_order_updates = 0
        self._invalid_inputs = 0
        self._outbox = EventOutbox(config.outbox_capacity, config.outbox_overflow)
        self._apply_limits()

    # The hot path

    def check(self, intent: OrderIntent, now_ns: int) -> RiskDecision:
        """Approve (and reserve) or deny one new order; the order of checks is in the module
        docstring. Every denial is counted and emitted as an `OrderDenied` event."""
        symbol, side, size, price, order_type, client_oid, _, force, reduce_only, _ = intent
        if now_ns >= self._next_day_ns:
            self._start_day(now_ns)
        try:
            risk = self._symbols[symbol]
        except KeyError:
            return self._deny(intent, _UNKNOWN_SYMBOL, f"{symbol!r} is not configured", now_ns)
        if not 0.0 < size < _INF:
            return self._deny(
                intent,
                _INVALID_INTENT,
                f"size must be positive and finite, got {size!r}",
                now_ns,
            )
        if order_type is _LIMIT:
            if price is None or not 0.0 < price < _INF or type(force) is not TimeInForce:
                return self._deny(
                    intent,
                    _INVALID_INTENT,
                    f"a limit order needs a positive price and a force, got {price!r}, {force!r}",
                    now_ns,
                )
        elif order_type is not _MARKET or price is not None:
            return self._deny(
                intent,
                _INVALID_INTENT,
                f"order type must be limit or market (market without price), got "
                f"{order_type!r} at {price!r}",
                now_ns,
            )
        if client_oid in self._open_intents:
            return self._deny(
                intent,
                _DUPLICATE_CLIENT_OID,
                f"client_oid {client_oid!r} is already open",
                now_ns,
            )
        position = risk.position
        if side is _BUY:
            is_buy = True
            bound = position + risk.pending_buy + size
            reduces = position < 0.0 and bound <= _SIZE_RESOLUTION - position * _LIMIT_TOLERANCE
        elif side is _SELL:
            is_buy = False
            bound = position - risk.pending_sell - size
            reduces = position > 0.0 and bound >= -_SIZE_RESOLUTION - position * _LIMIT_TOLERANCE
        else:
            return self._deny(
                intent,
                _INVALID_INTENT,
                f"side must be buy or sell, got {side!r}",
                now_ns,
            )

        state = self._state
        if state is not _ACTIVE:
            if state is _PAUSED:
                return self._deny(intent, _TRADING_PAUSED, "trading is paused", now_ns)
            if state is _HALTED:
                if not (reduce_only and reduces):
                    return self._deny(
                        intent,
                        _TRADING_HALTED,
                        "halted: only reduce-only orders that shrink a position",
                        now_ns,
                    )
            elif not reduces:
                return self._deny(
                    intent,
                    _REDUCING_ONLY,
                    "reducing: only orders that shrink a position",
                    now_ns,
                )

        if not reduces:
            if risk.aside_reason:
                return self._deny(
                    intent,
                    _SYMBOL_PAUSED,
                    f"{symbol} stood aside: {risk.aside_reason}",
                    now_ns,
                )
            if not risk.feed_healthy:
                return self._deny(
                    intent,
                    _FEED_UNHEALTHY,
                    f"{symbol} feed unhealthy: {risk.feed_reason}",
                    now_ns,
                )
            if now_ns - risk.mark_ns > self._max_mark_age_ns:
                return self._deny_stale(intent, risk, now_ns)

        if size > risk.max_order_size:
            return self._deny(
                intent,
                _ORDER_SIZE,
                f"size {coin(symbol, size)} is above the max order size "
                f"{coin(symbol, risk.max_order_size)}",
                now_ns,
            )

        mid = risk.mid
        if mid:
            if is_buy:
                fill = risk.best_ask if price is None else price
                if fill > (risk.max_closing_buy_price if reduces else risk.max_buy_price):
                    return self._deny_slippage(intent, risk, fill, reduces, now_ns)
            else:
                fill = risk.best_bid if price is None else price
                if fill < (risk.min_closing_sell_price if reduces else risk.min_sell_price):
                    return self._deny_slippage(intent, risk, fill, reduces, now_ns)

        if not reduces:
            magnitude = bound if is_buy else -bound
            if magnitude > risk.max_position:
                return self._deny(
                    intent,
                    _POSITION_LIMIT,
                    f"{symbol} position could reach {coin(symbol, bound, signed=True)}, beyond "
                    f"max position {coin(symbol, risk.max_position)}",
                    now_ns,
                )
            if magnitude * mid > risk.max_notional:
                return self._deny(
                    intent,
                    _NOTIONAL_LIMIT,
                    f"{symbol} notional could reach {magnitude * mid:,.0f} USDT, beyond "
                    f"{risk.max_notional:,.0f} USDT",
                    now_ns,
                )

        # The tests of `net_delta_fits` and, below, `has_order_room`, inline: calling them
        # costs an approval 6% and 12% more (`bench` risk check, p50).
        delta = risk.delta_weight * size * mid
        if not reduces or state is _ACTIVE:
            if is_buy:
                if self._net_long + delta > self._max_net_delta:
                    return self._deny_net_delta(intent, self._net_long + delta, now_ns)
            elif self._net_short - delta < -self._max_net_delta:
                return self._deny_net_delta(intent, self._net_short - delta, now_ns)

        own_second = self._own_second
        own_minute = self._own_minute
        if not reduces:
            if self._open_count >= self._max_open_orders:
                return self._deny(
                    intent,
                    _MAX_OPEN_ORDERS,
                    f"{self._open_count} orders open, the max is {self._max_open_orders}",
                    now_ns,
                )
            if now_ns - own_second.times[own_second.index] < _SECOND_NS:
                return self._deny(
                    intent,
                    _ORDER_RATE,
                    f"more than {self._orders_per_second} orders in a second",
                    now_ns,
                )
            if now_ns - own_minute.times[own_minute.index] < _MINUTE_NS:
                return self._deny(
                    intent,
                    _ORDER_RATE,
                    f"more than {self._orders_per_minute} orders in a minute",
                    now_ns,
                )
        place = self._place_order
        place_times = place.times
        if now_ns - place_times[place.index] < _SECOND_NS:
            return self._deny(
                intent,
                _ENDPOINT_RATE,
                f"Bitget place-order allows {place.limit} requests a second",
                now_ns,
            )

        # Approved: reserve everything at once (the rate rings are inlined `_RateWindow.record`).
        index = place.index
        place_times[index] = now_ns
        place.index = (index + 1) % place.limit
        if not reduces:
            index = own_second.index
            own_second.times[index] = now_ns
            own_second.index = (index + 1) % own_second.limit
            index = own_minute.index
            own_minute.times[index] = now_ns
            own_minute.index = (index + 1) % own_minute.limit
        self._open_intents[client_oid] = intent
        self._open_remaining[client_oid] = size
        self._open_count += 1
        risk.open_orders += 1
        if is_buy:
            risk.pending_buy += size
            risk.net_long += delta
            self._net_long += delta
        else:
            risk.pending_sell += size
            risk.net_short -= delta
            self._net_short -= delta
        return APPROVED

    def _deny(
        self, intent: RiskRequest, reason: DenialReason, text: str, now_ns: int
    ) -> RiskDecision:
        self._denial_counts[reason] += 1
        self._outbox.append(_new_tuple(OrderDenied, (intent, reason, text, now_ns)))
        return _new_tuple(RiskDecision, (False, reason, text))

    def _deny_stale(self, intent: OrderIntent, risk: _SymbolRisk, now_ns: int) -> RiskDecision:
        if not risk.mid:
            return self._deny(intent, _NO_MARKET_DATA, f"no mark for {risk.symbol} yet", now_ns)
        age_ms = (now_ns - risk.mark_ns) / 1e6
        return self._deny(
            intent,
            _STALE_MARKET_DATA,
            f"{risk.symbol} mark is {age_ms:.0f} ms old (max {self._max_mark_age_ns // 1_000_000})",
            now_ns,
        )

    def _deny_slippage(
        self, intent: OrderIntent, risk: _SymbolRisk, fill: float, reduces: bool, now_ns: int
    ) -> RiskDecision:
        band = self.config.limits.max_closing_slippage_bps if reduces else self._max_slippage_bps
        # Name the reference the price went furthest through: the tighter of the two.
        if intent.side is _BUY:
            mid_is_tighter = risk.mid <= risk.microprice
            reference = risk.mid if mid_is_tighter else risk.microprice
            deviation = (fill - reference) / reference / _BPS
        else:
            mid_is_tighter = risk.mid >= risk.microprice
            reference = risk.mid if mid_is_tighter else risk.microprice
            deviation = (reference - fill) / reference / _BPS
        name = "mid" if mid_is_tighter else "microprice"
        what = "limit price" if intent.price is not None else "estimated fill (touch)"
        return self._deny(
            intent,
            _SLIPPAGE,
            f"{what} {fill:g} is {deviation:.1f} bps through the {name} {reference:g} "
            f"(max {band:g} bps)",
            now_ns,
        )

    def _deny_net_delta(self, intent: OrderIntent, reached: float, now_ns: int) -> RiskDecision:
        return self._deny(
            intent,
            _NET_DELTA_LIMIT,
            f"net delta could reach {reached:+,.0f} USDT, beyond +-{self._max_net_delta:,.0f} USDT",
            now_ns,
        )

    def check_cancel(self, intent: CancelIntent, now_ns: int) -> RiskDecision:
        """Approve a cancel: cancelling only lowers risk, so a well-formed one is never denied.
        It is still counted against its Bitget endpoint (cancel-order for one order,
        batch-cancel-orders for a symbol or all); bursts past the exchange's limit are counted
        in the snapshot so the executor's pacing can be checked."""
        self._advance_day(now_ns)
        scope = intent.scope
        if scope is CancelScope.ORDER:
            window = self._cancel_order
            well_formed = intent.client_oid is not None and intent.symbol in self._symbols
        elif scope is CancelScope.SYMBOL:
            window = self._batch_cancel
            well_formed = intent.symbol in self._symbols
        else:
            window = self._batch_cancel
            well_formed = scope is CancelScope.ALL
        if not well_formed:
            return self._deny(intent, _INVALID_INTENT, f"malformed cancel {intent!r}", now_ns)
        self._cancel_requests += 1
        if not window.admits(now_ns):
            self._cancels_over_endpoint_limit += 1
        window.record(now_ns)
        return APPROVED

    def check_close_positions(self, intent: ClosePositionsIntent, now_ns: int) -> RiskDecision:
        """Bitget's flash close (close-positions, 1 request a second). It only closes, so it is
        allowed in every state but PAUSED (which keeps positions); above the endpoint's limit
        it is denied and the engine closes with `closing_intents` instead."""
        self._advance_day(now_ns)
        symbol = intent.symbol
        if symbol is not None and symbol not in self._symbols:
            return self._deny(intent, _UNKNOWN_SYMBOL, f"{symbol!r} is not configured", now_ns)
        if self._state is _PAUSED:
            return self._deny(intent, _TRADING_PAUSED, "trading is paused", now_ns)
        window = self._close_positions
        if not window.admits(now_ns):
            return self._deny(
                intent,
                _ENDPOINT_RATE,
                f"Bitget close-positions allows {window.limit} requests a second",
                now_ns,
            )
        window.record(now_ns)
        return APPROVED

    def closing_intents(self) -> tuple[OrderIntent, ...]:
        """Reduce-only market orders that flatten every position, net of closing orders
        already reserved, split into pieces no larger than the symbol's max order size. They
        are not reserved yet: the engine sends each through `check`."""
        intents: list[OrderIntent] = []
        for risk in self._symbol_list:
            position = risk.position
            if position > 0:
                side, unclosed = _SELL, position - risk.pending_sell
            elif position < 0:
                side, unclosed = _BUY, -position - risk.pending_buy
            else:
                continue
            # Rounding first drops the float residue of the pending sums.
            unclosed = round(unclosed, _SIZE_DECIMALS)
            while unclosed > 0:
                piece = min(unclosed, risk.max_order_size)
                unclosed = round(unclosed - piece, _SIZE_DECIMALS)
                self._closing_orders_made += 1
                intents.append(
                    OrderIntent(
                        risk.symbol,
                        side,
                        piece,
                        None,
                        _MARKET,
                        f"{self.config.closing_client_oid_prefix}{self._closing_orders_made}",
                        Source.RISK,
                        TimeInForce.IOC,
                        True,
                        f"close: {self._state_reason}",
                    )
                )
        return tuple(intents)

    # Inputs from the engine

    def on_order_acknowledged(self, client_oid: str, now_ns: int) -> None:
        self._advance_day(now_ns)
        if client_oid in self._open_intents:
            self._acknowledged.add(client_oid)
        else:
            self._unknown_order_updates += 1

    def on_order_closed(self, client_oid: str, now_ns: int) -> None:
        """The order ended without filling further: refused by the exchange, cancelled, expired
        (IOC/FOK) or the unfilled rest of a market order. Its reservation is released; its rate
        slots stay used, the request was sent."""
        self._advance_day(now_ns)
        self._close_order(client_oid)

    def on_fill(
        self,
        client_oid: str,
        symbol: str,
        side: OrderSide,
        size: float,
        price: float,
        fee: float,
        now_ns: int,
    ) -> None:
        """One execution. `fee` is a cost in USDT (negative for a rebate). A fill of an order
        the gateway does not know still moves the position: the exchange did trade."""
        self._advance_day(now_ns)
        risk = self._symbols.get(symbol)
        if (
            risk is None
            or (side is not _BUY and side is not _SELL)
            or not (finite_number(size) and size > 0)
            or not (finite_number(price) and price > 0)
            or not finite_number(fee)
        ):
            self._invalid_inputs += 1
            return
        remaining = self._open_remaining.get(client_oid)
        if remaining is None:
            self._unknown_order_updates += 1
        else:
            intent = self._open_intents[client_oid]
            order_risk = self._symbols[intent.symbol]
            released = min(size, remaining)
            if intent.side is _BUY:
                order_risk.pending_buy -= released
            else:
                order_risk.pending_sell -= released
            left = remaining - released
            self._open_remaining[client_oid] = left
            if left <= intent.size * _LIMIT_TOLERANCE:
                self._close_order(client_oid)  # releases the float residue with it
        self._apply_fill(risk, side, size, price, fee)
        self._refresh_exposure()
        self._check_daily_loss(now_ns)
        self._check_flatten_done(now_ns)

    def on_mark(
        self,
        symbol: str,
        mid: float,
        microprice: float,
        best_bid: float,
        best_ask: float,
        now_ns: int,
    ) -> None:
        """A new touch for a symbol. An incoherent one (crossed, non-positive, NaN) is counted
        and ignored, so the last good mark ages until the staleness check blocks."""
        self._advance_day(now_ns)
        risk = self._symbols.get(symbol)
        if risk is None or not (
            0.0 < best_bid <= mid <= best_ask < _INF and 0.0 < microprice < _INF
        ):
            self._invalid_inputs += 1
            return
        if mid != risk.mid or microprice != risk.microprice:
            # The bands follow these two alone (a new band recomputes them with the limits);
            # most books leave the touch, and so both, as they were.
            risk.mid = mid
            risk.microprice = microprice
            self._set_price_bands(risk)
        risk.best_bid = best_bid
        risk.best_ask = best_ask
        risk.mark_ns = now_ns
        position = risk.position
        unrealized = position * (mid - risk.entry_price) if position else 0.0
        self._unrealized_total += unrealized - risk.unrealized_pnl
        risk.unrealized_pnl = unrealized
        weight = risk.delta_weight * mid
        net_long = weight * (position + risk.pending_buy)
        net_short = weight * (position - risk.pending_sell)
        self._net_long += net_long - risk.net_long
        self._net_short += net_short - risk.net_short
        risk.net_long = net_long
        risk.net_short = net_short
        self._check_daily_loss(now_ns)

    def on_feed_health(self, symbol: str, healthy: bool, reason: str) -> None:
        """A stale or resyncing feed blocks risk-increasing orders for its symbol."""
        risk = self._symbols.get(symbol)
        if risk is None:
            self._invalid_inputs += 1
            return
        risk.feed_healthy = healthy
        risk.feed_reason = "" if healthy else reason

    def on_position_sync(self, symbol: str, size: float, entry_price: float, now_ns: int) -> None:
        """The exchange's view of a position (at start-up and on reconciliation) replaces the
        one built from fills. The daily PnL does not jump with it: the unrealized PnL it brings
        is taken into the day's starting point."""
        self._advance_day(now_ns)
        risk = self._symbols.get(symbol)
        if (
            risk is None
            or not finite_number(size)
            or not (finite_number(entry_price) and entry_price >= 0)
        ):
            self._invalid_inputs += 1
            return
        old_size = risk.position
        before = self._unrealized_total
        risk.position = round(float(size), _SIZE_DECIMALS)
        risk.entry_price = float(entry_price) if risk.position else 0.0
        self._refresh_exposure()
        self._day_base_pnl += self._unrealized_total - before
        if old_size != risk.position:
            self._outbox.append(PositionReconciled(symbol, old_size, risk.position, now_ns))
        self._check_flatten_done(now_ns)

    def drain_events(self) -> tuple[RiskEvent, ...]:
        return self._outbox.drain()

    @property
    def pending_events(self) -> int:
        """Events waiting for `drain_events`."""
        return len(self._outbox)

    # Operator commands

    def pause(self, now_ns: int, reason: str = "operator pause") -> CommandOutcome:
        """No new orders; positions are kept; the engine cancels resting quotes."""
        self._advance_day(now_ns)
        state = self._state
        if state is _HALTED:
            return self._refuse("pause", "halted is latched: re-arm first", Source.OPERATOR, now_ns)
        if state is _PAUSED:
            return CommandOutcome(True, "already paused")
        self._flatten_requested = False
        self._set_state(_PAUSED, reason, Source.OPERATOR, now_ns)
        return CommandOutcome(True, "paused")

    def resume(self, now_ns: int) -> CommandOutcome:
        self._advance_day(now_ns)
        state = self._state
        if state is _HALTED:
            return self._refuse(
                "resume", "halted is latched: re-arm first", Source.OPERATOR, now_ns
            )
        if state is _ACTIVE:
            return CommandOutcome(True, "already active")
        self._flatten_requested = False
        self._set_state(_ACTIVE, "operator resume", Source.OPERATOR, now_ns)
        return CommandOutcome(True, "active")

    def pause_symbol(
        self, symbol: str, now_ns: int, reason: str, source: Source = Source.OPERATOR
    ) -> CommandOutcome:
        """Stand `symbol` aside on its own: its risk-increasing orders are refused
        (SYMBOL_PAUSED), orders that shrink its position pass, the other symbols go on. Each
        source holds its own pause (the operator's, RISK's for the venue's contract status),
        lifted only by `resume_symbol` from the same source."""
        self._advance_day(now_ns)
        risk = self._symbols.get(symbol)
        if risk is None:
            return self._refuse("pause_symbol", f"{symbol!r} is not in the book", source, now_ns)
        if source in risk.aside:
            return CommandOutcome(True, f"{symbol} already stood aside: {risk.aside_reason}")
        risk.aside[source] = reason
        risk.aside_reason = "; ".join(risk.aside.values())
        self._outbox.append(SymbolPauseChanged(symbol, True, risk.aside_reason, source, now_ns))
        return CommandOutcome(True, f"{symbol} paused: {risk.aside_reason}")

    def resume_symbol(
        self, symbol: str, now_ns: int, reason: str, source: Source = Source.OPERATOR
    ) -> CommandOutcome:
        """Lift `source`'s pause of `symbol` (`pause_symbol`); `reason` says what lifted it.
        The symbol trades again once no source holds it aside."""
        self._advance_day(now_ns)
        risk = self._symbols.get(symbol)
        if risk is None:
            return self._refuse("resume_symbol", f"{symbol!r} is not in the book", source, now_ns)
        if risk.aside.pop(source, None) is None:
            if risk.aside_reason:
                return self._refuse(
                    "resume_symbol",
                    f"{symbol} stays aside: {risk.aside_reason}",
                    source,
                    now_ns,
                )
            return CommandOutcome(True, f"{symbol} is not paused")
        risk.aside_reason = "; ".join(risk.aside.values())
        if risk.aside_reason:
            self._outbox.append(SymbolPauseChanged(symbol, True, risk.aside_reason, source, now_ns))
            return CommandOutcome(True, f"{symbol} still stood aside: {risk.aside_reason}")
        self._outbox.append(SymbolPauseChanged(symbol, False, reason, source, now_ns))
        return CommandOutcome(True, f"{symbol} resumed")

    def flatten(self, now_ns: int) -> CommandOutcome:
        """REDUCING until every position is flat, then PAUSED. The engine cancels resting
        orders and sends `closing_intents` through `check`."""
        self._advance_day(now_ns)
        if self._state is _HALTED:
            return CommandOutcome(True, "halted: already flattening")
        self._start_flatten("operator flatten", Source.OPERATOR, now_ns)
        return CommandOutcome(True, f"flattening ({self._state.name.lower()})")

    def kill(self, now_ns: int, reason: str = "operator kill switch") -> CommandOutcome:
        """The kill switch: HALTED, latched until `rearm`. The engine cancels every order and
        flattens with `closing_intents`; only reduce-only closing orders pass meanwhile."""
        # The state flips first: nothing after it may keep trading going (anchors (c) 1).
        if self._state is _HALTED:
            return CommandOutcome(True, "already halted")
        self._set_state(_HALTED, reason, Source.OPERATOR, now_ns)
        self._advance_day(now_ns)
        return CommandOutcome(True, "halted")

    def rearm(self, now_ns: int, confirmation: str) -> CommandOutcome:
        """Release the kill switch into PAUSED (trading restarts only with `resume`). Refused
        without the configured confirmation, or while the day's loss is beyond the hard level
        (the next daily reset clears it)."""
        self._advance_day(now_ns)
        if self._state is not _HALTED:
            return self._refuse("rearm", "not halted", Source.OPERATOR, now_ns)
        if confirmation != self.config.rearm_confirmation:
            return self._refuse(
                "rearm",
                f"type {self.config.rearm_confirmation!r} to re-arm",
                Source.OPERATOR,
                now_ns,
            )
        daily = self._daily_pnl()
        if daily <= -self.config.limits.daily_loss_hard:
            return self._refuse(
                "rearm",
                f"daily PnL {daily:+,.2f} USDT is beyond the hard loss limit; re-arm after the "
                f"reset at {self.config.daily_reset_hour_utc:02d}:00 UTC",
                Source.OPERATOR,
                now_ns,
            )
        self._flatten_requested = False
        self._set_state(_PAUSED, "re-armed by the operator", Source.OPERATOR, now_ns)
        return CommandOutcome(True, "re-armed: paused")

    # Operator overrides, within the configured hard bounds

    def set_limits(self, overrides: RiskOverrides, now_ns: int) -> CommandOutcome:
        """Apply every override given, or none when any breaks the rules (`problems`); the
        text names each limit now in force, in the order of `_LIMIT_SETTERS`."""
        self._advance_day(now_ns)
        problems = overrides.problems(self.config.bounds)
        if problems:
            return self._refuse("set_limits", "; ".join(problems), Source.OPERATOR, now_ns)
        texts = []
        for value_of, setter in _LIMIT_SETTERS:
            value = value_of(overrides)
            if value is not None:
                texts.append(setter(self, value, now_ns))
        return CommandOutcome(True, "; ".join(texts))

    def _set_max_position(self, sizes: Mapping[str, float], now_ns: int) -> str:
        olds = {symbol: self._symbols[symbol].max_position_set for symbol in sizes}
        for symbol, size in sizes.items():
            self._symbols[symbol].max_position_set = float(size)
        self._apply_limits()
        for symbol, size in sizes.items():
            self._limit_changed(
                RiskLimit.MAX_POSITION, symbol, olds[symbol], size, Source.OPERATOR, now_ns
            )
        return "; ".join(
            f"{symbol} max position {exact(self._symbols[symbol].max_position_set)} "
            f"{base_coin(symbol)}"
            for symbol in sizes
        )

    def _set_max_net_delta(self, usdt: float, now_ns: int) -> str:
        old = self._max_net_delta_set
        self._max_net_delta_set = float(usdt)
        self._apply_limits()
        self._limit_changed(RiskLimit.MAX_NET_DELTA, None, old, usdt, Source.OPERATOR, now_ns)
        return f"max net delta {exact(self._max_net_delta_set)} USDT"

    def _set_max_slippage_bps(self, bps: float, now_ns: int) -> str:
        old = self._max_slippage_bps
        self._max_slippage_bps = float(bps)
        self._apply_limits()
        self._limit_changed(RiskLimit.MAX_SLIPPAGE_BPS, None, old, bps, Source.OPERATOR, now_ns)
        return f"max slippage {exact(self._max_slippage_bps)} bps"

    def _set_order_rate(self, rate: tuple[int, int], now_ns: int) -> str:
        per_second, per_minute = rate
        old_second, old_minute = self._orders_per_second, self._orders_per_minute
        self._orders_per_second, self._orders_per_minute = per_second, per_minute
        self._own_second = self._own_second.resized(per_second)
        self._own_minute = self._own_minute.resized(per_minute)
        operator = Source.OPERATOR
        self._limit_changed(
            RiskLimit.ORDERS_PER_SECOND, None, old_second, per_second, operator, now_ns
        )
        self._limit_changed(
            RiskLimit.ORDERS_PER_MINUTE, None, old_minute, per_minute, operator, now_ns
        )
        return f"order rate {self._orders_per_second}/s, {self._orders_per_minute}/min"

    def _set_risk_scale(self, scale: float, now_ns: int) -> str:
        self._change_risk_scale(float(scale), Source.OPERATOR, now_ns)
        return f"risk scale {exact(self._risk_scale)}"

    def _set_operator_hedge_ratio(self, ratio: float, now_ns: int) -> str:
        """The operator's hedge ratio, inside its band already (`problems`); Kev's next ratio
        moves it again, as Kev may lower the operator's risk scale."""
        return f"hedge ratio {exact(self._set_hedge_ratio(float(ratio), Source.OPERATOR, now_ns))}"

    def _set_betas(self, betas: Mapping[str, float], now_ns: int) -> str:
        """The operator's betas, inside their ranges already (`problems`); Kev's next beta for
        a symbol moves it again, as Kev may lower the operator's risk scale."""
        return "; ".join(
            f"beta {symbol} {exact(self._set_beta(symbol, float(beta), Source.OPERATOR, now_ns))}"
            for symbol, beta in betas.items()
        )

    # Kev

    def apply_kev_command(
        self,
        action: KevAction | str,
        risk_scale: float | None,
        hedge_ratio: float | None,
        now_ns: int,
        beta: tuple[str, float] | None = None,
    ) -> KevCommandOutcome:
        """Kev's portfolio command; `beta` is a quoted symbol and its new beta. A malformed one
        (unknown action, a risk scale outside [0, 1], a non-numeric hedge ratio or beta, a beta
        for a symbol that is not quoted) is refused whole. Otherwise each part is judged on its
        own: the risk scale may only go down, the hedge ratio and the beta are clamped into
        their bands (`RiskGatewayConfig.beta_range`), and the action may only tighten trading
        (REDUCE, FLATTEN, PAUSE_QUOTING from ACTIVE; REDUCE and FLATTEN also from REDUCING).
        Kev never leaves PAUSED or HALTED and never re-arms."""
        self._advance_day(now_ns)
        kev_action, malformed = _parse_kev_command(
            action, risk_scale, hedge_ratio, beta, self._beta_ranges
        )
        if kev_action is None:
            self._refuse("kev", malformed, Source.KEV, now_ns)
            return self._kev_outcome(False, action, (malformed,))

        notes: list[str] = []
        if risk_scale is not None:
            if risk_scale > self._risk_scale:
                text = (
                    f"Kev cannot raise the risk scale ({exact(self._risk_scale)} -> "
                    f"{exact(risk_scale)})"
                )
                notes.append(self._refuse("kev risk_scale", text, Source.KEV, now_ns).text)
            else:
                self._change_risk_scale(float(risk_scale), Source.KEV, now_ns)
        refused = bool(notes)
        if hedge_ratio is not None:
            applied = self._set_hedge_ratio(float(hedge_ratio), Source.KEV, now_ns)
            if applied != hedge_ratio:
                notes.append(f"hedge ratio {exact(hedge_ratio)} clamped to {exact(applied)}")
        beta_in_force = None
        if beta is not None:
            symbol, value = beta
            beta_in_force = self._set_beta(symbol, float(value), Source.KEV, now_ns)
            if beta_in_force != value:
                notes.append(f"beta {symbol} {exact(value)} clamped to {exact(beta_in_force)}")
        refusal = self._apply_kev_action(kev_action, now_ns)
        if refusal:
            refused = True
            notes.append(self._refuse(f"kev {kev_action.value}", refusal, Source.KEV, now_ns).text)
        return self._kev_outcome(not refused, kev_action, tuple(notes), beta_in_force)

    def _apply_kev_action(self, action: KevAction, now_ns: int) -> str:
        """Carry out Kev's action; the refusal text, or "" when done."""
        state = self._state
        if action is KevAction.HOLD or (action is KevAction.PAUSE_QUOTING and state is _PAUSED):
            return ""
        if state is _HALTED or state is _PAUSED:
            return f"Kev cannot leave {state.name}"
        if action is KevAction.REDUCE:
            if state is _ACTIVE:
                self._set_state(_REDUCING, "Kev: reduce", Source.KEV, now_ns)
            return ""
        if action is KevAction.FLATTEN:
            self._start_flatten("Kev: flatten", Source.KEV, now_ns)
            return ""
        if state is _REDUCING:
            return "PAUSE_QUOTING refused while REDUCING: pausing would stop the reduction"
        self._flatten_requested = False
        self._set_state(_PAUSED, "Kev: pause quoting", Source.KEV, now_ns)
        return ""

    def _kev_outcome(
        self,
        accepted: bool,
        action: KevAction | str,
        notes: tuple[str, ...],
        beta: float | None = None,
    ) -> KevCommandOutcome:
        return KevCommandOutcome(
            accepted, action, self._state, self._risk_scale, self._hedge_ratio, notes, beta
        )

    # The UI's view

    def snapshot(self) -> RiskSnapshot:
        limits = self.config.limits
        positions = tuple(
            PositionView(
                risk.symbol,
                risk.position,
                risk.entry_price,
                risk.mid,
                risk.position * risk.mid,
                risk.realized_pnl,
                risk.fees,
                risk.unrealized_pnl,
                risk.pending_buy,
                risk.pending_sell,
                risk.open_orders,
                risk.max_position_set * self._risk_scale,
                risk.max_notional_set * self._risk_scale,
                risk.delta_weight,
                risk.feed_healthy,
                risk.feed_reason,
                risk.mark_ns if risk.mark_ns != _NEVER_NS else 0,
                risk.aside_reason,
            )
            for risk in self._symbol_list
        )
        in_force = LimitsInForce(
            types.MappingProxyType({r.symbol: r.max_position_set for r in self._symbol_list}),
            self._max_net_delta_set,
            self._max_slippage_bps,
            limits.max_closing_slippage_bps,
            self._orders_per_second,
            self._orders_per_minute,
            self._max_open_orders,
            limits.daily_loss_soft,
            limits.daily_loss_hard,
        )
        counts = types.MappingProxyType(
            {reason: self._denial_counts[reason] for reason in DenialReason}
        )
        return RiskSnapshot(
            state=self._state,
            state_reason=self._state_reason,
            flatten_requested=self._flatten_requested,
            positions=positions,
            net_delta=sum(r.delta_weight * r.position * r.mid for r in self._symbol_list),
            net_delta_long_bound=self._net_long,
            net_delta_short_bound=self._net_short,
            max_net_delta=self._max_net_delta_set * self._risk_scale,
            gross_notional=sum(abs(r.position) * r.mid for r in self._symbol_list),
            realized_pnl=self._realized_total,
            fees=self._fees_total,
            unrealized_pnl=self._unrealized_total,
            daily_pnl=self._daily_pnl(),
            limits=in_force,
            risk_scale=self._risk_scale,
            hedge_symbol=self.config.hedge_symbol,
            hedge_ratio=self._hedge_ratio,
            betas=types.MappingProxyType({r.symbol: r.delta_weight for r in self._book_list}),
            denial_counts=counts,
            denials_total=sum(self._denial_counts),
            open_orders=self._open_count,
            unacknowledged_orders=self._open_count - len(self._acknowledged),
            cancel_requests=self._cancel_requests,
            cancels_over_endpoint_limit=self._cancels_over_endpoint_limit,
            unknown_order_updates=self._unknown_order_updates,
            invalid_inputs=self._invalid_inputs,
            events_dropped=self._outbox.dropped_total,
        )

    @property
    def state(self) -> TradingState:
        return self._state

    # What the desk reads on every quote and hedge: the snapshot's figures, without building
    # one (the whole snapshot costs ~30 us, most of a hedge check).

    def position(self, symbol: str) -> float:
        """The signed position (base coin), as `PositionView.size`."""
        return self._symbols[symbol].position

    def mark(self, symbol: str) -> float:
        """The mark (the mid; 0.0 before the first), as `PositionView.mark_price`."""
        return self._symbols[symbol].mid

    def stood_aside(self, symbol: str) -> str:
        """Why `symbol` alone takes no risk-increasing order, as `PositionView.stood_aside`."""
        return self._symbols[symbol].aside_reason

    def position_cap(self, symbol: str) -> float:
        """The largest position (base coin, either side) `check` lets a risk-increasing order
        reach now: the tighter of the max position and the max notional at the mark, both in
        force (times the risk scale: `PositionView.max_position`, `.max_notional`); the max
        position alone before the first mark. Quotes and the hedge are sized to it, so they
        ask for what the gate allows."""
        risk = self._symbols[symbol]
        scale = self._risk_scale
        cap = risk.max_position_set * scale
        notional = risk.max_notional_set * scale
        mid = risk.mid
        return notional / mid if cap * mid > notional else cap

    @property
    def risk_scale(self) -> float:
        return self._risk_scale

    @property
    def hedge_ratio(self) -> float:
        return self._hedge_ratio

    def book_delta(self) -> float | None:
        """The beta-weighted notional (USDT at the mids) of every symbol but the hedge: what
        the hedge offsets; None while a symbol that holds a position has no mid yet."""
        delta = 0.0
        for risk in self._book_list:
            if risk.position:
                if risk.mid <= 0.0:
                    return None
                delta += risk.delta_weight * risk.position * risk.mid
        return delta

    def has_order_room(self, now_ns: int, spare: int = 0) -> bool:
        """Whether a risk-increasing order now would pass our own pace and Bitget's place-order
        limit with `spare` more orders (at most all but one of a window) still to go: a book of
        symbols asks before it quotes, so its requotes wait for room instead of being denied,
        and leaves the hedge the spare."""
        return (
            self._own_second.admits(now_ns, spare)
            and self._own_minute.admits(now_ns, spare)
            and self._place_order.admits(now_ns, spare)
        )

    def net_delta_fits(self, symbol: str, side: OrderSide, size: float) -> bool:
        """Whether a risk-increasing order of `size` on `side` keeps the book's net delta (every
        resting order filled) inside the limit, as `check` tests it: a quote asks first, so the
        limit holds it back instead of denying it on every book."""
        risk = self._symbols[symbol]
        delta = risk.delta_weight * size * risk.mid
        if side is OrderSide.BUY:
            return self._net_long + delta <= self._max_net_delta
        return self._net_short - delta >= -self._max_net_delta

    @property
    def max_slippage_bps(self) -> float:
        return self._max_slippage_bps

    @property
    def flatten_requested(self) -> bool:
        return self._flatten_requested

    # Internals

    def _set_state(self, new: TradingState, reason: str, source: Source, now_ns: int) -> None:
        old = self._state
        if new is old:
            return
        self._state = new
        self._state_reason = reason
        self._outbox.append(TradingStateChanged(old, new, reason, source, now_ns))

    def _refuse(self, command: str, text: str, source: Source, now_ns: int) -> CommandOutcome:
        self._outbox.append(CommandRejected(command, text, source, now_ns))
        return CommandOutcome(False, text)

    def _limit_changed(
        self,
        limit: RiskLimit,
        symbol: str | None,
        old: float,
        new: float,
        source: Source,
        now_ns: int,
    ) -> None:
        if old != new:
            self._outbox.append(RiskLimitChanged(limit, symbol, old, float(new), source, now_ns))

    def _start_flatten(self, reason: str, source: Source, now_ns: int) -> None:
        self._flatten_requested = True
        if self._all_flat():
            self._flatten_requested = False
            self._set_state(_PAUSED, f"{reason}: already flat", source, now_ns)
        else:
            self._set_state(_REDUCING, reason, source, now_ns)
            self._state_reason = reason

    def _check_flatten_done(self, now_ns: int) -> None:
        if self._flatten_requested and self._state is _REDUCING and self._all_flat():
            self._flatten_requested = False
            self._set_state(_PAUSED, "flat: flatten complete", Source.RISK, now_ns)

    def _all_flat(self) -> bool:
        return all(not risk.position for risk in self._symbol_list)

    def _set_hedge_ratio(self, ratio: float, source: Source, now_ns: int) -> float:
        """Clamp into the band, apply, and return the ratio now in force."""
        low, high = self.config.hedge_ratio_band
        clamped = min(max(ratio, low), high)
        old = self._hedge_ratio
        if clamped != old:
            self._hedge_ratio = clamped
            hedge = self._symbols.get(self.config.hedge_symbol or "")
            if hedge is not None:
                hedge.delta_weight = clamped
            self._refresh_exposure()
            self._limit_changed(RiskLimit.HEDGE_RATIO, None, old, clamped, source, now_ns)
        return clamped

    def _set_beta(self, symbol: str, beta: float, source: Source, now_ns: int) -> float:
        """Clamp a quoted symbol's beta into its range, apply, and return the beta now in
        force (the weight the net delta, its limit and `book_delta` read)."""
        low, high = self._beta_ranges[symbol]
        clamped = min(max(beta, low), high)
        risk = self._symbols[symbol]
        old = risk.delta_weight
        if clamped != old:
            risk.delta_weight = clamped
            self._refresh_exposure()
            self._limit_changed(RiskLimit.BETA, symbol, old, clamped, source, now_ns)
        return clamped

    def _change_risk_scale(self, scale: float, source: Source, now_ns: int) -> None:
        old = self._risk_scale
        self._risk_scale = scale
        self._apply_limits()
        self._limit_changed(RiskLimit.RISK_SCALE, None, old, scale, source, now_ns)

    def _apply_limits(self) -> None:
        """Precompute every limit the hot path compares against."""
        scale = self._risk_scale * (1.0 + _LIMIT_TOLERANCE)
        for risk in self._symbol_list:
            risk.max_position = risk.max_position_set * scale
            risk.max_notional = risk.max_notional_set * scale
            self._set_price_bands(risk)
        self._max_net_delta = self._max_net_delta_set * scale

    def _set_price_bands(self, risk: _SymbolRisk) -> None:
        low = min(risk.mid, risk.microprice)
        high = max(risk.mid, risk.microprice)
        band = self._max_slippage_bps * _BPS
        closing_band = self.config.limits.max_closing_slippage_bps * _BPS
        risk.max_buy_price = low * (1.0 + band)
        risk.min_sell_price = high * (1.0 - band)
        risk.max_closing_buy_price = low * (1.0 + closing_band)
        risk.min_closing_sell_price = high * (1.0 - closing_band)

    def _close_order(self, client_oid: str) -> None:
        intent = self._open_intents.pop(client_oid, None)
        if intent is None:
            self._unknown_order_updates += 1
            return
        remaining = self._open_remaining.pop(client_oid)
        self._acknowledged.discard(client_oid)
        self._open_count -= 1
        risk = self._symbols[intent.symbol]
        risk.open_orders -= 1
        if risk.open_orders == 0:
            # Exactly zero, not the sum of many float additions and subtractions.
            risk.pending_buy = risk.pending_sell = 0.0
        elif intent.side is _BUY:
            risk.pending_buy -= remaining
        else:
            risk.pending_sell -= remaining
        self._refresh_exposure()

    def _apply_fill(
        self, risk: _SymbolRisk, side: OrderSide, size: float, price: float, fee: float
    ) -> None:
        """One-way position accounting: average entry on the way up, realized PnL on the way
        down, a flip reopens at the fill price."""
        old = risk.position
        quantity = size if side is _BUY else -size
        if old == 0 or (old > 0) == (quantity > 0):
            risk.entry_price = (abs(old) * risk.entry_price + size * price) / (abs(old) + size)
        else:
            closed = min(size, abs(old))
            realized = closed * (price - risk.entry_price) * (1.0 if old > 0 else -1.0)
            risk.realized_pnl += realized
            self._realized_total += realized
            if size > abs(old):
                risk.entry_price = price
        risk.position = round(old + quantity, _SIZE_DECIMALS)
        if risk.position == 0:
            risk.entry_price = 0.0
        risk.fees += fee
        self._fees_total += fee

    def _refresh_exposure(self) -> None:
        """Recompute unrealized PnL and the net delta bounds from scratch (outside the hot
        path, this also clears the rounding the incremental updates accumulate)."""
        unrealized_total = net_long = net_short = 0.0
        for risk in self._symbol_list:
            position = risk.position
            mark = risk.mid or risk.entry_price
            risk.unrealized_pnl = position * (mark - risk.entry_price) if position else 0.0
            unrealized_total += risk.unrealized_pnl
            weight = risk.delta_weight * risk.mid
            risk.net_long = weight * (position + risk.pending_buy)
            risk.net_short = weight * (position - risk.pending_sell)
            net_long += risk.net_long
            net_short += risk.net_short
        self._unrealized_total = unrealized_total
        self._net_long = net_long
        self._net_short = net_short

    def _daily_pnl(self) -> float:
        return self._realized_total - self._fees_total + self._unrealized_total - self._day_base_pnl

    def _check_daily_loss(self, now_ns: int) -> None:
        """The hard level halts; the soft level switches ACTIVE to REDUCING once per crossing
        (an operator who resumes is not pushed back at the next mark; the hard level is the
        backstop)."""
        daily = self._daily_pnl()
        limits = self.config.limits
        if daily <= -limits.daily_loss_hard:
            if self._state is not _HALTED:
                self._set_state(
                    _HALTED,
                    f"daily loss {-daily:,.2f} USDT reached the hard limit "
                    f"{limits.daily_loss_hard:,.2f} USDT",
                    Source.RISK,
                    now_ns,
                )
        elif daily <= -limits.daily_loss_soft:
            if not self._soft_loss_tripped:
                self._soft_loss_tripped = True
                if self._state is _ACTIVE:
                    self._set_state(
                        _REDUCING,
                        f"daily loss {-daily:,.2f} USDT reached the soft limit "
                        f"{limits.daily_loss_soft:,.2f} USDT",
                        Source.RISK,
                        now_ns,
                    )
        else:
            self._soft_loss_tripped = False

    def _advance_day(self, now_ns: int) -> None:
        if now_ns >= self._next_day_ns:
            self._start_day(now_ns)

    def _start_day(self, now_ns: int) -> None:
        """Start the daily loss counter at the configured UTC hour (the first input starts the
        first day)."""
        offset = self.config.daily_reset_hour_utc * _HOUR_NS
        day_start = (now_ns - offset) // _DAY_NS * _DAY_NS + offset
        if self._day_started:
            self._outbox.append(DailyPnlReset(self._daily_pnl(), now_ns))
        self._day_started = True
        self._day_base_pnl = self._realized_total - self._fees_total + self._unrealized_total
        self._next_day_ns = day_start + _DAY_NS
        self._soft_loss_tripped = False


_LIMIT_SETTERS: tuple[tuple[Callable[[RiskOverrides], Any], Callable[..., str]], ...] = (
    (lambda overrides: overrides.max_position or None, RiskGateway._set_max_position),
    (attrgetter("max_net_delta"), RiskGateway._set_max_net_delta),
    (attrgetter("max_slippage_bps"), RiskGateway._set_max_slippage_bps),
    (attrgetter("order_rate"), RiskGateway._set_order_rate),
    (attrgetter("risk_scale"), RiskGateway._set_risk_scale),
    (attrgetter("hedge_ratio"), RiskGateway._set_operator_hedge_ratio),
    (lambda overrides: overrides.betas or None, RiskGateway._set_betas),
)
"""Each override the operator may give (None: not given) and how the gateway applies it."""
