"""QuotingStrategy: where to quote, how much, and how to hedge (pure and deterministic).

Quotes. With the touch (b, B, a, A) (prices and sizes), microprice m = (b*A + a*B) / (B + A),
position q and cap Q, the gateway's own (`RiskGateway.position_cap`: the tighter of its max
position and max notional at its mark, both in force, so a quote never asks past its gate):
    centre = m * (1 - skew * clamp(q / Q, -1, 1) / 1e4)
    bid    = floor_to_tick(centre * (1 - half_spread / 1e4)), at most a - tick (post only)
    ask    = ceil_to_tick(centre * (1 + half_spread / 1e4)), at least b + tick
    size   = floor_to_lot(min(quote_size * risk_scale, max order size)), the bid capped by
             Q - q, the ask by Q + q
A long position lowers both quotes (the ask gets hit sooner, the bid later); a side with less
than one lot of room, or below the minimum notional, is not quoted. In REDUCING only the side
that shrinks the position is quoted (reduce-only, at most the position); in PAUSED and HALTED
nothing is.

Laya's intents: CANCEL_ALL cancels everything and starts the cooldown; STAND_ASIDE (Laya warming
up) quotes nothing, without a cooldown; PULL_ASKS / PULL_BIDS drop that side; KEEP_QUOTING quotes
both.

Hedge (BookHedger). The book's delta D = sum_s beta_s * q_s * m_s over the quoted symbols (the
risk gateway's weights), net delta = D + h * q_H * m_H with h the hedge ratio in force. Beyond
the deadband the hedge trades towards q_H* = -D / (h * m_H), rounded to the lot, with an IOC
limit `slippage_bps` through the touch, kept inside the gateway's slippage band. The order never
asks for what the gateway's caps on the hedge deny: it is at most the max order size and keeps
|q_H| within the gateway's position cap Q_H on the hedge; with q_H* beyond Q_H the net delta
left with the hedge at its cap is the plan's `unhedged`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from engine.bitget.orders import OrderSide
from engine.laya.decide import QuoteIntent
from engine.market.instruments import Instrument
from engine.risk.events import TradingState
from engine.risk.limits import SymbolLimits
from engine.trading.config import HedgeConfig, QuotingStrategyConfig

_BPS = 1e-4
_GRID_SLACK = 1e-9
"""A price or size this close to the grid (in ticks or lots) is on it: float noise only."""

_ACTIVE = TradingState.ACTIVE
_REDUCING = TradingState.REDUCING
_KEEP_QUOTING = QuoteIntent.KEEP_QUOTING
_PULL_ASKS = QuoteIntent.PULL_ASKS
_PULL_BIDS = QuoteIntent.PULL_BIDS
_CANCEL_ALL = QuoteIntent.CANCEL_ALL
_STAND_ASIDE = QuoteIntent.STAND_ASIDE
_new_tuple = tuple.__new__  # skips NamedTuple's Python-level __new__ on the quote path


class Quote(NamedTuple):
    """One side's wanted resting order."""

    price: float
    size: float
    reduce_only: bool = False


class QuotePlan(NamedTuple):
    """What should rest now: None on a side means nothing (cancel what rests there)."""

    bid: Quote | None
    ask: Quote | None


class HedgeOrder(NamedTuple):
    side: OrderSide
    size: float
    price: float
    reduce_only: bool
    net_delta: float
    """The net delta (USDT) the order is meant to take back towards zero."""


class HedgePlan(NamedTuple):
    """The hedge order wanted now (None: none), the net delta (USDT) left with the hedge at its
    cap when its target lies beyond (0.0: the hedge can take all of it) and that cap (base
    coin, either way)."""

    order: HedgeOrder | None
    unhedged: float
    position_cap: float


NO_QUOTES = QuotePlan(None, None)


class Grid:
    """Rounding onto an instrument's price ticks and size lots.

    n ticks are the decimal n * tick: with the tick `units` of the last of its `decimals`
    (0.1 is 1 of 10**-1, 0.25 is 25 of 10**-2), that is the integer n * units over 10**decimals,
    and one float division gives the double nearest it, which is what round(n * tick, decimals)
    gives too (the product is that decimal within float noise), in a tenth of the time
    (round with digits formats the float in decimal)."""

    __slots__ = (
        "_lot_units",
        "_price_scale",
        "_size_scale",
        "_tick_units",
        "lot",
        "min_notional",
        "price_decimals",
        "size_decimals",
        "tick",
    )

    def __init__(self, instrument: Instrument) -> None:
        self.tick = instrument.tick_size
        self.lot = instrument.size_step
        self.min_notional = instrument.min_notional
        self.price_decimals = instrument.price_decimals
        self.size_decimals = instrument.size_decimals
        self._price_scale = 10.0**self.price_decimals
        self._tick_units = round(self.tick * self._price_scale)
        self._size_scale = 10.0**self.size_decimals
        self._lot_units = round(self.lot * self._size_scale)

    def floor_price(self, price: float) -> float:
        ticks = math.floor(price / self.tick + _GRID_SLACK)
        return ticks * self._tick_units / self._price_scale

    def ceil_price(self, price: float) -> float:
        ticks = math.ceil(price / self.tick - _GRID_SLACK)
        return ticks * self._tick_units / self._price_scale

    def floor_size(self, size: float) -> float:
        """Whole lots at or below `size` (0.0 below one lot)."""
        if size <= 0:
            return 0.0
        return math.floor(size / self.lot + _GRID_SLACK) * self._lot_units / self._size_scale

    def round_size(self, size: float) -> float:
        return round(size / self.lot) * self._lot_units / self._size_scale


class QuotingStrategy:
    """One symbol's quotes from its market, its position and the trading state.

    Its only memory is time: the EMERGENCY cooldown and each side's backoff after a denial,
    so the same inputs at the same `now_ns` always give the same answer (the last one is kept
    and given again while the inputs stay the same).
    """

    def __init__(
        self,
        config: QuotingStrategyConfig,
        instrument: Instrument,
        limits: SymbolLimits,
    ) -> None:
        """`limits`: the gateway's caps on the symbol; no quote asks past its max order size
        (the gateway would deny it). The position cap comes with each call (it follows the
        mark, the operator and Kev)."""
        if instrument.symbol != config.symbol:
            raise ValueError(f"instrument {instrument.symbol} is not the quoted {config.symbol}")
        self.config = config
        self.grid = Grid(instrument)
        self._max_order_size = limits.max_order_size
        self._half_spread = config.half_spread_bps * _BPS
        self._skew = config.inventory_skew_bps * _BPS
        self._cooldown_ns = config.emergency_cooldown_ms * 1_000_000
        self._backoff_ns = config.denial_backoff_ms * 1_000_000
        self.cooldown_until_ns = 0
        self._bid_backoff_until_ns = 0
        self._ask_backoff_until_ns = 0
        self._last_inputs: tuple | None = None
        self._last_plan = NO_QUOTES

    def change_grid(self, instrument: Instrument) -> None:
        """Quote on `instrument`'s new grid from the next plan on."""
        if instrument.symbol != self.config.symbol:
            raise ValueError(f"{instrument.symbol} is not the quoted {self.config.symbol}")
        self.grid = Grid(instrument)
        self._last_inputs = None

    # Time-based memory

    def on_emergency(self, now_ns: int) -> None:
        """EMERGENCY: nothing is quoted until the cooldown has passed (each one restarts it)."""
        self.cooldown_until_ns = now_ns + self._cooldown_ns

    def in_cooldown(self, now_ns: int) -> bool:
        return now_ns < self.cooldown_until_ns

    def on_denied(self, side: OrderSide, now_ns: int) -> None:
        """The gateway refused a quote on `side`: do not ask again before the backoff."""
        if side is OrderSide.BUY:
            self._bid_backoff_until_ns = now_ns + self._backoff_ns
        else:
            self._ask_backoff_until_ns = now_ns + self._backoff_ns

    # Quotes

    def quotes(
        self,
        bid_price: float,
        bid_size: float,
        ask_price: float,
        ask_size: float,
        position: float,
        position_cap: float,
        risk_scale: float,
        state: TradingState,
        intent: QuoteIntent,
        now_ns: int,
        extra_skew_bps: float = 0.0,
    ) -> QuotePlan:
        """The quotes wanted now (see the module docstring for the formulas). `position_cap`:
        the gateway's (`RiskGateway.position_cap`); `risk_scale` scales the quote size;
        `extra_skew_bps` (Kev's quote skew) moves both quotes up when positive."""
        if intent is _CANCEL_ALL or intent is _STAND_ASIDE or now_ns < self.cooldown_until_ns:
            return NO_QUOTES
        if state is not _ACTIVE and state is not _REDUCING:
            return NO_QUOTES
        if not (0.0 < bid_price < ask_price) or not (bid_size > 0.0 and ask_size > 0.0):
            return NO_QUOTES
        bid_open = intent is not _PULL_BIDS and now_ns >= self._bid_backoff_until_ns
        ask_open = intent is not _PULL_ASKS and now_ns >= self._ask_backoff_until_ns
        # Most books leave the touch as it was (70% of a coin-margined recording's): the same
        # inputs give the same plan.
        inputs = (
            bid_price,
            bid_size,
            ask_price,
            ask_size,
            position,
            position_cap,
            risk_scale,
            state,
            extra_skew_bps,
            bid_open,
            ask_open,
        )
        if inputs == self._last_inputs:
            return self._last_plan
        plan = self._plan(*inputs)
        self._last_inputs = inputs
        self._last_plan = plan
        return plan

    def _plan(
        self,
        bid_price: float,
        bid_size: float,
        ask_price: float,
        ask_size: float,
        position: float,
        position_cap: float,
        risk_scale: float,
        state: TradingState,
        extra_skew_bps: float,
        bid_open: bool,
        ask_open: bool,
    ) -> QuotePlan:
        grid = self.grid
        size = grid.floor_size(min(self.config.quote_size * risk_scale, self._max_order_size))
        if size <= 0.0:
            return NO_QUOTES
        microprice = (bid_price * ask_size + ask_price * bid_size) / (bid_size + ask_size)
        inventory = position / position_cap if position_cap > 0.0 else 0.0
        inventory = -1.0 if inventory < -1.0 else (1.0 if inventory > 1.0 else inventory)
        centre = microprice * (1.0 - self._skew * inventory + extra_skew_bps * _BPS)
        if state is _REDUCING:
            bid_room = -position if position < 0.0 else 0.0
            ask_room = position if position > 0.0 else 0.0
            reduce_only = True
        else:
            bid_room = position_cap - position
            ask_room = position_cap + position
            reduce_only = False

        bid = None
        if bid_open:
            # min(size, room) on the grid: `size` is on it already.
            bid_quantity = grid.floor_size(bid_room) if bid_room < size else size
            price = min(
                grid.floor_price(centre * (1.0 - self._half_spread)),
                grid.floor_price(ask_price - grid.tick),
            )
            if bid_quantity > 0.0 and price > 0.0 and price * bid_quantity >= grid.min_notional:
                bid = _new_tuple(Quote, (price, bid_quantity, reduce_only))
        ask = None
        if ask_open:
            ask_quantity = grid.floor_size(ask_room) if ask_room < size else size
            price = max(
                grid.ceil_price(centre * (1.0 + self._half_spread)),
                grid.ceil_price(bid_price + grid.tick),
            )
            if ask_quantity > 0.0 and price * ask_quantity >= grid.min_notional:
                ask = _new_tuple(Quote, (price, ask_quantity, reduce_only))
        return _new_tuple(QuotePlan, (bid, ask))

    def wants_requote(self, resting_price: float, resting_size: float, wanted: Quote) -> bool:
        """Replace a resting quote only when it drifted enough to matter (churn costs rate
        budget and queue position)."""
        config = self.config
        if abs(wanted.price - resting_price) > resting_price * config.requote_threshold_bps * _BPS:
            return True
        return abs(wanted.size - resting_size) > resting_size * config.requote_size_fraction


class BookHedger:
    """The hedge order that brings the book's net delta back inside the deadband (pure)."""

    def __init__(self, config: HedgeConfig, instrument: Instrument, limits: SymbolLimits) -> None:
        """`limits`: the gateway's caps on the hedge symbol (see `QuotingStrategy`)."""
        if instrument.symbol != config.symbol:
            raise ValueError(f"instrument {instrument.symbol} is not the hedge {config.symbol}")
        self.config = config
        self.grid = Grid(instrument)
        self._max_order_size = limits.max_order_size

    def change_grid(self, instrument: Instrument) -> None:
        """Hedge on `instrument`'s new grid from the next order on."""
        if instrument.symbol != self.config.symbol:
            raise ValueError(f"{instrument.symbol} is not the hedge {self.config.symbol}")
        self.grid = Grid(instrument)

    def plan(
        self,
        book_delta: float,
        hedge_position: float,
        hedge_best_bid: float,
        hedge_best_ask: float,
        hedge_microprice: float,
        hedge_ratio: float,
        max_slippage_bps: float,
        state: TradingState,
        position_cap: float,
    ) -> HedgePlan | None:
        """The IOC order that brings net delta back inside the deadband, as far as the hedge's
        caps allow; None while the hedge does not trade (not ACTIVE or REDUCING, no market, a
        hedge ratio of 0). `book_delta`: the quoted symbols' beta-weighted notional
        (`RiskGateway.book_delta`); `position_cap`: the gateway's on the hedge
        (`RiskGateway.position_cap`)."""
        grid = self.grid
        if state is not _ACTIVE and state is not _REDUCING:
            return None
        if not (0.0 < hedge_best_bid < hedge_best_ask) or hedge_ratio <= 0.0:
            return None
        hedge_mid = 0.5 * (hedge_best_bid + hedge_best_ask)
        target = -book_delta / (hedge_ratio * hedge_mid)
        buy = target > hedge_position
        # The furthest towards the target the cap lets the hedge go (not back, if a lower cap
        # left it beyond).
        if buy:
            reach = min(target, max(hedge_position, position_cap))
            room = position_cap - hedge_position
        else:
            reach = max(target, min(hedge_position, -position_cap))
            room = position_cap + hedge_position
        unhedged = book_delta + hedge_ratio * reach * hedge_mid if reach != target else 0.0
        net_delta = book_delta + hedge_ratio * hedge_position * hedge_mid
        if abs(net_delta) <= self.config.deadband_usdt:
            return HedgePlan(None, unhedged, position_cap)
        # The gateway bounds the position plus what rests on its side: nothing rests on the
        # hedge symbol here (it is not quoted, one hedge at a time, closing orders only in a
        # kill or flatten, which stops the hedge). A reducing order is always within `room`.
        size = grid.floor_size(
            min(grid.round_size(abs(target - hedge_position)), room, self._max_order_size)
        )
        if size <= 0.0:
            return HedgePlan(None, unhedged, position_cap)
        # Shrinking the hedge without flipping it is reduce-only, which REDUCING allows.
        reduce_only = (hedge_position < 0.0 and buy and size <= -hedge_position) or (
            hedge_position > 0.0 and not buy and size <= hedge_position
        )
        if state is _REDUCING and not reduce_only:
            return HedgePlan(None, unhedged, position_cap)
        slippage = self.config.slippage_bps * _BPS
        band = max_slippage_bps * _BPS
        if buy:
            limit = min(
                hedge_best_ask * (1.0 + slippage), min(hedge_mid, hedge_microprice) * (1.0 + band)
            )
            price = grid.floor_price(limit)
        else:
            limit = max(
                hedge_best_bid * (1.0 - slippage), max(hedge_mid, hedge_microprice) * (1.0 - band)
            )
            price = grid.ceil_price(limit)
        if price <= 0.0 or price * size < grid.min_notional:
            return HedgePlan(None, unhedged, position_cap)
        side = OrderSide.BUY if buy else OrderSide.SELL
        order = HedgeOrder(side, size, price, reduce_only, net_delta)
        return HedgePlan(order, unhedged, position_cap)
