"""Stateful properties of the RiskGateway against an independent model of the exchange.

Hypothesis drives arbitrary sequences of orders from every source, closing orders, fills of
approved orders (partial or full, at any price, reduce-only capped as Bitget does), cancels,
rejects, marks, feed health, time, operator commands and overrides, and Kev commands. The
machine keeps its own positions, open orders, limits and counts, and checks:

- no risk-increasing approval takes a symbol's worst-case position (position plus every open
  order on that side, the new one included) beyond its position or notional limit, nor the
  worst-case net delta beyond its limit; in ACTIVE no approval at all does the latter;
- so no position ever exceeds the largest position limit that was in force;
- PAUSED approves nothing; HALTED approves only reduce-only orders that shrink a position,
  REDUCING only orders that shrink a position; closing orders are never refused there except
  for Bitget's rate or the closing price band;
- approvals stay within max open orders, our own pace and Bitget's place-order limit;
- Kev never raises a limit or the risk scale and never leaves PAUSED or HALTED;
- operator overrides are applied exactly when inside their hard bounds;
- per-reason denial counts equal the denials seen, and each denial is one event;
- `net_delta_fits` and `has_order_room`, which a quote asks before it is sent, answer as the
  check's net delta and rate tests (kept inline there: calling them costs `check` 6% and 12%);
- `position_cap`, which quotes and the hedge are sized to, is the check's: on a fresh book an
  order filling the room to it on either side passes the position and notional checks, one lot
  more fails them.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from support.risk import BTC, ETH, MIDS, MS, SECOND, T0, make_bounds, make_config, make_limits

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.risk.commands import KevAction
from engine.risk.events import OrderDenied, TradingState
from engine.risk.gateway import RiskGateway
from engine.risk.intents import (
    CancelIntent,
    CancelScope,
    DenialReason,
    OrderIntent,
    RiskDecision,
    Source,
)
from engine.risk.limits import EndpointLimits, RiskGatewayConfig, SymbolLimits
from engine.risk.overrides import RiskOverrides
from engine.risk.snapshot import RiskSnapshot
from engine.units import base_coin, exact

TOLERANCE = 1e-9
SYMBOLS = (BTC, ETH)
LOT = {BTC: 0.05, ETH: 0.5}
"""A tenth of each symbol's max order size (0.5 BTC, 5 ETH)."""
MINUTE = 60 * SECOND
DAY = 24 * 3_600 * SECOND
CLOSING_DENIALS_ALLOWED = {DenialReason.ENDPOINT_RATE, DenialReason.SLIPPAGE}
CAP_DENIALS = {DenialReason.POSITION_LIMIT, DenialReason.NOTIONAL_LIMIT}
RATE_DENIALS = {DenialReason.ORDER_RATE, DenialReason.ENDPOINT_RATE}
GRID_SLACK = 1e-9
"""As the strategy's `Grid.floor_size`: this close below a whole lot is that lot."""

symbols = st.sampled_from(SYMBOLS)
order_requests = st.tuples(
    symbols,
    st.booleans(),
    st.one_of(st.integers(1, 12), st.floats(0.01, 12.0)),  # in lots; 10 lots is the max order
    st.booleans(),
    st.integers(-14, 12),  # limit price offset from the mid, bps; the band is 10
    st.booleans(),
    st.sampled_from(list(Source)),
    st.sampled_from([0, 1, 50, 250]),  # ms since the previous order of the burst
    st.sampled_from([None, None, None, 0.5, 1.0]),  # fill at once, this much of it
    st.integers(-200, 200),  # fill price offset from the mid, bps
)


def property_config() -> RiskGatewayConfig:
    """Tighter than the unit-test book, so every limit is reached within a few steps: notional
    binds before position once marks rise, net delta before either, the open-order cap and
    our own pace within one burst, and Bitget's place-order limit with closing orders."""
    limits = make_limits(
        symbols=(
            SymbolLimits(BTC, max_position=1.0, max_notional=45_000, max_order_size=0.5),
            SymbolLimits(ETH, max_position=20.0, max_notional=45_000, max_order_size=5.0),
        ),
        max_net_delta=50_000,
        max_open_orders=3,
        orders_per_second=2,
        endpoints=EndpointLimits(place_order_per_second=6),
    )
    return make_config(
        limits=limits,
        bounds=make_bounds(max_orders_per_second=6),
        outbox_capacity=1_000_000,
    )


def _limit_with_slack(limit: float) -> float:
    return limit * (1 + TOLERANCE) + 1e-6


class RiskGatewayMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        config = property_config()
        self.config = config
        self.gateway = RiskGateway(config)
        self.now = T0
        self.mids = dict(MIDS)
        for symbol in SYMBOLS:
            self._mark(symbol, self.mids[symbol], 0.0)
        self.positions = dict.fromkeys(SYMBOLS, 0.0)
        self.orders: dict[str, list] = {}  # client_oid -> [intent, remaining size]
        self.denials: Counter[DenialReason] = Counter()
        self.denial_events = 0
        limits = config.limits
        self.max_position_set = {s.symbol: s.max_position for s in limits.symbols}
        self.max_notional_set = {s.symbol: s.max_notional for s in limits.symbols}
        self.max_net_delta_set = limits.max_net_delta
        self.risk_scale = config.risk_scale
        self.hedge_ratio = config.hedge_ratio
        self.orders_per_second = limits.orders_per_second
        self.orders_per_minute = limits.orders_per_minute
        self.largest_position_limit = dict(self.max_position_set)
        self.placed_at: list[int] = []
        self.risk_increasing_at: list[int] = []
        self.client_oids = 0

    # Model helpers

    def _mark(self, symbol: str, mid: float, micro_offset_bps: float, half_spread_bps=1.0):
        half = mid * half_spread_bps * 1e-4
        microprice = mid * (1 + micro_offset_bps * 1e-4)
        self.gateway.on_mark(symbol, mid, microprice, mid - half, mid + half, self.now)

    def _pending(self, symbol: str, side: OrderSide) -> float:
        return sum(
            remaining
            for intent, remaining in self.orders.values()
            if intent.symbol == symbol and intent.side is side
        )

    def _weight(self, symbol: str) -> float:
        return self.hedge_ratio if symbol == self.config.hedge_symbol else 1.0

    def _net_delta_bound(self, side: OrderSide) -> float:
        sign = 1.0 if side is OrderSide.BUY else -1.0
        return sum(
            self._weight(symbol)
            * (self.positions[symbol] + sign * self._pending(symbol, side))
            * self.mids[symbol]
            for symbol in SYMBOLS
        )

    def _position_bound(self, symbol: str, side: OrderSide) -> float:
        sign = 1.0 if side is OrderSide.BUY else -1.0
        return self.positions[symbol] + sign * self._pending(symbol, side)

    def _is_risk_increasing(self, intent: OrderIntent) -> bool:
        """With the order reserved: could it take the position away from zero? Ties count as
        shrinking, the lenient side for the gateway."""
        position = self.positions[intent.symbol]
        bound = self._position_bound(intent.symbol, intent.side)
        if intent.side is OrderSide.BUY:
            return not (position < 0 and bound <= TOLERANCE)
        return not (position > 0 and bound >= -TOLERANCE)

    def _effective(self, value: float) -> float:
        return value * self.risk_scale

    def _raise_largest_position_limits(self) -> None:
        for symbol in SYMBOLS:
            self.largest_position_limit[symbol] = max(
                self.largest_position_limit[symbol],
                self._effective(self.max_position_set[symbol]),
            )

    def _submit(self, intent: OrderIntent, closing: bool = False) -> RiskDecision:
        state = self.gateway.state
        open_before = len(self.orders)
        # What a quote asks before it is sent agrees with the check's net delta and rate tests.
        fits = self.gateway.net_delta_fits(intent.symbol, intent.side, intent.size)
        room = self.gateway.has_order_room(self.now)
        decision = self.gateway.check(intent, self.now)
        if not decision.approved:
            self.denials[decision.reason] += 1
            if decision.reason is DenialReason.NET_DELTA_LIMIT:
                assert not fits, intent
            if decision.reason in RATE_DENIALS:
                assert not room, intent
            if closing and state in (TradingState.REDUCING, TradingState.HALTED):
                assert decision.reason in CLOSING_DENIALS_ALLOWED, decision
            return decision
        self.orders[intent.client_oid] = [intent, intent.size]
        self.placed_at.append(self.now)
        assert state is not TradingState.PAUSED
        increasing = self._is_risk_increasing(intent)
        if state is TradingState.HALTED:
            assert intent.reduce_only and not increasing, intent
        if state is TradingState.REDUCING:
            assert not increasing, intent
        side, symbol = intent.side, intent.symbol
        if increasing:
            bound = abs(self._position_bound(symbol, side))
            assert bound <= _limit_with_slack(self._effective(self.max_position_set[symbol]))
            notional = bound * self.mids[symbol]
            assert notional <= _limit_with_slack(self._effective(self.max_notional_set[symbol]))
            assert open_before < self.config.limits.max_open_orders
            self.risk_increasing_at.append(self.now)
            assert room, intent
            assert self._count_since(self.risk_increasing_at, SECOND) <= self.orders_per_second
            assert self._count_since(self.risk_increasing_at, MINUTE) <= self.orders_per_minute
        if increasing or state is TradingState.ACTIVE:
            # The long bound for a buy, minus the short bound for a sell: the side it grew.
            toward_side = self._net_delta_bound(side) * (1 if side is OrderSide.BUY else -1)
            assert toward_side <= _limit_with_slack(self._effective(self.max_net_delta_set))
            assert fits, intent
        place_order_limit = self.config.limits.endpoints.place_order_per_second
        assert self._count_since(self.placed_at, SECOND) <= place_order_limit
        return decision

    def _count_since(self, times: list[int], span: int) -> int:
        return sum(1 for at in times if at > self.now - span)

    def _forget(self, client_oid: str) -> None:
        del self.orders[client_oid]

    def _exchange_cancels(self, client_oid: str) -> None:
        self._forget(client_oid)
        self.gateway.on_order_closed(client_oid, self.now)

    def _pick(self, index: int) -> str:
        return sorted(self.orders)[index % len(self.orders)]

    # Orders

    @initialize(btc_lots=st.integers(-10, 10), eth_lots=st.integers(-10, 10))
    def open_positions(self, btc_lots, eth_lots):
        """Start from filled positions built through approved orders."""
        for symbol, lots in ((BTC, btc_lots), (ETH, eth_lots)):
            if lots:
                intent = self._order(symbol, lots > 0, abs(lots), False, 0, False, Source.STRATEGY)
                self._submit(intent)
                assert intent.client_oid in self.orders
                self._fill(intent.client_oid, 1.0, 0, 0.0)

    @rule(orders=st.lists(order_requests, min_size=1, max_size=8))
    def submit(self, orders):
        """A burst of orders a few milliseconds apart (so the rate limits are reached too),
        some filled at once."""
        for request in orders:
            *order, gap_ms, fill_fraction, fill_bps = request
            self.now += gap_ms * MS
            intent = self._order(*order)
            self._submit(intent)
            if fill_fraction and intent.client_oid in self.orders:
                self._fill(intent.client_oid, fill_fraction, fill_bps, 0.1)

    @rule(symbol=symbols, levels=st.integers(1, 3), gap_ms=st.sampled_from([0, 300, 600]))
    def quote_both_sides(self, symbol, levels, gap_ms):
        """A market maker's ladder: one-lot passive bids and asks, resting; small enough that
        the open-order cap and our own pace bind before the exposure limits."""
        for level in range(1, levels + 1):
            for buy in (True, False):
                self.now += gap_ms * MS
                self._mark(symbol, self.mids[symbol], 0.0)  # quoting follows a fresh book
                offset = -2 * level if buy else 2 * level
                self._submit(self._order(symbol, buy, 1, False, offset, False, Source.STRATEGY))

    @precondition(lambda self: self.gateway.state is TradingState.ACTIVE)
    @rule(symbol=symbols, buy=st.booleans())
    def order_to_the_cap(self, symbol, buy):
        """What a quote or the hedge asks, sized to `position_cap` as the strategy sizes it (whole
        lots of the room the position and the orders on that side leave), on a fresh book: never
        denied for the position or the notional; one lot more always is (both where the max
        order size lets the order be that large)."""
        gateway = self.gateway
        gateway.on_feed_health(symbol, True, "")
        self._mark(symbol, self.mids[symbol], 0.0)
        cap = gateway.position_cap(symbol)
        notional_cap = self._effective(self.max_notional_set[symbol]) / self.mids[symbol]
        assert cap == pytest.approx(
            min(self._effective(self.max_position_set[symbol]), notional_cap), rel=1e-12
        )
        side = OrderSide.BUY if buy else OrderSide.SELL
        bound = self._position_bound(symbol, side)
        room = cap - bound if buy else cap + bound
        lots = max(math.floor(room / LOT[symbol] + GRID_SLACK), 0)
        max_lots = round(self.config.limits.for_symbol(symbol).max_order_size / LOT[symbol])
        if lots + 1 <= max_lots:
            beyond = self._order(symbol, buy, lots + 1, False, 0, False, Source.STRATEGY)
            assert self._submit(beyond).reason in CAP_DENIALS
        if 0 < lots <= max_lots:
            to_cap = self._order(symbol, buy, lots, False, 0, False, Source.STRATEGY)
            assert self._submit(to_cap).reason not in CAP_DENIALS

    def _order(self, symbol, buy, lots, market_order, offset_bps, reduce_only, source):
        self.client_oids += 1
        price = self.mids[symbol] * (1 + offset_bps * 1e-4)
        return OrderIntent(
            symbol,
            OrderSide.BUY if buy else OrderSide.SELL,
            round(lots * LOT[symbol], 9),
            None if market_order else round(price, 2),
            OrderType.MARKET if market_order else OrderType.LIMIT,
            f"p-{self.client_oids}",
            source,
            TimeInForce.IOC if market_order else TimeInForce.GTC,
            reduce_only,
            "property",
        )

    @rule(
        symbol=symbols,
        fraction=st.sampled_from([0.25, 0.5, 1.0, 1.5]),
        market_order=st.booleans(),
        offset_bps=st.integers(-60, 20),
        reduce_only=st.booleans(),
        source=st.sampled_from(list(Source)),
    )
    def submit_reducing(self, symbol, fraction, market_order, offset_bps, reduce_only, source):
        """An order against the part of the position no open order closes yet (past it at
        1.5), in whatever state: the paths a flatten or a manual close take."""
        position = self.positions[symbol]
        closing_side = OrderSide.BUY if position < 0 else OrderSide.SELL
        unclosed = max(abs(position) - self._pending(symbol, closing_side), 0.0)
        lots = min(round(unclosed * fraction / LOT[symbol], 6), 10)
        if not lots:
            return
        # Against the position a positive offset is a better price, a negative one a worse one.
        offset = offset_bps if position < 0 else -offset_bps
        buy = position < 0
        self._submit(self._order(symbol, buy, lots, market_order, offset, reduce_only, source))

    @rule(fill_fraction=st.sampled_from([None, 0.5, 1.0]))
    def submit_closing_orders(self, fill_fraction):
        for intent in self.gateway.closing_intents():
            self._submit(intent, closing=True)
            if fill_fraction and intent.client_oid in self.orders:
                self._fill(intent.client_oid, fill_fraction, 0, 0.0)

    @precondition(lambda self: self.orders)
    @rule(
        index=st.integers(0, 1_000),
        fraction=st.sampled_from([0.3, 0.5, 1.0]),
        price_bps=st.integers(-200, 200),
        fee=st.floats(-1.0, 5.0),
    )
    def fill(self, index, fraction, price_bps, fee):
        self._fill(self._pick(index), fraction, price_bps, fee)

    def _fill(self, client_oid: str, fraction: float, price_bps: int, fee: float) -> None:
        """Fill part or all of an open order as Bitget would: a reduce-only order is capped
        at the position it reduces and its rest cancelled."""
        intent, remaining = self.orders[client_oid]
        requested = remaining if fraction == 1.0 else round(remaining * fraction, 9)
        if requested <= 0:
            return
        position = self.positions[intent.symbol]
        buy = intent.side is OrderSide.BUY
        amount = requested
        if intent.reduce_only:
            amount = min(requested, max(-position if buy else position, 0.0))
            if amount <= 1e-12:
                self._exchange_cancels(client_oid)
                return
        price = self.mids[intent.symbol] * (1 + price_bps * 1e-4)
        self.gateway.on_fill(client_oid, intent.symbol, intent.side, amount, price, fee, self.now)
        self.positions[intent.symbol] = round(position + (amount if buy else -amount), 12)
        left = remaining - amount
        if left <= intent.size * TOLERANCE:
            self._forget(client_oid)
        else:
            self.orders[client_oid][1] = left
            if amount < requested:
                self._exchange_cancels(client_oid)

    @precondition(lambda self: self.orders)
    @rule(index=st.integers(0, 1_000))
    def cancel_or_reject(self, index):
        client_oid = self._pick(index)
        self._forget(client_oid)
        self.gateway.on_order_closed(client_oid, self.now)

    @precondition(lambda self: self.orders)
    @rule(index=st.integers(0, 1_000))
    def acknowledge(self, index):
        self.gateway.on_order_acknowledged(self._pick(index), self.now)

    @rule(scope=st.sampled_from(list(CancelScope)), symbol=symbols, index=st.integers(0, 1_000))
    def cancel_request(self, scope, symbol, index):
        client_oid = self._pick(index) if self.orders else "none-open"
        if scope is CancelScope.ORDER and self.orders:
            symbol = self.orders[client_oid][0].symbol
        intent = CancelIntent(scope, Source.STRATEGY, symbol, client_oid)
        assert self.gateway.check_cancel(intent, self.now).approved
        for open_oid, (open_intent, _) in list(self.orders.items()):
            if (
                scope is CancelScope.ALL
                or (scope is CancelScope.SYMBOL and open_intent.symbol == symbol)
                or open_oid == client_oid
            ):
                self._exchange_cancels(open_oid)

    # Market and time

    @rule(
        symbol=symbols,
        move_bps=st.integers(-150, 150),
        micro_offset_bps=st.integers(-8, 8),
        half_spread_bps=st.sampled_from([0.5, 1.0, 4.0, 30.0]),
        elapsed_ms=st.integers(0, 400),
    )
    def move_market(self, symbol, move_bps, micro_offset_bps, half_spread_bps, elapsed_ms):
        self.now += elapsed_ms * MS
        self.mids[symbol] = round(self.mids[symbol] * (1 + move_bps * 1e-4), 2)
        self._mark(symbol, self.mids[symbol], micro_offset_bps, half_spread_bps)

    @rule(elapsed_ms=st.integers(0, 1_500))
    def advance_time(self, elapsed_ms):
        self.now += elapsed_ms * MS

    @rule()
    def next_day(self):
        self.now += DAY
        for symbol in SYMBOLS:
            self._mark(symbol, self.mids[symbol], 0.0)

    @rule(symbol=symbols, healthy=st.booleans())
    def feed_health(self, symbol, healthy):
        self.gateway.on_feed_health(symbol, healthy, "" if healthy else "resyncing")

    # Operator

    @rule(
        command=st.sampled_from(["pause", "resume", "flatten", "rearm", "bad rearm"]),
        then_close=st.booleans(),
    )
    def operator_command(self, command, then_close):
        """An operator command; after a flatten the engine may send the closing orders
        straight away, as it will live."""
        before = self.gateway.state
        if command == "rearm":
            self.gateway.rearm(self.now, "REARM")
        elif command == "bad rearm":
            assert not self.gateway.rearm(self.now, "rearm please").accepted
        else:
            getattr(self.gateway, command)(self.now)
        if before is TradingState.HALTED and command != "rearm":
            assert self.gateway.state is TradingState.HALTED
        if then_close and command == "flatten":
            self.submit_closing_orders(1.0)

    @rule(closing=st.sampled_from(["none", "unfilled", "half filled", "filled"]))
    def kill_switch(self, closing):
        """The kill switch, then (or not yet) the closing orders, filled or not."""
        self.gateway.kill(self.now)
        assert self.gateway.state is TradingState.HALTED
        fill_fraction = {"unfilled": None, "half filled": 0.5, "filled": 1.0}
        if closing != "none":
            self.submit_closing_orders(fill_fraction[closing])

    @rule(symbol=symbols, size=st.floats(-1.0, 50.0, allow_nan=False))
    def override_max_position(self, symbol, size):
        ceiling = self.config.bounds.max_position[symbol]
        outcome = self.gateway.set_limits(RiskOverrides(max_position={symbol: size}), self.now)
        assert outcome.accepted == (0 <= size <= ceiling)
        if outcome.accepted:
            in_force = self.gateway.snapshot().limits.max_position[symbol]
            assert outcome.text == f"{symbol} max position {exact(in_force)} {base_coin(symbol)}"
            self.max_position_set[symbol] = size
            self._raise_largest_position_limits()

    @rule(usdt=st.one_of(st.floats(-1_000.0, 30_000.0), st.floats(30_000.0, 200_000.0)))
    def override_max_net_delta(self, usdt):
        outcome = self.gateway.set_limits(RiskOverrides(max_net_delta=usdt), self.now)
        assert outcome.accepted == (0 <= usdt <= self.config.bounds.max_net_delta)
        if outcome.accepted:
            self.max_net_delta_set = usdt

    @rule(bps=st.floats(-5.0, 80.0))
    def override_slippage(self, bps):
        outcome = self.gateway.set_limits(RiskOverrides(max_slippage_bps=bps), self.now)
        assert outcome.accepted == (0 <= bps <= self.config.bounds.max_slippage_bps)

    @rule(per_second=st.integers(0, 12), per_minute=st.integers(0, 250))
    def override_order_rate(self, per_second, per_minute):
        bounds = self.config.bounds
        outcome = self.gateway.set_limits(
            RiskOverrides(orders_per_second=per_second, orders_per_minute=per_minute), self.now
        )
        within = (
            1 <= per_second <= bounds.max_orders_per_second
            and 1 <= per_minute <= bounds.max_orders_per_minute
        )
        assert outcome.accepted == within
        if within:
            self.orders_per_second, self.orders_per_minute = per_second, per_minute

    @rule(scale=st.floats(-0.2, 1.2))
    def override_risk_scale(self, scale):
        outcome = self.gateway.set_limits(RiskOverrides(risk_scale=scale), self.now)
        assert outcome.accepted == (0 <= scale <= 1)
        if outcome.accepted:
            self.risk_scale = scale
            self._raise_largest_position_limits()

    # Kev

    @rule(
        action=st.sampled_from(list(KevAction)),
        risk_scale=st.one_of(st.none(), st.floats(0.0, 1.0)),
        hedge_ratio=st.one_of(st.none(), st.floats(-1.0, 3.0)),
    )
    def kev_command(self, action, risk_scale, hedge_ratio):
        before = self._kev_command(action, risk_scale, hedge_ratio)
        if risk_scale is not None and risk_scale <= before.risk_scale:
            self.risk_scale = risk_scale
        if hedge_ratio is not None:
            low, high = self.config.hedge_ratio_band
            self.hedge_ratio = min(max(hedge_ratio, low), high)

    @rule(
        action=st.sampled_from([*KevAction, "resume", "rearm", "raise_limits"]),
        risk_scale=st.one_of(st.none(), st.floats(-1.0, 3.0), st.sampled_from([math.nan, 2.0])),
        hedge_ratio=st.one_of(st.none(), st.sampled_from([math.nan, math.inf, -math.inf])),
    )
    def malformed_kev_command(self, action, risk_scale, hedge_ratio):
        well_formed_scale = risk_scale is None or 0 <= risk_scale <= 1
        if action in set(KevAction) and well_formed_scale and hedge_ratio is None:
            risk_scale = math.nan  # keep the command malformed
        before = self._kev_command(action, risk_scale, hedge_ratio)
        after = self.gateway.snapshot()
        assert (after.state, after.risk_scale, after.hedge_ratio) == (
            before.state,
            before.risk_scale,
            before.hedge_ratio,
        )

    def _kev_command(self, action, risk_scale, hedge_ratio) -> RiskSnapshot:
        """Send a Kev command and check it tightened or kept everything; the snapshot before."""
        before = self.gateway.snapshot()
        self.gateway.apply_kev_command(action, risk_scale, hedge_ratio, self.now)
        after = self.gateway.snapshot()
        if before.state in (TradingState.PAUSED, TradingState.HALTED):
            assert after.state is before.state
        if after.state is TradingState.ACTIVE:
            assert before.state is TradingState.ACTIVE
        assert after.risk_scale <= before.risk_scale
        assert after.max_net_delta <= before.max_net_delta
        assert after.limits == before.limits
        for old, new in zip(before.positions, after.positions, strict=True):
            assert new.max_position <= old.max_position
            assert new.max_notional <= old.max_notional
        return before

    # Invariants

    @invariant()
    def positions_and_reservations_match_the_model(self):
        snapshot = self.gateway.snapshot()
        assert snapshot.open_orders == len(self.orders)
        for view in snapshot.positions:
            symbol = view.symbol
            assert view.size == pytest.approx(self.positions[symbol], abs=1e-9)
            assert abs(view.size) <= _limit_with_slack(self.largest_position_limit[symbol])
            buys = self._pending(symbol, OrderSide.BUY)
            sells = self._pending(symbol, OrderSide.SELL)
            assert view.pending_buy == pytest.approx(buys, abs=1e-9)
            assert view.pending_sell == pytest.approx(sells, abs=1e-9)

    @invariant()
    def net_delta_bounds_match_the_model(self):
        snapshot = self.gateway.snapshot()
        for side, reported in (
            (OrderSide.BUY, snapshot.net_delta_long_bound),
            (OrderSide.SELL, snapshot.net_delta_short_bound),
        ):
            assert reported == pytest.approx(self._net_delta_bound(side), rel=1e-9, abs=1e-6)

    @invariant()
    def limits_in_force_match_the_model(self):
        snapshot = self.gateway.snapshot()
        assert snapshot.risk_scale == self.risk_scale
        assert snapshot.hedge_ratio == self.hedge_ratio
        assert dict(snapshot.limits.max_position) == self.max_position_set
        assert snapshot.limits.max_net_delta == self.max_net_delta_set
        assert snapshot.limits.orders_per_second == self.orders_per_second

    @invariant()
    def every_denial_is_counted_once_and_emitted_once(self):
        snapshot = self.gateway.snapshot()
        for reason in DenialReason:
            assert snapshot.denial_counts[reason] == self.denials[reason], reason
        assert snapshot.denials_total == sum(self.denials.values())
        events = self.gateway.drain_events()
        self.denial_events += sum(1 for event in events if isinstance(event, OrderDenied))
        assert self.denial_events == snapshot.denials_total


RiskGatewayMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_risk_gateway_properties = RiskGatewayMachine.TestCase
