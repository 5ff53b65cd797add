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
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from engine.bitget.orders import OrderSide
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.feed.events import FeedState
from engine.gpu import GpuSample, VramBudget
from engine.laya.decide import VerdictStreamView
from engine.laya.scorecard import ScorecardView
from engine.market.instruments import Instrument
from engine.risk.events import TradingState
from engine.risk.limits import OverrideBounds
from engine.risk.overrides import RiskOverrides
from engine.trading.config import TradingMode
from engine.units import coin

# Status


@dataclass(frozen=True, slots=True)
class FeedView:
    """One symbol's market data: `last_frame_age_ms` is None before the first frame."""

    symbol: str
    state: FeedState
    frames_per_s: float
    last_frame_age_ms: float | None


class PositionLine(NamedTuple):
    """One symbol's position: `size` signed (> 0 long), PnL in USDT (`realized_pnl` before
    `fees`, which are a cost)."""

    symbol: str
    size: float
    entry_price: float
    mark_price: float
    unrealized_pnl: float
    realized_pnl: float = 0.0
    fees: float = 0.0
    stood_aside: str = ""
    """Why the symbol is paused alone at the gateway (the venue stopped it, the operator);
    "" while it trades."""
    delta_weight: float = 1.0
    """Its weight in the book's net delta now: a quoted symbol's beta, the hedge's ratio."""
    configured_weight: float = 1.0
    """That weight as configured, before Kev or the operator moved it."""

    @property
    def pnl(self) -> float:
        """Realized less fees plus unrealized, this session."""
        return self.realized_pnl - self.fees + self.unrealized_pnl


@dataclass(frozen=True, slots=True)
class PnlView:
    """`daily` is realized minus fees plus unrealized since the daily reset."""

    realized: float
    unrealized: float
    fees: float
    daily: float


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
    """Where Laya's rows really run (`engine.laya.classifier.laya_runs_on`: "CUDA",
    "CPU native kernel", ...) and the model's version; `warming`, while Laya stands aside on a
    symbol, what each still waits for."""

    runs_on: str
    model_version: str
    warming: str = ""
    warming_s: tuple[tuple[str, float], ...] = ()
    """Each symbol Laya stands aside on while it warms up, and the market seconds it waits."""
    stood_aside: tuple[tuple[str, str], ...] = ()
    """Each symbol Laya stands aside on for good, and why (its model would not start)."""


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


class SymbolRole(enum.StrEnum):
    """What the engine does with a symbol: quotes it, hedges the book's delta on it, or only
    reads its market (a leader Laya's cross features read, or everything when watching)."""

    QUOTED = "quoted"
    HEDGE = "hedge"
    WATCHED = "watched"


@dataclass(frozen=True, slots=True)
class StatusView:
    """`contracts`: the market's symbols' contracts where known, the quoted symbol's first
    (the bar names its tick and fees); prices and sizes print at their decimals. `feeds` has
    one entry per symbol of the book, the quoted first; `quoted` and `hedge` name their
    roles (the rest are watched)."""

    mode: TradingMode
    feeds: tuple[FeedView, ...]
    trading: TradingView
    laya: LayaView
    kev: KevStatusView
    contracts: tuple[Instrument, ...] = ()
    quoted: tuple[str, ...] = ()
    hedge: str | None = None

    def contract(self, symbol: str) -> Instrument | None:
        return next((item for item in self.contracts if item.symbol == symbol), None)

    @property
    def symbols(self) -> tuple[str, ...]:
        """The book's symbols, in the order the engine lists them."""
        return tuple(feed.symbol for feed in self.feeds)

    def role(self, symbol: str) -> SymbolRole:
        if symbol in self.quoted:
            return SymbolRole.QUOTED
        return SymbolRole.HEDGE if symbol == self.hedge else SymbolRole.WATCHED


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
    """Up to 15 levels a side, best first, with our resting orders, the book's contract
    (None where unknown) and the display precision (the contract's, else the fewest decimals
    that print the levels)."""

    symbol: str
    bids: tuple[DepthLevel, ...]
    asks: tuple[DepthLevel, ...]
    microprice: float
    own_orders: tuple[OwnOrder, ...]
    price_decimals: int
    size_decimals: int
    exchange_ts_ms: int
    instrument: Instrument | None = None

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

    @property
    def spread_ticks(self) -> int | None:
        """The spread in whole ticks; None without a contract, or off its tick (a spot
        recording's finer prices)."""
        spread, instrument = self.spread, self.instrument
        if instrument is None or not (math.isfinite(spread) and instrument.is_on_tick(spread)):
            return None
        return instrument.to_ticks(spread)


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
    scorecard: ScorecardView | None = None
    """Laya's scorecard (engine/laya/scorecard.py), as of its last score pass."""


SymbolViewT = TypeVar("SymbolViewT", DepthView, ImbalanceView)


def symbol_view(views: tuple[SymbolViewT, ...], symbol: str | None) -> SymbolViewT | None:
    """`symbol`'s entry of `views` (the snapshot's depth or imbalance), None before its book."""
    return next((view for view in views if view.symbol == symbol), None)
