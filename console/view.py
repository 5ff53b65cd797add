"""What the console shows: frozen view models, built by the engine side, rendered by the panes.

A `ConsoleSnapshot` is a complete picture of the engine at one instant. The engine adapter
builds a new one at up to the console's refresh rate and hands it over by reference; the UI
never mutates it. Reuse unchanged parts (the same `DepthView` object when the book did not
move): panes compare views for equality and redraw only what changed, and identical objects
compare in O(1).

Conventions: times are wall-clock UTC (`*_ns` nanoseconds, `*_ms` milliseconds since the
epoch); sequences of past things (verdicts, Kev decisions, fills, events, plot samples) are
oldest first; sizes are base coin, money USDT, latencies microseconds.

Discrete events (fills, denials, faults, Kev decisions, state changes) are not part of the
snapshot: they come one by one, in order, from `EngineHandle.events_since` as `ConsoleEvent`s.
"""

from __future__ import annotations

import enum
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from engine.bitget.orders import OrderSide
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.feed.events import FeedState
from engine.gpu import GpuSample, VramBudget
from engine.laya.decide import VerdictStreamView
from engine.risk.events import TradingState
from engine.risk.limits import OverrideBounds
from engine.units import coin


class Mode(enum.StrEnum):
    """Where orders go: SIM (in-process simulated exchange), PAPER (real market data, simulated
    fills), DEMO (Bitget's demo environment), LIVE (real money)."""

    SIM = "SIM"
    PAPER = "PAPER"
    DEMO = "DEMO"
    LIVE = "LIVE"


# Status


@dataclass(frozen=True, slots=True)
class FeedView:
    """One symbol's market data: `last_frame_age_ms` is None before the first frame."""

    symbol: str
    state: FeedState
    frames_per_s: float
    last_frame_age_ms: float | None


class PositionLine(NamedTuple):
    """One open position: `size` signed (> 0 long), PnL in USDT."""

    symbol: str
    size: float
    entry_price: float
    mark_price: float
    unrealized_pnl: float


@dataclass(frozen=True, slots=True)
class PnlView:
    """`daily` is realized minus fees plus unrealized since the daily reset."""

    realized: float
    unrealized: float
    fees: float
    daily: float


def _require_number(name: str, value: float, low: float, high: float = math.inf) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and low <= value <= high):
        bound = f"[{low:g}, {high:g}]" if math.isfinite(high) else f">= {low:g}"
        raise ValueError(f"{name} must be {bound}, got {value!r}")


def _require_rate(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True, slots=True)
class RiskOverrides:
    """The operator's risk limits, applied at once as a whole: `max_position` per symbol (base
    coin), `max_net_delta` (USDT), `max_slippage_bps`, the order rate per second and per
    minute, and `risk_scale` (0..1, multiplies the position, notional and net delta caps)."""

    max_position: Mapping[str, float]
    max_net_delta: float
    max_slippage_bps: float
    orders_per_second: int
    orders_per_minute: int
    risk_scale: float

    def __post_init__(self) -> None:
        # A read-only copy, so the overrides cannot change after validation.
        object.__setattr__(self, "max_position", types.MappingProxyType(dict(self.max_position)))
        if not self.max_position:
            raise ValueError("max_position must name at least one symbol")
        for symbol, size in self.max_position.items():
            _require_number(f"max position {symbol}", size, 0.0)
        _require_number("max net delta", self.max_net_delta, 0.0)
        _require_number("max slippage", self.max_slippage_bps, 0.0, 10_000.0)
        _require_rate("orders per second", self.orders_per_second)
        _require_rate("orders per minute", self.orders_per_minute)
        _require_number("risk scale", self.risk_scale, 0.0, 1.0)

    def beyond(self, bounds: OverrideBounds) -> tuple[str, ...]:
        """One line per value outside the engine's hard bounds (empty when all are within)."""
        problems = [
            f"max position {symbol}: no bound configured for this symbol"
            for symbol in self.max_position
            if symbol not in bounds.max_position
        ]
        problems += [
            f"max position {symbol}: {size:g} is above the ceiling {bounds.max_position[symbol]:g}"
            for symbol, size in self.max_position.items()
            if symbol in bounds.max_position and size > bounds.max_position[symbol]
        ]
        for name, value, ceiling in (
            ("max net delta", self.max_net_delta, bounds.max_net_delta),
            ("max slippage", self.max_slippage_bps, bounds.max_slippage_bps),
            ("orders per second", self.orders_per_second, bounds.max_orders_per_second),
            ("orders per minute", self.orders_per_minute, bounds.max_orders_per_minute),
        ):
            if value > ceiling:
                problems.append(f"{name}: {value:g} is above the ceiling {ceiling:g}")
        return tuple(problems)


@dataclass(frozen=True, slots=True)
class TradingView:
    """The risk gateway's side of the status: state and why, whether a flatten is running,
    exposure, PnL, the limits in force (`overrides`), their hard `bounds`, and the phrase the
    operator types to re-arm the kill switch."""

    state: TradingState
    reason: str
    flattening: bool
    positions: tuple[PositionLine, ...]
    open_orders: int
    net_delta: float
    max_net_delta: float
    pnl: PnlView
    overrides: RiskOverrides
    bounds: OverrideBounds
    rearm_phrase: str

    @property
    def exposed(self) -> bool:
        """Open positions or resting orders: quitting must ask what to do with them."""
        return self.open_orders > 0 or any(position.size != 0 for position in self.positions)

    @property
    def exposure(self) -> str:
        """What is open, for people: "2 orders and a position of +0.002 BTC", "nothing"."""
        sizes = [coin(p.symbol, p.size, signed=True) for p in self.positions if p.size != 0]
        parts = []
        if self.open_orders:
            parts.append(f"{self.open_orders} order{'s' if self.open_orders != 1 else ''}")
        if len(sizes) == 1:
            parts.append(f"a position of {sizes[0]}")
        elif sizes:
            parts.append(f"positions of {', '.join(sizes)}")
        return " and ".join(parts) or "nothing"


@dataclass(frozen=True, slots=True)
class LayaView:
    """The execution provider that really runs (CUDA or CPU) and the model's version;
    `warming`, while Laya stands aside on a symbol, what each still waits for."""

    provider: str
    model_version: str
    warming: str = ""


class KevState(enum.StrEnum):
    ONLINE = "online"
    OFFLINE = "offline"
    BUSY = "busy"


@dataclass(frozen=True, slots=True)
class KevStatusView:
    """`detail` says why Kev is offline (or is empty); `last_latency_ms` is None before the
    first answer."""

    state: KevState
    model: str
    last_latency_ms: float | None
    detail: str = ""


@dataclass(frozen=True, slots=True)
class StatusView:
    mode: Mode
    feeds: tuple[FeedView, ...]
    trading: TradingView
    laya: LayaView
    kev: KevStatusView


# Market


class DepthLevel(NamedTuple):
    price: float
    size: float


class OwnOrder(NamedTuple):
    """One of our resting orders, marked on the ladder at its price."""

    side: OrderSide
    price: float
    size: float


@dataclass(frozen=True, slots=True)
class DepthView:
    """Up to 15 levels a side, best first, with our resting orders and the instrument's
    display precision."""

    symbol: str
    bids: tuple[DepthLevel, ...]
    asks: tuple[DepthLevel, ...]
    microprice: float
    own_orders: tuple[OwnOrder, ...]
    price_decimals: int
    size_decimals: int
    exchange_ts_ms: int

    @property
    def spread(self) -> float:
        if not (self.bids and self.asks):
            return math.nan
        return self.asks[0].price - self.bids[0].price

    @property
    def mid(self) -> float:
        if not (self.bids and self.asks):
            return math.nan
        return (self.asks[0].price + self.bids[0].price) / 2

    @property
    def spread_bps(self) -> float:
        return self.spread / self.mid * 1e4


class ImbalanceReading(NamedTuple):
    """Order-book imbalance (bid - ask) / (bid + ask) over the top 1, 5 and 15 levels, in
    [-1, 1], and the microprice's offset from the mid in bps."""

    obi_1: float
    obi_5: float
    obi_15: float
    microprice_offset_bps: float


@dataclass(frozen=True, slots=True)
class ImbalanceView:
    """`current` at the latest book (None before the first); `series` sampled over the last
    `window_s` seconds at `ages_s` (seconds before now, oldest first, all <= 0). The series
    may be sampled more coarsely than `current` changes: the plot redraws only when it does."""

    symbol: str
    current: ImbalanceReading | None
    window_s: float
    ages_s: tuple[float, ...]
    series: tuple[ImbalanceReading, ...]


# Fast path and hardware


@dataclass(frozen=True, slots=True)
class StageLatency:
    """One stage's percentiles in microseconds since the engine started; `budget_p99_us` is
    the configured p99 budget (None: no budget for this stage)."""

    name: str
    count: int
    p50_us: float
    p99_us: float
    p999_us: float
    max_us: float
    budget_p99_us: float | None = None

    @property
    def over_budget(self) -> bool:
        return (
            self.budget_p99_us is not None and self.count > 0 and self.p99_us > self.budget_p99_us
        )


class HistogramBin(NamedTuple):
    low_us: float
    high_us: float
    count: int


@dataclass(frozen=True, slots=True)
class LatencyView:
    """Stages in pipeline order (parse, book, features, infer, decide, total, then kev) and
    the distribution of the total per books15 frame."""

    stages: tuple[StageLatency, ...]
    total_histogram: tuple[HistogramBin, ...]


@dataclass(frozen=True, slots=True)
class VramView:
    sample: GpuSample
    budget: VramBudget


# Kev


class KevOutcome(enum.StrEnum):
    """What became of a Kev decision: applied, refused by the risk gateway, or too old when it
    arrived."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    STALE = "stale"


@dataclass(frozen=True, slots=True)
class KevDecisionView:
    """`why` explains a rejection or staleness (or notes on an accepted one)."""

    at_ns: int
    latency_ms: float
    action: str
    outcome: KevOutcome
    why: str
    reasoning: str


# Events


class EventKind(enum.StrEnum):
    FILL = "fill"
    DENIAL = "denial"
    FAULT = "fault"
    KEV = "kev"
    STATE = "state"
    FEED = "feed"
    COMMAND = "command"
    SYSTEM = "system"


class Severity(enum.StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class EventClock(enum.StrEnum):
    """Which clock an event's time is on: MARKET, the recording's time in a replay (the engine
    runs on it); WALL, the system clock (live, the simulator, and the console's own notes)."""

    MARKET = "market"
    WALL = "wall"


@dataclass(frozen=True, slots=True)
class ConsoleEvent:
    """One discrete event; `event_id` increases by one per event, so gaps are countable;
    `at_ns` is on `clock`."""

    event_id: int
    at_ns: int
    kind: EventKind
    severity: Severity
    text: str
    clock: EventClock = EventClock.WALL


# The whole picture


@dataclass(frozen=True, slots=True)
class ConsoleSnapshot:
    """Everything the console draws, as of `at_ns`. `depth` and `imbalance` have one entry per
    symbol, the traded symbol first; `orders` are the open orders, `fills` the recent ones."""

    at_ns: int
    status: StatusView
    depth: tuple[DepthView, ...]
    imbalance: tuple[ImbalanceView, ...]
    verdicts: VerdictStreamView
    latency: LatencyView
    vram: VramView
    kev_decisions: tuple[KevDecisionView, ...]
    orders: tuple[OrderUpdate, ...]
    fills: tuple[FillUpdate, ...]
