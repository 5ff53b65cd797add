"""Paper matching of our orders against an external market (pure logic, no I/O).

The market arrives as plain inputs, so the same engine serves the simulator and paper trading on
real data: `on_book` with best-first numpy arrays and `on_trade` with the aggressor side. Our
orders are virtual: they never change the displayed book, and never match each other.

Taking liquidity: a marketable order walks the displayed opposite levels up to its limit, at the
taker fee. Liquidity we take is remembered until the next book, so two quick orders cannot both
take the same displayed size.

Queue model for resting orders (maker fee):
- On placement an order joins the back of its price level: `queue_ahead` is the displayed size
  there (zero when it improves on the best price; set at the first book that shows the level when
  it rests deeper than the displayed depth). Our own orders at one price keep time priority.
- A trade at our price by the opposite aggressor eats `queue_ahead` first; the rest of its size
  fills our orders in time order (whole lots, partial fills allowed).
- When the displayed size at our price shrinks by more than the volume traded there since the
  previous book, the difference is taken as cancellations spread uniformly over the queue, so
  `queue_ahead` shrinks by the same proportion. Growth joins behind us. `queue_ahead` never exceeds
  the displayed size.
- If the market trades through our price (a print beyond it) or the opposite best reaches it, the
  whole remainder fills at our price.

Positions are one-way per symbol and live in `SimAccount`, which every fill updates. A reduce-only
order is capped at fill time to the position it reduces, so it can never flip the position.

An optional listener sees every change to an order as an `OrderEvent`, in the order they happen:
the order created (live), each fill, and a cancel. The simulator's private websocket pushes them.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from engine.bitget.orders import OrderSide, OrderStatus, OrderType, TimeInForce
from engine.market.instruments import Instrument

_LOT_EPSILON = 1e-9
FIRST_ORDER_ID = 1_300_000_000_000_000_000
FIRST_FILL_ID = 1_400_000_000_000_000_000
_CLOSED_ORDERS_KEPT = 10_000


class Liquidity(enum.StrEnum):
    MAKER = "maker"
    TAKER = "taker"


class OrderRejected(Exception):
    """An order refused before it existed, with the Bitget code the exchange would send."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class IdSequence:
    """Unique increasing numeric ids as strings, like Bitget's order and trade ids."""

    def __init__(self, first: int) -> None:
        self._counter = itertools.count(first)

    def next(self) -> str:
        return str(next(self._counter))


@dataclass(frozen=True, slots=True)
class OrderRequest:
    """What a client asks for; prices and sizes in quote/base units."""

    side: OrderSide
    order_type: OrderType
    size: float
    price: float | None = None
    force: TimeInForce = TimeInForce.GTC
    reduce_only: bool = False
    client_oid: str | None = None
    flash_close: bool = False
    """Bitget's flash close: the whole position at market, which no minimum amount refuses."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.size) and self.size > 0):
            raise ValueError(f"size must be a positive number, got {self.size!r}")
        if self.order_type is OrderType.LIMIT:
            if self.price is None:
                raise ValueError("a limit order needs a price")
            if not (math.isfinite(self.price) and self.price > 0):
                raise ValueError(f"price must be a positive number, got {self.price!r}")


class Order(NamedTuple):
    """A snapshot of one order's state."""

    order_id: str
    client_oid: str
    symbol: str
    side: OrderSide
    order_type: OrderType
    force: TimeInForce
    price: float | None
    size: float
    filled_size: float
    average_price: float
    fee: float
    status: OrderStatus
    reduce_only: bool
    created_ms: int
    updated_ms: int
    cancel_reason: str

    @property
    def remaining_size(self) -> float:
        return self.size - self.filled_size


class Fill(NamedTuple):
    """One execution of our order; `fee` is a cost in quote currency (USDT)."""

    order_id: str
    client_oid: str
    symbol: str
    side: OrderSide
    price: float
    size: float
    fee: float
    liquidity: Liquidity
    ts_ms: int
    trade_id: str


class SubmitResult(NamedTuple):
    order: Order
    fills: list[Fill]


class OrderEvent(NamedTuple):
    """One change to an order: created (no fill, status live), filled by `fill`, or canceled."""

    order: Order
    """The order's state right after the change."""
    fill: Fill | None
    realized_pnl: float
    """USDT the fill realised on the position (0 without a fill, or when it only opened)."""


OrderListener = Callable[[OrderEvent], None]


@dataclass(frozen=True, slots=True)
class MatchingEngineConfig:
    instrument: Instrument
    maker_fee_rate: float = 0.0002
    taker_fee_rate: float = 0.0006

    def __post_init__(self) -> None:
        for name in ("maker_fee_rate", "taker_fee_rate"):
            value = getattr(self, name)
            if not (math.isfinite(value) and -0.01 <= value <= 0.01):
                raise ValueError(f"{name} must be within -1%..1% of notional, got {value!r}")


@dataclass(frozen=True, slots=True)
class SimAccountConfig:
    initial_balance: float = 10_000.0
    """USDT."""
    leverage: int = 20
    maintenance_margin_rate: float = 0.004

    def __post_init__(self) -> None:
        if not (math.isfinite(self.initial_balance) and self.initial_balance > 0):
            raise ValueError(f"initial_balance must be positive, got {self.initial_balance!r}")
        if not 1 <= self.leverage <= 125:
            raise ValueError(f"leverage must be within 1..125, got {self.leverage}")
        if not 0 <= self.maintenance_margin_rate < 1:
            raise ValueError(
                f"maintenance_margin_rate must be within [0, 1), got {self.maintenance_margin_rate}"
            )


class Position(NamedTuple):
    """A one-way position: `size` > 0 long, < 0 short; PnL and fees in USDT."""

    symbol: str
    size: float
    entry_price: float
    realized_pnl: float
    fees: float
    mark_price: float
    opened_ms: int
    updated_ms: int

    @property
    def unrealized_pnl(self) -> float:
        return self.size * (self.mark_price - self.entry_price) if self.size else 0.0


@dataclass(slots=True)
class _PositionState:
    size: float = 0.0
    entry_price: float = 0.0
    realized_pnl: float = 0.0
    fees: float = 0.0
    mark_price: float = 0.0
    opened_ms: int = 0
    updated_ms: int = 0


class SimAccount:
    """A USDT-margined account holding one-way positions, updated by fills."""

    def __init__(self, config: SimAccountConfig | None = None) -> None:
        self.config = config or SimAccountConfig()
        self._positions: dict[str, _PositionState] = {}

    def apply_fill(self, fill: Fill) -> float:
        """Update the position; returns the PnL (USDT, before fees) this fill realised."""
        state = self._positions.setdefault(fill.symbol, _PositionState())
        quantity = fill.side.sign * fill.size
        old = state.size
        realized = 0.0
        if old == 0 or (old > 0) == (quantity > 0):
            total = abs(old) + abs(quantity)
            state.entry_price = (abs(old) * state.entry_price + abs(quantity) * fill.price) / total
            if old == 0:
                state.opened_ms = fill.ts_ms
        else:
            closing = min(abs(quantity), abs(old))
            realized = closing * (fill.price - state.entry_price) * math.copysign(1, old)
            state.realized_pnl += realized
            if abs(quantity) > abs(old):
                state.entry_price = fill.price
                state.opened_ms = fill.ts_ms
        state.size = round(old + quantity, 12)
        if state.size == 0:
            state.entry_price = 0.0
        state.fees += fill.fee
        if state.mark_price == 0:
            state.mark_price = fill.price
        state.updated_ms = fill.ts_ms
        return realized

    def mark(self, symbol: str, price: float) -> None:
        """Set the mark price used for unrealized PnL."""
        state = self._positions.get(symbol)
        if state is None:  # not setdefault: that builds a state on every book
            state = self._positions[symbol] = _PositionState()
        state.mark_price = price

    def position(self, symbol: str) -> Position:
        state = self._positions.get(symbol) or _PositionState()
        return Position(
            symbol,
            state.size,
            state.entry_price,
            state.realized_pnl,
            state.fees,
            state.mark_price,
            state.opened_ms,
            state.updated_ms,
        )

    def positions(self) -> list[Position]:
        """Open (non-flat) positions."""
        return [self.position(symbol) for symbol, state in self._positions.items() if state.size]

    @property
    def realized_pnl(self) -> float:
        return sum(state.realized_pnl for state in self._positions.values())

    @property
    def fees(self) -> float:
        return sum(state.fees for state in self._positions.values())

    @property
    def balance(self) -> float:
        """Initial balance plus realized PnL minus fees."""
        return self.config.initial_balance + self.realized_pnl - self.fees

    @property
    def equity(self) -> float:
        return self.balance + sum(self.position(s).unrealized_pnl for s in self._positions)

    def openable_notional(self, symbol: str) -> float:
        """Notional `symbol` may reach: equity times leverage, less other symbols' exposure."""
        others = sum(
            abs(state.size) * state.mark_price
            for other, state in self._positions.items()
            if other != symbol
        )
        return max(0.0, self.equity * self.config.leverage - others)


@dataclass(slots=True)
class _WorkingOrder:
    order_id: str
    client_oid: str
    side: OrderSide
    order_type: OrderType
    force: TimeInForce
    price_ticks: int | None
    size_lots: int
    reduce_only: bool
    created_ms: int
    priority: int
    updated_ms: int = 0
    filled_lots: int = 0
    filled_notional: float = 0.0
    fee: float = 0.0
    status: OrderStatus = OrderStatus.LIVE
    cancel_reason: str = ""
    queue_ahead: float | None = None
    last_displayed: float | None = None
    traded_since_book: float = 0.0
    fills: list[Fill] = field(default_factory=list)

    @property
    def remaining_lots(self) -> int:
        return self.size_lots - self.filled_lots


class _DisplayedSide:
    """One side of the last external book (prices and sizes, best first), with what we took
    from it. Levels become ticks and lots only when an order needs them: most books meet no
    order of ours (the paper venue sees every book of a backtest)."""

    __slots__ = ("_lots", "_prices", "_sizes", "_step", "_tick", "_ticks", "taken")

    def __init__(self, prices: list[float], sizes: list[float], tick: float, step: float):
        self._prices = prices
        self._sizes = sizes
        self._tick = tick
        self._step = step
        self._ticks: list[int] | None = None
        self._lots: list[float] | None = None
        self.taken: dict[int, float] = {}

    @property
    def ticks(self) -> list[int]:
        if self._ticks is None:
            tick = self._tick
            self._ticks = [round(price / tick) for price in self._prices]
        return self._ticks

    @property
    def lots(self) -> list[float]:
        if self._lots is None:
            step = self._step
            self._lots = [size / step for size in self._sizes]
        return self._lots

    def best(self) -> int | None:
        prices = self._prices
        return round(prices[0] / self._tick) if prices else None

    def available(self, index: int) -> float:
        tick = self.ticks[index]
        return self.lots[index] - self.taken.get(tick, 0.0)

    def size_at(self, tick: int, *, descending: bool) -> float | None:
        """Displayed lots at `tick` on this side: 0 when inside the visible range but empty or
        better than the best; None when deeper than the visible depth."""
        prices = self._prices
        if not prices:
            return None
        tick_size = self._tick
        worst = round(prices[-1] / tick_size)
        if (descending and tick < worst) or (not descending and tick > worst):
            return None
        for index, price in enumerate(prices):  # our quotes sit near the touch: a few steps
            level = round(price / tick_size)
            if level == tick:
                return self._sizes[index] / self._step
            if (level < tick) if descending else (level > tick):
                return 0.0
        return 0.0


_NO_LEVELS: list[float] = []
_BUY, _SELL = OrderSide.BUY, OrderSide.SELL


class MatchingEngine:
    """Matches our orders for one symbol against an external book and trades."""

    def __init__(
        self,
        config: MatchingEngineConfig,
        account: SimAccount,
        order_ids: IdSequence | None = None,
        fill_ids: IdSequence | None = None,
        listener: OrderListener | None = None,
    ) -> None:
        self.config = config
        self.instrument = config.instrument
        self._account = account
        self._order_ids = order_ids or IdSequence(FIRST_ORDER_ID)
        self._fill_ids = fill_ids or IdSequence(FIRST_FILL_ID)
        self._listener = listener
        self._bids: _DisplayedSide | None = None
        self._asks: _DisplayedSide | None = None
        self._resting: list[_WorkingOrder] = []
        self._closed: dict[str, _WorkingOrder] = {}
        self._priority = itertools.count()

    @property
    def symbol(self) -> str:
        return self.instrument.symbol

    @property
    def has_resting(self) -> bool:
        return bool(self._resting)

    # Market data

    def on_book(
        self,
        bid_prices: Sequence[float],
        bid_sizes: Sequence[float],
        ask_prices: Sequence[float],
        ask_sizes: Sequence[float],
        ts_ms: int,
    ) -> list[Fill]:
        """A new displayed book, best first (lists or arrays of floats); fills for resting
        orders it crosses."""
        if isinstance(bid_prices, np.ndarray):
            bid_prices, bid_sizes = bid_prices.tolist(), np.asarray(bid_sizes).tolist()
            ask_prices, ask_sizes = np.asarray(ask_prices).tolist(), np.asarray(ask_sizes).tolist()
        tick = self.instrument.tick_size
        step = self.instrument.size_step
        bids = self._bids = _DisplayedSide(bid_prices, bid_sizes, tick, step)
        asks = self._asks = _DisplayedSide(ask_prices, ask_sizes, tick, step)
        fills: list[Fill] = []
        if not self._resting:
            return fills
        for order in list(self._resting):
            price_ticks = order.price_ticks
            assert price_ticks is not None  # only limit orders rest
            buying = order.side is _BUY
            own, opposite = (bids, asks) if buying else (asks, bids)
            opposite_best = opposite.best()
            if opposite_best is not None and (
                opposite_best <= price_ticks if buying else opposite_best >= price_ticks
            ):  # the opposite best reaches our price (`_reaches`, inlined: once per resting order)
                fills.extend(
                    self._fill(order, order.remaining_lots, price_ticks, Liquidity.MAKER, ts_ms)
                )
                continue
            _update_queue(order, own.size_at(price_ticks, descending=buying))
        return fills

    def on_trade(
        self, price: float, size: float, aggressor_side: OrderSide | str, ts_ms: int
    ) -> list[Fill]:
        """A public trade; fills for resting orders it reaches."""
        if aggressor_side is not _BUY and aggressor_side is not _SELL:  # a member needs no lookup
            aggressor_side = OrderSide(aggressor_side)
        resting_side = _SELL if aggressor_side is _BUY else _BUY
        trade_ticks = self.instrument.to_ticks(price)
        # Most trades print away from our few orders: nothing to sort or fill. A trade reaches
        # a resting order at its price or beyond it (`_beyond`).
        for order in self._resting:
            if order.side is resting_side and (
                trade_ticks <= order.price_ticks
                if resting_side is _BUY
                else trade_ticks >= order.price_ticks
            ):
                break
        else:
            return []
        trade_lots = size / self.instrument.size_step
        fills: list[Fill] = []
        at_level: list[_WorkingOrder] = []
        for order in self._sorted_resting(resting_side):
            assert order.price_ticks is not None
            if _beyond(resting_side, trade_ticks, order.price_ticks):
                fills.extend(
                    self._fill(
                        order, order.remaining_lots, order.price_ticks, Liquidity.MAKER, ts_ms
                    )
                )
            elif order.price_ticks == trade_ticks:
                at_level.append(order)
        if at_level:
            fills.extend(self._consume_queue(at_level, trade_ticks, trade_lots, ts_ms))
        return fills

    # Orders

    def submit(self, request: OrderRequest, ts_ms: int) -> SubmitResult:
        """Accept, match and possibly rest an order; raises `OrderRejected`."""
        instrument = self.instrument
        self._validate(request)
        client_oid = request.client_oid
        order_id = self._order_ids.next()
        order = _WorkingOrder(
            order_id=order_id,
            client_oid=client_oid if client_oid is not None else order_id,
            side=request.side,
            order_type=request.order_type,
            force=request.force if request.order_type is OrderType.LIMIT else TimeInForce.IOC,
            price_ticks=(
                instrument.to_ticks(request.price)
                if request.order_type is OrderType.LIMIT
                else None
            ),
            size_lots=instrument.to_lots(request.size),
            reduce_only=request.reduce_only,
            created_ms=ts_ms,
            updated_ms=ts_ms,
            priority=next(self._priority),
        )
        self._notify(order, None, 0.0)
        self._match_new(order, ts_ms)
        return SubmitResult(self._view(order), list(order.fills))

    def cancel(
        self, ts_ms: int, order_id: str | None = None, client_oid: str | None = None
    ) -> Order:
        """Cancel a resting order by id (preferred) or clientOid; raises `OrderRejected` 43001."""
        for order in self._resting:
            if (order_id is not None and order.order_id == order_id) or (
                order_id is None and client_oid is not None and order.client_oid == client_oid
            ):
                self._close(order, OrderStatus.CANCELED, ts_ms, "canceled by user")
                return self._view(order)
        raise OrderRejected("43001", "The order does not exist")

    def cancel_all(self, ts_ms: int) -> list[Order]:
        return [self.cancel(ts_ms, order_id=order.order_id) for order in list(self._resting)]

    def open_orders(self) -> list[Order]:
        return [self._view(order) for order in sorted(self._resting, key=lambda o: o.priority)]

    def order(self, order_id: str) -> Order | None:
        """An open or recently closed order."""
        for order in self._resting:
            if order.order_id == order_id:
                return self._view(order)
        closed = self._closed.get(order_id)
        return self._view(closed) if closed is not None else None

    def order_by_client_oid(self, client_oid: str) -> Order | None:
        """The newest open or recently closed order with this clientOid."""
        for order in self._resting:
            if order.client_oid == client_oid:
                return self._view(order)
        for order in reversed(self._closed.values()):
            if order.client_oid == client_oid:
                return self._view(order)
        return None

    def order_fills(self, order_id: str) -> list[Fill]:
        """The fills of an open or recently closed order, oldest first (empty when unknown)."""
        for order in self._resting:
            if order.order_id == order_id:
                return list(order.fills)
        closed = self._closed.get(order_id)
        return list(closed.fills) if closed is not None else []

    def queue_ahead(self, order_id: str) -> float | None:
        """Displayed size (base coin) ahead of a resting order; None when not yet known."""
        for order in self._resting:
            if order.order_id == order_id:
                if order.queue_ahead is None:
                    return None
                return order.queue_ahead * self.instrument.size_step
        raise KeyError(order_id)

    # Internals

    def _validate(self, request: OrderRequest) -> None:
        instrument = self.instrument
        if not instrument.is_on_step(request.size):
            raise OrderRejected(
                "45111", f"size {request.size} is not a multiple of the step {instrument.size_step}"
            )
        if instrument.to_lots(request.size) < 1:
            raise OrderRejected(
                "45111", f"size {request.size} is below the minimum {instrument.size_step}"
            )
        if request.order_type is OrderType.LIMIT:
            assert request.price is not None
            if not instrument.is_on_tick(request.price):
                raise OrderRejected(
                    "45115",
                    f"The price you enter should be a multiple of {instrument.tick_size}",
                )
        reference = self._reference_price(request)
        if (
            reference is not None
            and not request.flash_close
            and reference * request.size < instrument.min_notional
        ):
            raise OrderRejected(
                "45110", f"less than the minimum amount {instrument.min_notional:g} USDT"
            )
        if request.client_oid is not None and any(
            order.client_oid == request.client_oid for order in self._resting
        ):
            raise OrderRejected("43118", "clientOrderId duplicate")
        position = self._account.position(self.symbol).size
        if request.reduce_only:
            if position * request.side.sign >= 0:
                raise OrderRejected("40757", "Not enough position is available")
            return
        if reference is None:
            return
        pending = sum(
            order.remaining_lots
            for order in self._resting
            if order.side is request.side and not order.reduce_only
        )
        projected = position + request.side.sign * (pending * instrument.size_step + request.size)
        if abs(projected) > abs(position) and abs(projected) * reference > (
            self._account.openable_notional(self.symbol)
        ):
            raise OrderRejected("40762", "The order amount exceeds the balance")

    def _reference_price(self, request: OrderRequest) -> float | None:
        if request.order_type is OrderType.LIMIT:
            return request.price
        _, opposite = self._sides(request.side)
        best = opposite.best() if opposite is not None else None
        return self.instrument.price_of(best) if best is not None else None

    def _sides(self, side: OrderSide) -> tuple[_DisplayedSide, _DisplayedSide]:
        """(own side, opposite side) of the last book for an order of `side`."""
        instrument = self.instrument
        empty = (_NO_LEVELS, _NO_LEVELS, instrument.tick_size, instrument.size_step)
        bids = self._bids or _DisplayedSide(*empty)
        asks = self._asks or _DisplayedSide(*empty)
        return (bids, asks) if side is OrderSide.BUY else (asks, bids)

    def _match_new(self, order: _WorkingOrder, ts_ms: int) -> None:
        own, opposite = self._sides(order.side)
        limit = order.price_ticks
        # Walked lazily: a market order takes a level or two of a hundred.
        crossing: Iterable[int] = self._crossing_levels(opposite, order.side, limit)
        if order.force is TimeInForce.POST_ONLY and next(iter(crossing), None) is not None:
            self._close(order, OrderStatus.CANCELED, ts_ms, "post_only order would take liquidity")
            return
        if order.force is TimeInForce.FOK:
            crossing = list(crossing)
            available = sum(opposite.available(index) for index in crossing)
            if available + _LOT_EPSILON < order.remaining_lots:
                self._close(order, OrderStatus.CANCELED, ts_ms, "fok order could not fill entirely")
                return
        for index in crossing:
            tick = opposite.ticks[index]
            lots = min(order.remaining_lots, math.floor(opposite.available(index) + _LOT_EPSILON))
            filled_before = order.filled_lots
            self._fill(order, lots, tick, Liquidity.TAKER, ts_ms)
            opposite.taken[tick] = opposite.taken.get(tick, 0.0) + order.filled_lots - filled_before
            if order.status.terminal:
                return
        if order.status.terminal:
            return
        if order.order_type is OrderType.MARKET or order.force in (
            TimeInForce.IOC,
            TimeInForce.FOK,
        ):
            reason = (
                "no liquidity left" if order.order_type is OrderType.MARKET else "ioc remainder"
            )
            self._close(order, OrderStatus.CANCELED, ts_ms, reason)
            return
        assert limit is not None
        displayed = own.size_at(limit, descending=order.side is OrderSide.BUY)
        order.queue_ahead = displayed
        order.last_displayed = displayed
        for earlier in self._resting:
            if (
                earlier.side is order.side
                and earlier.price_ticks == limit
                and earlier.queue_ahead is not None
                and order.queue_ahead is not None
            ):
                order.queue_ahead = max(order.queue_ahead, earlier.queue_ahead)
        self._resting.append(order)

    def _crossing_levels(
        self, opposite: _DisplayedSide, side: OrderSide, limit: int | None
    ) -> Iterator[int]:
        """Indexes of opposite levels an order may take, best first."""
        for index, tick in enumerate(opposite.ticks):
            if limit is not None and not _reaches(side, tick, limit):
                return
            if opposite.available(index) + _LOT_EPSILON >= 1:
                yield index

    def _consume_queue(
        self, orders: list[_WorkingOrder], tick: int, trade_lots: float, ts_ms: int
    ) -> list[Fill]:
        fills: list[Fill] = []
        orders.sort(key=lambda order: order.priority)
        eaten = 0.0
        left = trade_lots
        for order in orders:
            if order.queue_ahead is None:
                break
            bite = min(left, max(0.0, order.queue_ahead - eaten))
            eaten += bite
            left -= bite
            lots = min(order.remaining_lots, math.floor(left + _LOT_EPSILON))
            if lots <= 0:
                break
            fills.extend(self._fill(order, lots, tick, Liquidity.MAKER, ts_ms))
            left -= lots
            if order.remaining_lots > 0:
                break
        for order in orders:
            if order.queue_ahead is not None:
                order.queue_ahead = max(0.0, order.queue_ahead - eaten)
            order.traded_since_book += trade_lots
        return fills

    def _fill(
        self, order: _WorkingOrder, lots: int, tick: int, liquidity: Liquidity, ts_ms: int
    ) -> list[Fill]:
        """Execute up to `lots`; reduce-only orders are capped at the position they reduce."""
        if order.reduce_only:
            position = self._account.position(self.symbol).size
            reducible = (
                self.instrument.to_lots(abs(position)) if position * order.side.sign < 0 else 0
            )
            if reducible == 0:
                self._close(order, OrderStatus.CANCELED, ts_ms, "reduce-only: no position left")
                return []
            lots = min(lots, reducible)
        instrument = self.instrument
        price = instrument.price_of(tick)
        size = instrument.size_of(lots)
        rate = (
            self.config.maker_fee_rate
            if liquidity is Liquidity.MAKER
            else self.config.taker_fee_rate
        )
        fill = Fill(
            order.order_id,
            order.client_oid,
            self.symbol,
            order.side,
            price,
            size,
            price * size * rate,
            liquidity,
            ts_ms,
            self._fill_ids.next(),
        )
        order.filled_lots += lots
        order.filled_notional += price * size
        order.fee += fill.fee
        order.updated_ms = ts_ms
        order.fills.append(fill)
        realized = self._account.apply_fill(fill)
        if order.remaining_lots == 0:
            self._close(order, OrderStatus.FILLED, ts_ms, "")
        else:
            order.status = OrderStatus.PARTIALLY_FILLED
        self._notify(order, fill, realized)
        return [fill]

    def _close(self, order: _WorkingOrder, status: OrderStatus, ts_ms: int, reason: str) -> None:
        order.status = status
        order.cancel_reason = reason
        order.updated_ms = ts_ms
        if order in self._resting:
            self._resting.remove(order)
        self._closed[order.order_id] = order
        if len(self._closed) > _CLOSED_ORDERS_KEPT:
            del self._closed[next(iter(self._closed))]
        if status is OrderStatus.CANCELED:  # a fill reports its own FILLED close
            self._notify(order, None, 0.0)

    def _notify(self, order: _WorkingOrder, fill: Fill | None, realized_pnl: float) -> None:
        if self._listener is not None:
            self._listener(OrderEvent(self._view(order), fill, realized_pnl))

    def _sorted_resting(self, side: OrderSide) -> list[_WorkingOrder]:
        """Resting orders of `side`, best price first, then time."""
        direction = -side.sign
        return sorted(
            (order for order in self._resting if order.side is side),
            key=lambda order: (direction * (order.price_ticks or 0), order.priority),
        )

    def _view(self, order: _WorkingOrder) -> Order:
        instrument = self.instrument
        filled = instrument.size_of(order.filled_lots)
        return Order(
            order.order_id,
            order.client_oid,
            self.symbol,
            order.side,
            order.order_type,
            order.force,
            instrument.price_of(order.price_ticks) if order.price_ticks is not None else None,
            instrument.size_of(order.size_lots),
            filled,
            order.filled_notional / filled if filled else 0.0,
            order.fee,
            order.status,
            order.reduce_only,
            order.created_ms,
            order.updated_ms,
            order.cancel_reason,
        )


def _reaches(side: OrderSide, opposite_tick: int, limit_tick: int) -> bool:
    """Whether an order of `side` limited at `limit_tick` may trade at `opposite_tick`."""
    return opposite_tick <= limit_tick if side is OrderSide.BUY else opposite_tick >= limit_tick


def _beyond(resting_side: OrderSide, trade_tick: int, order_tick: int) -> bool:
    """Whether a trade printed strictly through a resting order's price."""
    return trade_tick < order_tick if resting_side is OrderSide.BUY else trade_tick > order_tick


def _update_queue(order: _WorkingOrder, displayed: float | None) -> None:
    """Apply the proportional-cancellation queue model to one resting order (see module doc)."""
    if displayed is None:
        return
    if order.queue_ahead is None:
        order.queue_ahead = displayed
    elif order.last_displayed is not None:
        queue_left = order.last_displayed - order.traded_since_book
        if queue_left > _LOT_EPSILON and displayed < queue_left:
            order.queue_ahead *= displayed / queue_left
    order.queue_ahead = min(order.queue_ahead, displayed)
    order.last_displayed = displayed
    order.traded_since_book = 0.0
