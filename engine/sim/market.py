"""A deterministic market, a pair or a book of symbols: latent fair prices, L2 books, trades and
informed bursts.

Any two contracts of the simulator's table (engine/sim/contracts.py) can be its symbols, each
in the regime of its tick (`sim_symbol`, `sim_market`): a one-tick book (BTCUSDT, whose tick is
far below a second's move) follows the fair price tick by tick with a spread of 1-3 ticks; a
large-tick book (a tick of a bp or more) keeps a spread of one tick over deep queues and moves
its touch a tick at a time, once the fair price is well past it.

Model, stepped on a simulated clock of `step_ms`:

- Traded symbol log fair price `x`: slow OU drift + lagged order-flow impact + Brownian noise
  (`volatility_1s` per sqrt second) + the jumps of informed bursts.
- Hedge log fair price: `x_h0 + beta * (x_lagged - x0) + s`, where `x_lagged` follows `x` with a
  short exponential lag (lead-lag) and `s` is a mean-reverting OU spread that also absorbs the
  hedge's own flow impact. The pair is therefore cointegrated with vector (1, -beta).
- Each symbol has a latent order-flow state `f` (OU, unit variance, `flow_half_life_s`). It tilts
  near-touch depth (bids thicker and asks thinner when `f > 0`) and the aggressor mix of trades
  at once, while the price responds to a lagged copy of `f` (time constant `impact_lag_s`): book
  and trade imbalance lead the move by roughly 0.5-2 s.
- Books are dense tick ladders of `levels` per side, indexed by depth from the quoted touch.
  Market makers requote the touch around the fair price every step (spread of 1-3 ticks, a slowly
  switching regime); add/cancel events arrive as a Poisson process concentrated near the touch
  and pull each level's size toward a mean that grows with depth. Trades arrive as a Poisson
  process and consume displayed size, walking levels when larger than the touch.
- Informed bursts (Poisson, `burst_rate_per_min`, traded symbol): a lead phase of
  `burst_lead_ms` with a run of aggressive trades on one side and the hit side of the book
  drained near the touch, then a jump of `burst_jump_sigmas` one-second sigmas over
  `burst_jump_ms`. Each burst is recorded in `bursts` so it can serve as a training label.

A book (`MarketGeneratorConfig.quoted`, `sim_book`) is the same model with the roles turned: the
hedge is the market's leader and drives (the `x` above, the common factor, at `volatility_1s`),
and each quoted symbol follows it as the pair's hedge does, with its own beta, lag and
mean-reverting spread (its idiosyncratic part, at its own volatility), its own order flow and
impact and its own informed bursts, which jump its spread (the leader has bursts too).

All randomness comes from numpy Generators seeded from `seed`, consumed in an order that depends
only on simulated time, so the same seed and start give identical markets however the clock is
advanced. A pair draws its latent path from one stream, as it always has; a book gives each
symbol its own streams, keyed by the symbol's name, so adding a symbol to a book leaves the
others' paths as they were.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from engine.bitget.orders import OrderSide
from engine.market.book_symbols import check_book_symbols
from engine.market.instruments import Instrument
from engine.sim.contracts import sim_instrument
from engine.validation import require_number, require_positive

_POOL_SIZE = 8192
_TRADE_ID_BASE = 1_220_000_000_000_000_000
_MAX_SWEEP_LEVELS = 12
"""A single aggressive order walks at most this many levels."""
_MAX_BURSTS_KEPT = 10_000

_SPREAD_CHOICES = (1, 2, 3)
_SPREAD_WEIGHTS = (0.75, 0.18, 0.07)
_LARGE_TICK_SPREAD_WEIGHTS = (0.96, 0.03, 0.01)
_LARGE_TICK_BPS = 0.5
"""A tick this wide (at the start price) or wider makes a large-tick book."""
_LARGE_TICK_BAND_TICKS = 0.3
"""A large-tick book's `requote_band_ticks`: a move back across its touch takes 0.6 tick."""
_LARGE_TICK_DRAIN_LEVELS = 2
"""A large-tick book's `burst_drain_levels`: its touch and the tick behind it."""
_SPREAD_SWITCH_PER_S = 0.15
_GAP_PROBABILITY = 0.04
"""Chance that a freshly exposed level (other than the touch) starts empty."""
_EVENT_DEPTH_SCALE = 10.0
"""Mean depth, in levels, of add/cancel events that land near the touch."""
_EVENT_UNIFORM_SHARE = 0.25
"""Share of add/cancel events spread uniformly over the whole ladder."""
_TILT_DEPTH_SCALE = 5.0
_TILT_DEPTH_LIMIT = 30
"""Beyond this depth the flow tilt is below 0.3% and is skipped."""
_BURST_TILT_DEPTH = 20
_BURST_DRAIN_FACTOR = 0.08
_BURST_PULL_PER_STEP = 0.6
_BURST_TRADE_RATE_PER_S = 40.0
_BURST_AGGRESSOR_SHARE = 0.92
_BURST_FLOW = 3.0


class SimTrade(NamedTuple):
    """One public trade print; `side` is the aggressor's."""

    symbol: str
    price: float
    size: float
    side: OrderSide
    trade_id: int
    ts_ms: int


class BookLevels(NamedTuple):
    """A symbol's displayed book, best first, as float arrays."""

    symbol: str
    ts_ms: int
    bid_prices: np.ndarray
    bid_sizes: np.ndarray
    ask_prices: np.ndarray
    ask_sizes: np.ndarray

    @property
    def best_bid(self) -> float:
        return float(self.bid_prices[0])

    @property
    def best_ask(self) -> float:
        return float(self.ask_prices[0])

    @property
    def mid(self) -> float:
        return 0.5 * (float(self.bid_prices[0]) + float(self.ask_prices[0]))


class InformedBurst(NamedTuple):
    """An informed-flow episode: aggressive `side` flow from `start_ms`, then the jump."""

    symbol: str
    side: OrderSide
    start_ms: int
    jump_start_ms: int
    jump_end_ms: int
    jump_log_return: float


@dataclass(frozen=True, slots=True)
class SymbolConfig:
    """Microstructure of one symbol: book shape, trade flow and impact."""

    instrument: Instrument
    start_price: float
    touch_size: float
    """Mean displayed size at the touch, base coin."""
    median_trade_size: float
    """Median size of one aggressive order, base coin."""
    depth_growth: float = 0.12
    """Each level deeper adds this multiple of `touch_size` to the mean level size."""
    levels: int = 100
    trade_rate_per_s: float = 6.0
    book_event_rate_per_s: float = 160.0
    flow_impact_1s: float = 3e-5
    """Log-price drift per second per unit of lagged flow."""
    imbalance_strength: float = 0.5
    """Log tilt of near-touch sizes per unit of flow."""
    spread_weights: tuple[float, float, float] = _SPREAD_WEIGHTS
    """How often the makers quote a spread of 1, 2 and 3 ticks."""
    requote_band_ticks: float = 0.0
    """How far, in ticks, the fair price must pass the quoted touch before the makers move it:
    0 follows every tick; a large-tick book holds its touch (and its queues) until the price is
    well past it, rather than flickering between two ticks."""
    burst_drain_levels: int = _BURST_TILT_DEPTH
    """Levels the makers pull from ahead of an informed burst: a large-tick book's touch queue
    alone holds what a one-tick book spreads over many levels."""

    def __post_init__(self) -> None:
        owner = "SymbolConfig"
        if len(self.spread_weights) != len(_SPREAD_CHOICES) or not all(
            weight >= 0 for weight in self.spread_weights
        ):
            raise ValueError(
                f"spread_weights must be {len(_SPREAD_CHOICES)} weights >= 0 (1, 2 and 3 "
                f"ticks), got {self.spread_weights!r}"
            )
        if not math.isclose(sum(self.spread_weights), 1.0):
            raise ValueError(f"spread_weights must sum to 1, got {self.spread_weights!r}")
        require_number(owner, "requote_band_ticks", self.requote_band_ticks, low=0.0, high=0.9)
        if not 1 <= self.burst_drain_levels <= self.levels:
            raise ValueError(
                f"burst_drain_levels must be within 1..levels ({self.levels}), "
                f"got {self.burst_drain_levels}"
            )
        require_positive(owner, "start_price", self.start_price)
        require_positive(owner, "touch_size", self.touch_size)
        require_positive(owner, "median_trade_size", self.median_trade_size)
        require_positive(owner, "trade_rate_per_s", self.trade_rate_per_s)
        require_positive(owner, "book_event_rate_per_s", self.book_event_rate_per_s)
        require_number(owner, "depth_growth", self.depth_growth, low=0.0)
        require_number(owner, "flow_impact_1s", self.flow_impact_1s, low=0.0)
        require_number(owner, "imbalance_strength", self.imbalance_strength, low=0.0)
        if self.levels < 50:
            raise ValueError(f"levels must be at least 50 per side, got {self.levels}")
        if not self.instrument.is_on_tick(self.start_price):
            raise ValueError(
                f"start_price {self.start_price} of {self.instrument.symbol} is not a multiple "
                f"of the tick {self.instrument.tick_size}"
            )
        if self.touch_size < self.instrument.size_step:
            raise ValueError(
                f"touch_size {self.touch_size} is below one size step "
                f"{self.instrument.size_step} of {self.instrument.symbol}"
            )


class _Regime(NamedTuple):
    start_price: float
    touch_size: float
    """Base coin."""
    median_trade_size: float
    """Base coin."""
    trade_rate_per_s: float
    volatility_1s: float
    """Log-price, per sqrt second, when the symbol is the traded one (or a book's leader)."""
    market_beta: float
    """Its beta to the market (BTCUSDT's is 1); in a book, its beta to the leader is the ratio."""
    idiosyncratic_volatility_1s: float
    """Of its own spread to the leader in a book, per sqrt second."""
    lag_ms: float
    """How far it lags the leader in a book (time constant)."""


_REGIMES = {
    # At 2023-25 prices; a large-tick book's queue at the touch is 80-150 median trades deep,
    # a one-tick book's 25-30. Betas and idiosyncratic volatilities in the range of the 2024
    # majors against BTC (one-second correlations of 0.6-0.9).
    "BTCUSDT": _Regime(64000.0, 0.6, 0.025, 6.0, 4e-5, 1.0, 1.5e-5, 100.0),
    "ETHUSDT": _Regime(3400.0, 9.0, 0.4, 4.0, 5e-5, 1.1, 2.5e-5, 100.0),
    "SOLUSDT": _Regime(150.0, 120.0, 4.0, 5.0, 7e-5, 1.3, 4.5e-5, 150.0),
    "XRPUSDT": _Regime(0.5, 120_000.0, 1_500.0, 5.0, 6e-5, 1.0, 4.5e-5, 200.0),
    "DOGEUSDT": _Regime(0.1, 1_200_000.0, 8_000.0, 5.0, 7e-5, 1.3, 5e-5, 200.0),
    "ADAUSDT": _Regime(0.25, 400_000.0, 3_000.0, 4.0, 6e-5, 1.1, 4.5e-5, 250.0),
    "TRXUSDT": _Regime(0.12, 1_000_000.0, 10_000.0, 3.0, 5e-5, 0.6, 4e-5, 300.0),
    "LINKUSDT": _Regime(14.0, 4_000.0, 40.0, 4.0, 7e-5, 1.2, 4.5e-5, 200.0),
    "AVAXUSDT": _Regime(28.0, 280.0, 10.0, 4.0, 8e-5, 1.3, 5e-5, 200.0),
    "DOTUSDT": _Regime(6.0, 6_000.0, 60.0, 3.0, 7e-5, 1.2, 4.5e-5, 250.0),
}

DEFAULT_HEDGE = "BTCUSDT"
"""A book's hedge, the market's leader, unless one is named."""


def sim_symbol(symbol: str) -> SymbolConfig:
    """The simulator's market of `symbol`, in the regime of its tick (see the module
    docstring); a ValueError naming the symbols it has."""
    instrument = sim_instrument(symbol)
    regime = _REGIMES[symbol]
    large_tick = instrument.tick_size / regime.start_price * 1e4 >= _LARGE_TICK_BPS
    return SymbolConfig(
        instrument=instrument,
        start_price=regime.start_price,
        touch_size=regime.touch_size,
        median_trade_size=regime.median_trade_size,
        trade_rate_per_s=regime.trade_rate_per_s,
        spread_weights=_LARGE_TICK_SPREAD_WEIGHTS if large_tick else _SPREAD_WEIGHTS,
        requote_band_ticks=_LARGE_TICK_BAND_TICKS if large_tick else 0.0,
        burst_drain_levels=_LARGE_TICK_DRAIN_LEVELS if large_tick else _BURST_TILT_DEPTH,
    )


def sim_market(symbols: Sequence[str], seed: int) -> MarketGeneratorConfig:
    """The simulated pair of the engine's symbols: the traded one first, then its hedge (one
    alone is hedged with BTCUSDT, BTCUSDT with ETHUSDT), at the traded one's volatility; a book
    of more is `sim_book`'s."""
    if not 1 <= len(symbols) <= 2:
        raise ValueError(f"the simulator runs a traded symbol and its hedge, got {symbols!r}")
    traded = symbols[0]
    hedge = symbols[1] if len(symbols) == 2 else ("ETHUSDT" if traded == "BTCUSDT" else "BTCUSDT")
    return MarketGeneratorConfig(
        seed=seed,
        traded=sim_symbol(traded),
        hedge=sim_symbol(hedge),
        volatility_1s=_REGIMES[traded].volatility_1s,
    )


def engine_market(symbols: Sequence[str], seed: int) -> MarketGeneratorConfig:
    """The simulated market of the engine's symbols (`EngineConfig.symbols`): `sim_market`'s
    pair for two or fewer, else `sim_book`'s book of the others following the last."""
    if len(symbols) <= 2:
        return sim_market(symbols, seed)
    return sim_book(symbols[:-1], seed, symbols[-1])


def sim_book(quoted: Sequence[str], seed: int, hedge: str = DEFAULT_HEDGE) -> MarketGeneratorConfig:
    """The simulated market of a book: `quoted` (1..MAX_QUOTED_SYMBOLS of the table) follow
    `hedge`, the leader, each with its regime's beta, lag and idiosyncratic volatility; a
    one-line ValueError naming what is wrong."""
    check_book_symbols(quoted, hedge)
    leader = _REGIMES[sim_instrument(hedge).symbol]
    legs = []
    for symbol in quoted:
        market = sim_symbol(symbol)
        regime = _REGIMES[symbol]
        legs.append(
            QuotedSymbol(
                market=market,
                beta=regime.market_beta / leader.market_beta,
                lag_ms=regime.lag_ms,
                idiosyncratic_volatility_1s=regime.idiosyncratic_volatility_1s,
            )
        )
    return MarketGeneratorConfig(
        seed=seed,
        traded=legs[0].market,
        hedge=sim_symbol(hedge),
        volatility_1s=leader.volatility_1s,
        quoted=tuple(legs),
    )


@dataclass(frozen=True, slots=True)
class QuotedSymbol:
    """A quoted symbol of a book and how it follows the leader (the book's hedge)."""

    market: SymbolConfig
    beta: float
    """Its log fair price moves `beta` times the leader's."""
    lag_ms: float = 150.0
    """Time constant of its lag behind the leader."""
    idiosyncratic_volatility_1s: float = 4e-5
    """Of its own mean-reverting spread to the leader, per sqrt second."""

    def __post_init__(self) -> None:
        owner = f"QuotedSymbol {self.market.instrument.symbol}"
        require_positive(owner, "beta", self.beta)
        require_number(owner, "lag_ms", self.lag_ms, low=0.0)
        require_positive(owner, "idiosyncratic_volatility_1s", self.idiosyncratic_volatility_1s)


def _default_traded() -> SymbolConfig:
    return sim_symbol("BTCUSDT")


def _default_hedge() -> SymbolConfig:
    return sim_symbol("ETHUSDT")


@dataclass(frozen=True, slots=True)
class MarketGeneratorConfig:
    """Parameters of the simulated market; see the module docstring for the model."""

    seed: int = 1
    start_ms: int = 1_726_000_000_000
    step_ms: int = 10
    traded: SymbolConfig = field(default_factory=_default_traded)
    hedge: SymbolConfig = field(default_factory=_default_hedge)
    volatility_1s: float = 4e-5
    drift_volatility: float = 2e-6
    """Stationary standard deviation of the slow drift, log-price per second."""
    drift_half_life_s: float = 600.0
    flow_half_life_s: float = 2.0
    impact_lag_s: float = 0.7
    hedge_beta: float = 1.0
    hedge_lag_ms: float = 150.0
    spread_half_life_s: float = 45.0
    spread_volatility_1s: float = 4e-5
    burst_rate_per_min: float = 0.3
    burst_lead_ms: int = 500
    burst_jump_ms: int = 300
    burst_jump_sigmas: float = 8.0
    quoted: tuple[QuotedSymbol, ...] = ()
    """Empty: a pair, `traded` drives and `hedge` follows it (`hedge_beta`, `hedge_lag_ms`,
    `spread_volatility_1s`). Set: a book, `hedge` leads at `volatility_1s` and each quoted symbol
    follows it with its own parameters; `traded` is then the first quoted symbol. Every symbol of
    a book has informed bursts at `burst_rate_per_min`."""

    def __post_init__(self) -> None:
        owner = "MarketGeneratorConfig"
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.start_ms < 0:
            raise ValueError(f"start_ms must be >= 0, got {self.start_ms}")
        if not 1 <= self.step_ms <= 100:
            raise ValueError(f"step_ms must be within 1..100, got {self.step_ms}")
        if self.traded.instrument.symbol == self.hedge.instrument.symbol:
            raise ValueError("traded and hedge symbols must differ")
        if self.quoted:
            check_book_symbols(
                [leg.market.instrument.symbol for leg in self.quoted], self.hedge.instrument.symbol
            )
            if self.traded != self.quoted[0].market:
                raise ValueError("a book's traded symbol is its first quoted one")
        require_positive(owner, "volatility_1s", self.volatility_1s)
        require_number(owner, "drift_volatility", self.drift_volatility, low=0.0)
        require_positive(owner, "drift_half_life_s", self.drift_half_life_s)
        require_positive(owner, "flow_half_life_s", self.flow_half_life_s)
        require_positive(owner, "impact_lag_s", self.impact_lag_s)
        require_positive(owner, "hedge_beta", self.hedge_beta)
        require_number(owner, "hedge_lag_ms", self.hedge_lag_ms, low=0.0)
        require_positive(owner, "spread_half_life_s", self.spread_half_life_s)
        require_number(owner, "spread_volatility_1s", self.spread_volatility_1s, low=0.0)
        require_number(owner, "burst_rate_per_min", self.burst_rate_per_min, low=0.0)
        if self.burst_lead_ms < 2 * self.step_ms:
            raise ValueError(
                f"burst_lead_ms must be at least two steps ({2 * self.step_ms}), "
                f"got {self.burst_lead_ms}"
            )
        if self.burst_jump_ms < self.step_ms:
            raise ValueError(
                f"burst_jump_ms must be at least one step ({self.step_ms}), "
                f"got {self.burst_jump_ms}"
            )
        require_positive(owner, "burst_jump_sigmas", self.burst_jump_sigmas)


class _RandomStream:
    """Scalar draws from a numpy Generator, pre-drawn in blocks (scalar numpy calls are slow)."""

    __slots__ = ("normal", "uniform")

    def __init__(self, seed: np.random.SeedSequence) -> None:
        rng = np.random.Generator(np.random.PCG64(seed))
        self.uniform: Callable[[], float] = _blocks(rng.random).__next__
        self.normal: Callable[[], float] = _blocks(rng.standard_normal).__next__

    def exponential(self) -> float:
        return -math.log(1.0 - self.uniform())


def _blocks(draw: Callable[[int], np.ndarray]) -> Iterator[float]:
    while True:
        yield from draw(_POOL_SIZE).tolist()


class _ActiveBurst(NamedTuple):
    side: OrderSide
    jump_start_ms: int
    jump_end_ms: int
    jump_per_step: float


class _SymbolBook:
    """One symbol's latent flow, ladder of displayed sizes and event clocks (integer lots)."""

    def __init__(
        self, config: SymbolConfig, random: _RandomStream, trade_ids: Iterator[int], now_ms: int
    ) -> None:
        self.config = config
        self.instrument = config.instrument
        self.random = random
        self.levels = config.levels
        touch_lots = config.touch_size / config.instrument.size_step
        self.mean_lots = [
            touch_lots * (1.0 + config.depth_growth * depth) for depth in range(self.levels)
        ]
        self.median_trade_lots = config.median_trade_size / config.instrument.size_step
        self.flow = 0.0
        self.lagged_flow = 0.0
        self.drained_side: OrderSide | None = None
        self.extra_trade_rate = 0.0
        self.spread_ticks = 1
        self.band_ticks = config.requote_band_ticks
        self.drain_levels = config.burst_drain_levels
        start_ticks = config.instrument.to_ticks(config.start_price)
        self.bid_anchor = start_ticks
        self.ask_anchor = start_ticks + 1
        self.bids = [self._fresh_lots(OrderSide.BUY, depth) for depth in range(self.levels)]
        self.asks = [self._fresh_lots(OrderSide.SELL, depth) for depth in range(self.levels)]
        self.next_trade_ms = now_ms + random.exponential() * 1000.0 / self.trade_rate()
        self.next_event_ms = now_ms + random.exponential() * 1000.0 / config.book_event_rate_per_s
        self.trade_ids = trade_ids

    def trade_rate(self) -> float:
        return self.config.trade_rate_per_s * (1.0 + 0.5 * abs(self.flow)) + self.extra_trade_rate

    def target_lots(self, side: OrderSide, depth: int) -> float:
        target = self.mean_lots[depth]
        if depth < _TILT_DEPTH_LIMIT:
            tilt = side.sign * self.config.imbalance_strength * self.flow
            target *= math.exp(tilt * math.exp(-depth / _TILT_DEPTH_SCALE))
        if side is self.drained_side and depth < self.drain_levels:
            target *= _BURST_DRAIN_FACTOR
        return target

    def drain(self) -> None:
        """Makers pull from the side informed flow is about to hit (once per step of a lead)."""
        ladder = self.bids if self.drained_side is OrderSide.BUY else self.asks
        for depth in range(self.drain_levels):
            ladder[depth] = int(ladder[depth] * _BURST_PULL_PER_STEP)

    def _fresh_lots(self, side: OrderSide, depth: int) -> int:
        if depth > 0 and self.random.uniform() < _GAP_PROBABILITY:
            return 0
        noise = math.exp(0.5 * self.random.normal() - 0.125)
        return max(1, round(self.target_lots(side, depth) * noise))

    def requote(self, fair_ticks: float) -> None:
        """Move the quoted touch to straddle the fair price, shifting both ladders."""
        target = fair_ticks + 0.5 - 0.5 * self.spread_ticks
        bid_anchor = math.floor(target)
        if (
            bid_anchor != self.bid_anchor
            and self.band_ticks
            and self.bid_anchor - self.band_ticks <= target < self.bid_anchor + 1 + self.band_ticks
        ):
            bid_anchor = self.bid_anchor
        ask_anchor = bid_anchor + self.spread_ticks
        shift = bid_anchor - self.bid_anchor
        if shift > 0:
            keep = self.bids[: max(0, self.levels - shift)]
            fresh = [
                self._fresh_lots(OrderSide.BUY, depth) for depth in range(min(shift, self.levels))
            ]
            self.bids = fresh + keep
        elif shift < 0:
            keep = self.bids[-shift:]
            self.bids = keep + [
                self._fresh_lots(OrderSide.BUY, depth) for depth in range(len(keep), self.levels)
            ]
        shift = ask_anchor - self.ask_anchor
        if shift < 0:
            keep = self.asks[: max(0, self.levels + shift)]
            fresh = [
                self._fresh_lots(OrderSide.SELL, depth) for depth in range(min(-shift, self.levels))
            ]
            self.asks = fresh + keep
        elif shift > 0:
            keep = self.asks[shift:]
            self.asks = keep + [
                self._fresh_lots(OrderSide.SELL, depth) for depth in range(len(keep), self.levels)
            ]
        self.bid_anchor = bid_anchor
        self.ask_anchor = ask_anchor

    def book_event(self) -> None:
        """One add or cancel, pulling a level's size toward its target."""
        side = OrderSide.BUY if self.random.uniform() < 0.5 else OrderSide.SELL
        if self.random.uniform() < _EVENT_UNIFORM_SHARE:
            depth = int(self.random.uniform() * self.levels)
        else:
            depth = min(self.levels - 1, int(self.random.exponential() * _EVENT_DEPTH_SCALE))
        ladder = self.bids if side is OrderSide.BUY else self.asks
        size = ladder[depth]
        target = self.target_lots(side, depth)
        if self.random.uniform() < target / (target + size):
            clip = 0.4 * target * math.exp(0.6 * self.random.normal() - 0.18)
            ladder[depth] = size + max(1, round(clip))
        elif size > 0:
            cancelled = max(1, round(size * (0.2 + 0.8 * self.random.uniform())))
            ladder[depth] = max(0, size - cancelled)

    def aggressive_order(self, ts_ms: int, burst_side: OrderSide | None) -> list[SimTrade]:
        """An aggressive order of random side and size; one print per level it consumes."""
        if burst_side is not None and self.random.uniform() < _BURST_AGGRESSOR_SHARE:
            side = burst_side
            size_scale = 3.0
        else:
            buy_probability = 1.0 / (1.0 + math.exp(-1.5 * self.flow))
            side = OrderSide.BUY if self.random.uniform() < buy_probability else OrderSide.SELL
            size_scale = 1.0 + 0.3 * abs(self.flow)
        wanted = max(
            1, round(self.median_trade_lots * size_scale * math.exp(0.8 * self.random.normal()))
        )
        ladder = self.asks if side is OrderSide.BUY else self.bids
        trades: list[SimTrade] = []
        for depth in range(min(_MAX_SWEEP_LEVELS, self.levels)):
            available = ladder[depth]
            if available == 0:
                continue
            taken = min(wanted, available)
            ladder[depth] = available - taken
            wanted -= taken
            ticks = self.ask_anchor + depth if side is OrderSide.BUY else self.bid_anchor - depth
            trades.append(
                SimTrade(
                    self.instrument.symbol,
                    self.instrument.price_of(ticks),
                    self.instrument.size_of(taken),
                    side,
                    next(self.trade_ids),
                    ts_ms,
                )
            )
            if wanted == 0:
                break
        return trades

    def run_events(self, until_ms: float, burst_side: OrderSide | None) -> list[SimTrade]:
        """Process trade and book events due up to `until_ms`, in time order."""
        trades: list[SimTrade] = []
        event_interval_ms = 1000.0 / self.config.book_event_rate_per_s
        while min(self.next_trade_ms, self.next_event_ms) <= until_ms:
            if self.next_trade_ms <= self.next_event_ms:
                trades.extend(self.aggressive_order(int(self.next_trade_ms), burst_side))
                self.next_trade_ms += self.random.exponential() * 1000.0 / self.trade_rate()
            else:
                self.book_event()
                self.next_event_ms += self.random.exponential() * event_interval_ms
        return trades

    def switch_spread(self, step_s: float) -> None:
        if self.random.uniform() >= _SPREAD_SWITCH_PER_S * step_s:
            return
        draw = self.random.uniform()
        cumulative = 0.0
        for ticks, weight in zip(_SPREAD_CHOICES, self.config.spread_weights, strict=True):
            cumulative += weight
            if draw < cumulative:
                self.spread_ticks = ticks
                return
        self.spread_ticks = _SPREAD_CHOICES[-1]

    def levels_view(self, ts_ms: int, depth: int) -> BookLevels:
        bids = np.asarray(self.bids, dtype=np.int64)
        asks = np.asarray(self.asks, dtype=np.int64)
        bid_depths = np.flatnonzero(bids)[:depth]
        ask_depths = np.flatnonzero(asks)[:depth]
        tick = self.instrument.tick_size
        step = self.instrument.size_step
        return BookLevels(
            self.instrument.symbol,
            ts_ms,
            (self.bid_anchor - bid_depths) * tick,
            bids[bid_depths] * step,
            (self.ask_anchor + ask_depths) * tick,
            asks[ask_depths] * step,
        )


class _Leg:
    """One symbol's place in the market: its book, the stream its latent draws come from, how it
    follows the leader (none for the leader itself) and its informed burst."""

    __slots__ = (
        "beta",
        "book",
        "burst",
        "has_bursts",
        "lag_gain",
        "lagged_leader",
        "latent",
        "origin",
        "spread",
        "spread_noise",
        "volatility_1s",
    )

    def __init__(
        self,
        book: _SymbolBook,
        latent: _RandomStream,
        *,
        has_bursts: bool,
        volatility_1s: float,
        beta: float = 1.0,
        lag_gain: float = 1.0,
        spread_noise: float = 0.0,
    ) -> None:
        self.book = book
        self.latent = latent
        self.has_bursts = has_bursts
        self.volatility_1s = volatility_1s
        """Of its log fair price over a second: the size of its bursts' jumps."""
        self.beta = beta
        self.lag_gain = lag_gain
        self.spread_noise = spread_noise
        self.origin = math.log(book.config.start_price)
        self.lagged_leader = 0.0
        self.spread = 0.0
        self.burst: _ActiveBurst | None = None


def _lag_gain(step_ms: int, lag_ms: float) -> float:
    return 1.0 if lag_ms == 0 else 1.0 - math.exp(-step_ms / lag_ms)


def _symbol_seed(seed: int, symbol: str) -> np.random.SeedSequence:
    """The seed of `symbol`'s streams in a book: keyed by its name, not its place in the book."""
    return np.random.SeedSequence(seed, spawn_key=(int.from_bytes(symbol.encode(), "big"),))


class MarketGenerator:
    """Steps the simulated market forward; see the module docstring for the model."""

    def __init__(self, config: MarketGeneratorConfig) -> None:
        self.config = config
        self._now_ms = config.start_ms
        step_s = config.step_ms / 1000.0
        self._step_s = step_s
        flow_tau = config.flow_half_life_s / math.log(2.0)
        self._flow_decay = math.exp(-step_s / flow_tau)
        self._flow_noise = math.sqrt(1.0 - self._flow_decay**2)
        self._lag_gain = 1.0 - math.exp(-step_s / config.impact_lag_s)
        drift_tau = config.drift_half_life_s / math.log(2.0)
        self._drift_decay = math.exp(-step_s / drift_tau)
        self._drift_noise = config.drift_volatility * math.sqrt(1.0 - self._drift_decay**2)
        spread_tau = config.spread_half_life_s / math.log(2.0)
        self._spread_decay = math.exp(-step_s / spread_tau)
        spread_scale = math.sqrt(spread_tau / 2.0 * (1.0 - self._spread_decay**2))
        self._price_noise = config.volatility_1s * math.sqrt(step_s)
        self._leader, self._followers, self._symbols = (
            self._book_legs(config, spread_scale)
            if config.quoted
            else self._pair_legs(config, spread_scale)
        )
        self._legs = (self._leader, *self._followers)
        self._books = {leg.book.instrument.symbol: leg.book for leg in self._legs}
        self._by_symbol = {leg.book.instrument.symbol: leg for leg in self._legs}
        self._log_fair = self._leader.origin
        for leg in self._followers:
            leg.lagged_leader = self._leader.origin
        self._drift = 0.0
        self.bursts: deque[InformedBurst] = deque(maxlen=_MAX_BURSTS_KEPT)
        """Informed bursts started so far, oldest first (a bounded history)."""

    @staticmethod
    def _pair_legs(
        config: MarketGeneratorConfig, spread_scale: float
    ) -> tuple[_Leg, tuple[_Leg, ...], tuple[str, ...]]:
        """The traded symbol leads, its hedge follows; one latent stream for both."""
        seeds = np.random.SeedSequence(config.seed).spawn(3)
        latent = _RandomStream(seeds[0])
        trade_ids = itertools.count(_TRADE_ID_BASE)
        traded = _SymbolBook(config.traded, _RandomStream(seeds[1]), trade_ids, config.start_ms)
        hedge = _SymbolBook(config.hedge, _RandomStream(seeds[2]), trade_ids, config.start_ms)
        leader = _Leg(traded, latent, has_bursts=True, volatility_1s=config.volatility_1s)
        follower = _Leg(
            hedge,
            latent,
            has_bursts=False,
            volatility_1s=config.volatility_1s,
            beta=config.hedge_beta,
            lag_gain=_lag_gain(config.step_ms, config.hedge_lag_ms),
            spread_noise=config.spread_volatility_1s * spread_scale,
        )
        symbols = (config.traded.instrument.symbol, config.hedge.instrument.symbol)
        return leader, (follower,), symbols

    @staticmethod
    def _book_legs(
        config: MarketGeneratorConfig, spread_scale: float
    ) -> tuple[_Leg, tuple[_Leg, ...], tuple[str, ...]]:
        """The hedge leads, every quoted symbol follows; each symbol has its own streams and
        trade ids (Bitget's are per symbol)."""

        def streams(market: SymbolConfig) -> tuple[_SymbolBook, _RandomStream]:
            latent_seed, book_seed = _symbol_seed(config.seed, market.instrument.symbol).spawn(2)
            trade_ids = itertools.count(_TRADE_ID_BASE)
            book = _SymbolBook(market, _RandomStream(book_seed), trade_ids, config.start_ms)
            return book, _RandomStream(latent_seed)

        leader = _Leg(*streams(config.hedge), has_bursts=True, volatility_1s=config.volatility_1s)
        followers = tuple(
            _Leg(
                *streams(quoted.market),
                has_bursts=True,
                volatility_1s=math.hypot(
                    quoted.beta * config.volatility_1s, quoted.idiosyncratic_volatility_1s
                ),
                beta=quoted.beta,
                lag_gain=_lag_gain(config.step_ms, quoted.lag_ms),
                spread_noise=quoted.idiosyncratic_volatility_1s * spread_scale,
            )
            for quoted in config.quoted
        )
        symbols = (
            *(leg.market.instrument.symbol for leg in config.quoted),
            leader.book.instrument.symbol,
        )
        return leader, followers, symbols

    @property
    def now_ms(self) -> int:
        """Simulated time of the last completed step."""
        return self._now_ms

    @property
    def symbols(self) -> tuple[str, ...]:
        """A pair's (traded, hedge); a book's quoted symbols, then its hedge."""
        return self._symbols

    def instrument(self, symbol: str) -> Instrument:
        return self._books[symbol].instrument

    def fair_price(self, symbol: str) -> float:
        """The latent fair price (not observable by a trader; for labels and tests)."""
        return math.exp(self._leg_log_fair(self._by_symbol[symbol]))

    def book(self, symbol: str, depth: int | None = None) -> BookLevels:
        """The displayed book, at most `depth` non-empty levels per side (default: all)."""
        book = self._books[symbol]
        return book.levels_view(self._now_ms, book.levels if depth is None else depth)

    def advance_to(self, t_ms: int) -> list[SimTrade]:
        """Run every whole step ending at or before `t_ms`; the trades printed, oldest first."""
        trades: list[SimTrade] = []
        step_ms = self.config.step_ms
        while self._now_ms + step_ms <= t_ms:
            trades.extend(self._step(self._now_ms + step_ms))
        trades.sort(key=lambda trade: trade.ts_ms)
        return trades

    def _leg_log_fair(self, leg: _Leg) -> float:
        if leg is self._leader:
            return self._log_fair
        return leg.origin + leg.beta * (leg.lagged_leader - self._leader.origin) + leg.spread

    def _step(self, end_ms: int) -> list[SimTrade]:
        step_s = self._step_s
        for leg in self._legs:
            book = leg.book
            book.flow = self._flow_decay * book.flow + self._flow_noise * leg.latent.normal()
            book.lagged_flow += (book.flow - book.lagged_flow) * self._lag_gain
        leader = self._leader
        burst_move = self._update_burst(leader, end_ms)
        self._drift = self._drift_decay * self._drift + self._drift_noise * leader.latent.normal()
        leader_impact = leader.book.config.flow_impact_1s * leader.book.lagged_flow
        self._log_fair += (
            (self._drift + leader_impact) * step_s
            + self._price_noise * leader.latent.normal()
            + burst_move
        )
        for leg in self._followers:
            leg.lagged_leader += (self._log_fair - leg.lagged_leader) * leg.lag_gain
            impact = leg.book.config.flow_impact_1s * leg.book.lagged_flow
            leg.spread = (
                self._spread_decay * leg.spread
                + leg.spread_noise * leg.latent.normal()
                + impact * step_s
            )
            if leg.has_bursts:
                leg.spread += self._update_burst(leg, end_ms)
        trades: list[SimTrade] = []
        for leg in self._legs:
            book = leg.book
            book.switch_spread(step_s)
            book.requote(math.exp(self._leg_log_fair(leg)) / book.instrument.tick_size)
            trades.extend(book.run_events(end_ms, leg.burst.side if leg.burst else None))
        self._now_ms = end_ms
        return trades

    def _update_burst(self, leg: _Leg, end_ms: int) -> float:
        """Start, progress or end `leg`'s informed burst; the log move it applies this step."""
        config = self.config
        book = leg.book
        burst = leg.burst
        if burst is None:
            rate_per_step = config.burst_rate_per_min / 60.0 * self._step_s
            if leg.latent.uniform() >= rate_per_step:
                return 0.0
            self._start_burst(leg, end_ms)
            return 0.0
        if end_ms <= burst.jump_start_ms:
            book.flow = burst.side.sign * max(_BURST_FLOW, burst.side.sign * book.flow)
            book.drain()
            return 0.0
        book.drained_side = None
        book.extra_trade_rate = 0.0
        if end_ms >= burst.jump_end_ms:
            leg.burst = None
        return burst.jump_per_step

    def _start_burst(self, leg: _Leg, start_ms: int) -> None:
        config = self.config
        latent = leg.latent
        side = OrderSide.BUY if latent.uniform() < 0.5 else OrderSide.SELL
        lead_ms = round(config.burst_lead_ms * (0.7 + 0.6 * latent.uniform()))
        lead_ms = max(2 * config.step_ms, lead_ms - lead_ms % config.step_ms)
        jump_steps = max(1, config.burst_jump_ms // config.step_ms)
        sigmas = config.burst_jump_sigmas * (0.8 + 0.5 * latent.uniform())
        jump = side.sign * sigmas * leg.volatility_1s
        jump_start_ms = start_ms + lead_ms
        book = leg.book
        record = InformedBurst(
            book.instrument.symbol,
            side,
            start_ms,
            jump_start_ms,
            jump_start_ms + jump_steps * config.step_ms,
            jump,
        )
        self.bursts.append(record)
        leg.burst = _ActiveBurst(side, record.jump_start_ms, record.jump_end_ms, jump / jump_steps)
        book.flow = side.sign * _BURST_FLOW
        book.drained_side = side.opposite
        book.extra_trade_rate = _BURST_TRADE_RATE_PER_S
        book.next_trade_ms = start_ms + book.random.exponential() * 1000.0 / book.trade_rate()
