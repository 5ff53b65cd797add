"""Fixed console data and `FakeEngineHandle`, the engine the console tests talk to.

Everything is deterministic: one frozen instant (`AT_NS`), books and series from fixed
formulas, so snapshot SVGs only change when the drawing does.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from textual.app import App, ComposeResult
from textual.widget import Widget

from console.engine.handle import EngineLost, ShutdownPolicy
from console.view import (
    ConsoleEvent,
    ConsoleSnapshot,
    DepthLevel,
    DepthView,
    EventKind,
    FeedView,
    HistogramBin,
    ImbalanceReading,
    ImbalanceView,
    KevDecisionView,
    KevOutcome,
    KevState,
    KevStatusView,
    LatencyView,
    LayaView,
    OwnOrder,
    PnlView,
    PositionLine,
    Severity,
    StageLatency,
    StatusView,
    TradingView,
    VramView,
)
from console.widgets.events import EventsPane
from engine.bitget.orders import OrderSide, OrderStatus
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.feed.events import FeedState
from engine.gpu import GIB, GpuSample, ProcessMemory, VramBudget
from engine.laya.decide import QuoteIntent, VerdictRecord, VerdictStreamView
from engine.laya.scorecard import ModelScore, ScorecardView, SymbolScore
from engine.laya.verdict import Verdict
from engine.market.instruments import BTCUSDT, ETHUSDT, Instrument
from engine.risk.events import TradingState
from engine.risk.limits import OverrideBounds
from engine.risk.overrides import RiskOverrides
from engine.trading.commands import (
    Command,
    CommandResult,
    PauseSymbol,
    Rearm,
    ResumeSymbol,
    SetLimits,
)
from engine.trading.config import TradingMode

STYLES = Path(__file__).resolve().parents[2] / "styles"

AT_NS = 1_723_111_200_123_000_000
"""2024-08-08 10:00:00.123 UTC: the frozen instant of every fixture."""
AT_MS = AT_NS // 1_000_000
LAYA_PID = 4242
KEV_PID = 4343
MIB = 1 << 20

BOUNDS = OverrideBounds(
    max_position={"BTCUSDT": 0.05, "ETHUSDT": 1.0},
    max_net_delta=5_000.0,
    max_slippage_bps=50.0,
    max_orders_per_second=10,
    max_orders_per_minute=600,
    hedge_ratio=(0.5, 1.0),
    betas={"BTCUSDT": (0.8, 1.2)},
)
OVERRIDES = RiskOverrides(
    max_position={"BTCUSDT": 0.02, "ETHUSDT": 0.5},
    max_net_delta=2_500.0,
    max_slippage_bps=10.0,
    orders_per_second=8,
    orders_per_minute=240,
    risk_scale=1.0,
    hedge_ratio=1.0,
    betas={"BTCUSDT": 1.0},
)


def _ladder(
    best: float, step: float, sign: int, seed: int, decimals: int
) -> tuple[DepthLevel, ...]:
    return tuple(
        DepthLevel(
            round(best + sign * step * level, decimals),
            round(0.05 + abs(math.sin(seed + level * 1.7)) * 2.4, 3),
        )
        for level in range(15)
    )


BTC = replace(BTCUSDT, maker_fee_rate=0.0002, taker_fee_rate=0.0006)
"""BTCUSDT with the fees Bitget lists for its base tier."""
NEXO = Instrument("NEXOUSDT", tick_size=0.001, size_step=0.1)
"""A large-tick contract (a tick is 8 bps at 1.21) whose fees are not known."""


def depth_view(symbol: str = "BTCUSDT") -> DepthView:
    if symbol == "BTCUSDT":
        return DepthView(
            symbol="BTCUSDT",
            bids=_ladder(60_000.0, 0.1, -1, 1, 1),
            asks=_ladder(60_000.1, 0.1, 1, 2, 1),
            microprice=60_000.0621,
            own_orders=(
                OwnOrder(OrderSide.BUY, 59_999.8, 0.01),
                OwnOrder(OrderSide.SELL, 60_000.4, 0.01),
                OwnOrder(OrderSide.SELL, 60_003.0, 0.02),
            ),
            price_decimals=1,
            size_decimals=3,
            exchange_ts_ms=AT_MS - 12,
            instrument=BTC,
        )
    return DepthView(
        symbol=symbol,
        bids=tuple(
            DepthLevel(level.price / 20, level.size * 10)
            for level in _ladder(60_000.0, 0.2, -1, 3, 1)
        ),
        asks=tuple(
            DepthLevel(level.price / 20, level.size * 10)
            for level in _ladder(60_000.2, 0.2, 1, 4, 1)
        ),
        microprice=3_000.0041,
        own_orders=(),
        price_decimals=2,
        size_decimals=2,
        exchange_ts_ms=AT_MS - 15,
        instrument=ETHUSDT,
    )


def nexo_depth_view() -> DepthView:
    """A thin large-tick book: bids at 1.210, 1.209, 1.207 and 1.204, asks at 1.212, 1.213 and
    1.216; ours at the best bid, at the empty 1.208 and at the empty 1.215 (a paper venue's
    orders are not in the book)."""
    return DepthView(
        symbol="NEXOUSDT",
        bids=(
            DepthLevel(1.21, 1_520.4),
            DepthLevel(1.209, 310.0),
            DepthLevel(1.207, 2_800.7),
            DepthLevel(1.204, 95.1),
        ),
        asks=(DepthLevel(1.212, 640.2), DepthLevel(1.213, 1_100.0), DepthLevel(1.216, 4_000.3)),
        microprice=1.21084,
        own_orders=(
            OwnOrder(OrderSide.BUY, 1.21, 40.0),
            OwnOrder(OrderSide.BUY, 1.208, 40.0),
            OwnOrder(OrderSide.SELL, 1.215, 40.0),
        ),
        price_decimals=NEXO.price_decimals,
        size_decimals=NEXO.size_decimals,
        exchange_ts_ms=AT_MS - 20,
        instrument=NEXO,
    )


def imbalance_view(symbol: str = "BTCUSDT") -> ImbalanceView:
    ages = tuple(float(age) for age in range(-300, 1, 2))
    shift = 0.0 if symbol == "BTCUSDT" else 1.3
    series = tuple(
        ImbalanceReading(
            round(0.7 * math.sin(age / 17 + shift), 3),
            round(0.45 * math.sin(age / 29 + shift), 3),
            round(0.25 * math.sin(age / 53 + shift), 3),
            round(0.6 * math.sin(age / 41 + shift), 3),
        )
        for age in ages
    )
    current = ImbalanceReading(0.31, 0.18, -0.05, 0.22) if symbol == "BTCUSDT" else series[-1]
    return ImbalanceView(symbol, current, 300.0, ages, series)


def verdicts_view() -> VerdictStreamView:
    entries = (
        ("BTCUSDT", Verdict.LEAN_BUY, 0.71, QuoteIntent.PULL_ASKS),
        ("BTCUSDT", Verdict.HOLD, 0.88, QuoteIntent.KEEP_QUOTING),
        ("ETHUSDT", Verdict.LEAN_SELL, 0.64, QuoteIntent.PULL_BIDS),
        ("ETHUSDT", Verdict.HOLD, 0.91, QuoteIntent.KEEP_QUOTING),
        ("BTCUSDT", Verdict.EMERGENCY, 0.83, QuoteIntent.CANCEL_ALL),
        ("BTCUSDT", Verdict.HOLD, 0.79, QuoteIntent.KEEP_QUOTING),
        ("BTCUSDT", Verdict.LEAN_SELL, 0.58, QuoteIntent.PULL_BIDS),
    )
    recent = tuple(
        VerdictRecord(symbol, AT_MS - 9_000 + index * 1_250, verdict, probability, intent)
        for index, (symbol, verdict, probability, intent) in enumerate(entries)
    )
    counts = {"HOLD": 48_211, "LEAN_BUY": 1_904, "LEAN_SELL": 1_877, "EMERGENCY": 12}
    return VerdictStreamView(recent, counts, sum(counts.values()))


def scorecard_view() -> ScorecardView:
    """The shared spot recording's scorecard (the shipped model, a shadow MLP), rounded."""

    def model(ask: float, bid: float, pulls: int, precision: float, kept: float, pulled: float):
        return ModelScore(ask, bid, ask, bid, pulls, precision, kept, pulled)

    trend = tuple((0.70 + 0.002 * step, 0.69 + 0.001 * (step % 9)) for step in range(60))
    return ScorecardView(
        symbols=(
            SymbolScore(
                "BTCUSDT",
                6_174,
                model(0.79, 0.70, 329, 0.40, 0.02, -0.73),
                model(0.75, 0.70, 3_998, 0.23, 0.20, -0.41),
                model(0.52, 0.49, 2_210, 0.12, 0.07, 0.01),
                trend,
            ),
            SymbolScore(
                "ETHUSDT",
                6_149,
                model(0.72, 0.74, 593, 0.32, 0.03, -0.69),
                model(0.70, 0.71, 3_716, 0.24, 0.22, -0.52),
                model(0.50, 0.51, 2_187, 0.13, 0.06, 0.02),
                tuple(reversed(trend)),
            ),
        ),
        window_s=900.0,
        shadow_model="/home/trader/models/laya-candidate.onnx",
        shadow_fault=None,
        dropped=0,
    )


def latency_view() -> LatencyView:
    stages = (
        StageLatency("parse", 51_020, 3.4, 6.8, 11.2, 48.0, 10.0),
        StageLatency("book", 51_020, 0.2, 0.6, 1.1, 9.5, 2.0),
        StageLatency("features", 51_020, 2.5, 5.1, 9.8, 40.2, 10.0),
        StageLatency("infer", 51_020, 11.4, 27.9, 61.0, 412.0, 25.0),
        StageLatency("decide", 51_020, 2.8, 4.0, 6.3, 22.1, 5.0),
        StageLatency("total", 51_020, 22.0, 58.3, 96.4, 520.0, 50.0),
        StageLatency("kev", 37, 1_840_000.0, 4_120_000.0, 4_120_000.0, 4_120_000.0, 5_000_000.0),
    )
    edges = [2.0 * 1.25**index for index in range(25)]
    counts = [0, 2, 40, 900, 6_100, 14_800, 12_400, 8_300, 4_100, 2_200, 1_100, 560, 240, 120]
    counts += [60, 30, 22, 14, 8, 5, 3, 1, 0, 1]
    histogram = tuple(
        HistogramBin(round(low, 2), round(high, 2), number)
        for low, high, number in zip(edges[:-1], edges[1:], counts, strict=True)
    )
    return LatencyView(stages, histogram)


def vram_view(available: bool = True, per_process: bool = True) -> VramView:
    budget = VramBudget()
    if not available:
        sample = GpuSample(False, "NVMLError_LibraryNotFound: NVML Shared Library Not Found")
        return VramView(sample, budget)
    total, free = 12 * GIB, int(5.9 * GIB)
    used = total - free
    laya, kev = 612 * MIB, int(4.3 * GIB)
    processes = (
        ProcessMemory(LAYA_PID, laya),
        ProcessMemory(KEV_PID, kev),
        ProcessMemory(1917, 384 * MIB),
    )
    sample = GpuSample(
        True,
        "",
        device_name="NVIDIA GeForce RTX 3060",
        total_bytes=total,
        used_bytes=used,
        free_bytes=free,
        per_process=per_process,
        per_process_note=""
        if per_process
        else "NVML does not report per-process memory here (WDDM/WSL or MIG)",
        laya_pid=LAYA_PID,
        kev_pid=KEV_PID,
        laya_bytes=laya if per_process else None,
        kev_bytes=kev if per_process else None,
        other_bytes=used - laya - kev if per_process else None,
        processes=processes,
        headroom_low=False,
        at_ns=AT_NS,
    )
    return VramView(sample, budget)


def kev_decisions() -> tuple[KevDecisionView, ...]:
    return (
        KevDecisionView(
            AT_NS - 95_000_000_000,
            2_410.0,
            "hold",
            KevOutcome.ACCEPTED,
            "",
            "Spread and depth are normal on both legs; Laya's verdicts are mostly HOLD with "
            "balanced LEAN_BUY and LEAN_SELL counts. No reason to change the posture.",
        ),
        KevDecisionView(
            AT_NS - 41_000_000_000,
            3_905.0,
            "reduce",
            KevOutcome.ACCEPTED,
            "risk scale 1 -> 0.5",
            "An EMERGENCY verdict on BTCUSDT followed a sweep of four ask levels; realized "
            "volatility doubled over 30 s. Halve the risk until the book refills.",
        ),
        KevDecisionView(
            AT_NS - 6_000_000_000,
            6_120.0,
            "flatten",
            KevOutcome.STALE,
            "answer arrived 6.1 s after the question (limit 5 s)",
            "ETH basis against BTC widened beyond two sigma while our hedge is short; "
            "flattening both legs avoids carrying the spread risk through the funding print.",
        ),
    )


def orders() -> tuple[OrderUpdate, ...]:
    def order(
        symbol: str, oid: str, side: OrderSide, price: float, size: float, filled: float, age: int
    ) -> OrderUpdate:
        status = OrderStatus.PARTIALLY_FILLED if filled else OrderStatus.LIVE
        return OrderUpdate(
            symbol,
            f"10{oid}",
            oid,
            side,
            price,
            size,
            filled,
            None,
            status,
            False,
            AT_MS - age,
            AT_NS - age * 1_000_000,
        )

    return (
        order("BTCUSDT", "q-b-0001", OrderSide.BUY, 59_999.8, 0.01, 0.0, 1_200),
        order("BTCUSDT", "q-a-0002", OrderSide.SELL, 60_000.4, 0.01, 0.004, 800),
        order("BTCUSDT", "q-a-0003", OrderSide.SELL, 60_003.0, 0.02, 0.0, 300),
        order("ETHUSDT", "h-b-0004", OrderSide.BUY, 2_999.85, 0.2, 0.0, 2_400),
    )


def fills() -> tuple[FillUpdate, ...]:
    return (
        FillUpdate(
            "BTCUSDT",
            "1001",
            "q-b-0000",
            "t-1",
            OrderSide.BUY,
            59_999.9,
            0.01,
            0.12,
            True,
            AT_MS - 31_000,
            AT_NS - 31_000_000_000,
        ),
        FillUpdate(
            "ETHUSDT",
            "1002",
            "h-a-0001",
            "t-2",
            OrderSide.SELL,
            3_000.05,
            0.2,
            0.36,
            False,
            AT_MS - 30_900,
            AT_NS - 30_900_000_000,
        ),
        FillUpdate(
            "BTCUSDT",
            "1003",
            "q-a-0002",
            "t-3",
            OrderSide.SELL,
            60_000.4,
            0.004,
            0.048,
            True,
            AT_MS - 700,
            AT_NS - 700_000_000,
        ),
    )


def trading_view(state: TradingState = TradingState.ACTIVE, exposed: bool = True) -> TradingView:
    positions = (
        PositionLine("BTCUSDT", 0.014, 59_990.2, 60_000.05, 0.14),
        PositionLine("ETHUSDT", -0.2, 3_001.1, 3_000.01, 0.22),
    )
    return TradingView(
        state=state,
        reason={
            TradingState.ACTIVE: "",
            TradingState.PAUSED: "operator pause",
            TradingState.REDUCING: "daily loss soft limit",
            TradingState.HALTED: "operator kill switch",
        }[state],
        flattening=False,
        positions=positions if exposed else (),
        open_orders=4 if exposed else 0,
        net_delta=240.0 if exposed else 0.0,
        max_net_delta=2_500.0,
        pnl=PnlView(realized=18.42, unrealized=0.36, fees=4.71, daily=14.07),
        overrides=OVERRIDES,
        bounds=BOUNDS,
        rearm_phrase="REARM",
    )


def status_view(
    state: TradingState = TradingState.ACTIVE,
    mode: TradingMode = TradingMode.SIM,
    exposed: bool = True,
) -> StatusView:
    return StatusView(
        mode=mode,
        feeds=(
            FeedView("BTCUSDT", FeedState.LIVE, 10.2, 12.0),
            FeedView("ETHUSDT", FeedState.STALE, 0.0, 5_400.0),
        ),
        trading=trading_view(state, exposed),
        laya=LayaView("CUDA", "laya-default 2024-08-08 (laya-fs-1)"),
        kev=KevStatusView(KevState.ONLINE, "qwen2.5-7b-instruct-q4_k_m", 2_410.0),
        contracts=(BTC, ETHUSDT),
        quoted=("BTCUSDT",),
        hedge="ETHUSDT",
    )


def fixed_snapshot(
    state: TradingState = TradingState.ACTIVE,
    mode: TradingMode = TradingMode.SIM,
    exposed: bool = True,
) -> ConsoleSnapshot:
    return ConsoleSnapshot(
        at_ns=AT_NS,
        status=status_view(state, mode, exposed),
        depth=(depth_view("BTCUSDT"), depth_view("ETHUSDT")),
        imbalance=(imbalance_view("BTCUSDT"), imbalance_view("ETHUSDT")),
        verdicts=verdicts_view(),
        latency=latency_view(),
        vram=vram_view(),
        kev_decisions=kev_decisions() if exposed else (),
        orders=orders() if exposed else (),
        fills=fills(),
        scorecard=scorecard_view(),
    )


def fixed_events() -> tuple[ConsoleEvent, ...]:
    rows = (
        (EventKind.FEED, Severity.INFO, "BTCUSDT live (subscribed)"),
        (EventKind.FEED, Severity.WARNING, "ETHUSDT stale (no frame for 5.0 s)"),
        (
            EventKind.FILL,
            Severity.INFO,
            "BTCUSDT buy 0.01 BTC @ 59,999.9 maker, fee -0.1200 USDT (q-b-0000)",
        ),
        (
            EventKind.DENIAL,
            Severity.WARNING,
            "ETHUSDT buy 0.5 ETH denied (ORDER_RATE): more than 10 orders in a second",
        ),
        (EventKind.KEV, Severity.INFO, "Kev: reduce accepted (risk scale 1 -> 0.5)"),
        (EventKind.FAULT, Severity.ERROR, "Laya: CUDA failure on ETHUSDT, quotes pulled"),
        (EventKind.STATE, Severity.WARNING, "ACTIVE -> PAUSED (operator pause)"),
    )
    return tuple(
        ConsoleEvent(index, AT_NS - (len(rows) - index) * 1_500_000_000, kind, severity, text)
        for index, (kind, severity, text) in enumerate(rows)
    )


@dataclass
class FakeEngineHandle:
    """Serves a fixed snapshot and event list and records every command. `results` answers
    a command by name (default: accepted); `gates` holds a command until its event is set. An
    accepted kill leaves the snapshot HALTED with nothing open."""

    current: ConsoleSnapshot = field(default_factory=fixed_snapshot)
    events: list[ConsoleEvent] = field(default_factory=list)
    missed_before: int = 0
    results: dict[str, CommandResult] = field(default_factory=dict)
    gates: dict[str, threading.Event] = field(default_factory=dict)
    fail_snapshot: Exception | None = None
    commands: list[tuple[object, ...]] = field(default_factory=list)
    gone: EngineLost | None = None
    on_progress: Callable[[], None] | None = None

    def snapshot(self) -> ConsoleSnapshot:
        if self.fail_snapshot is not None:
            raise self.fail_snapshot
        return self.current

    def events_since(self, last_id: int) -> tuple[Sequence[ConsoleEvent], int]:
        newer = [event for event in self.events if event.event_id > last_id]
        missed = self.missed_before if last_id < 0 else 0
        return newer, missed

    def lost(self) -> EngineLost | None:
        return self.gone

    def set_state(self, state: TradingState, exposed: bool = True) -> None:
        status = self.current.status
        self.current = replace(
            self.current, status=replace(status, trading=trading_view(state, exposed))
        )

    def _record(self, name: str, *arguments: object) -> threading.Event | None:
        self.commands.append((name, *arguments))
        return self.gates.get(name)

    def _result(self, name: str, opened: bool) -> CommandResult:
        if not opened:
            raise TimeoutError(f"{name} gate never opened")
        return self.results.get(name, CommandResult(name, True, f"{name} done"))

    def execute(self, command: Command) -> Awaitable[CommandResult]:
        """Recorded now, on the App's loop, in the order sent, with what the operator typed or
        chose; a gate is waited for off the loop."""
        match command.request:
            case Rearm(confirmation):
                gate = self._record(command.name, confirmation)
            case SetLimits(overrides):
                gate = self._record(command.name, overrides)
            case PauseSymbol(symbol) | ResumeSymbol(symbol):
                gate = self._record(command.name, symbol)
            case _:
                gate = self._record(command.name)
        return self._answer(command.name, gate)

    async def _answer(self, name: str, gate: threading.Event | None) -> CommandResult:
        result = self._result(name, gate is None or await asyncio.to_thread(gate.wait, 10))
        if name == "kill" and result.ok:  # as the engine answers it: halted, and flat
            self.set_state(TradingState.HALTED, exposed=False)
        return result

    def shutdown(self, policy: ShutdownPolicy) -> CommandResult:
        gate = self._record("shutdown", policy)
        return self._result("shutdown", gate is None or gate.wait(10))


class PaneHost(App[None]):
    """One pane, styled as in the console; `view` (if given) is shown once it is mounted."""

    CSS_PATH = str(STYLES / "console.tcss")

    def __init__(self, pane: Widget, view: object = None) -> None:
        super().__init__()
        self.pane = pane
        self.view = view

    def compose(self) -> ComposeResult:
        yield self.pane

    def on_mount(self) -> None:
        if self.view is None:
            return
        if isinstance(self.pane, EventsPane):
            self.pane.add(self.view, 2, 0.0)
        else:
            self.pane.view = self.view


BOOK_QUOTED = (
    "BTCUSDT",
    "SOLUSDT",
    "XRPUSDT",
    "DOGEUSDT",
    "ADAUSDT",
    "LINKUSDT",
    "AVAXUSDT",
    "NEXOUSDT",
)
"""A book of eight quoted contracts, hedged on ETHUSDT (issue 30's reference book)."""


def book_snapshot(picked_missing: str | None = None) -> ConsoleSnapshot:
    """`fixed_snapshot` with a book of eight quoted symbols and the ETHUSDT hedge: each with a
    feed, a ladder and an imbalance (BTCUSDT's and ETHUSDT's as in `fixed_snapshot`, the others
    the ETH ladder renamed), positions with realized PnL and fees on some, quotes on some, Laya
    warming up on one, standing aside on another (its model), a verdict on others (DOGEUSDT's
    a HOLD the stream no longer holds), AVAXUSDT paused at the gateway, BTCUSDT's beta (1.1
    configured) and the hedge ratio (1) moved by Kev; `picked_missing` leaves that symbol
    out."""
    base = fixed_snapshot()
    symbols = tuple(s for s in (*BOOK_QUOTED, "ETHUSDT") if s != picked_missing)
    feeds = tuple(
        FeedView(symbol, FeedState.STALE if symbol == "ADAUSDT" else FeedState.LIVE, rate, age)
        for symbol, rate, age in (
            (symbol, 4.0 + 1.5 * index, 5_400.0 if symbol == "ADAUSDT" else 40.0)
            for index, symbol in enumerate(symbols)
        )
    )
    positions = (
        PositionLine("BTCUSDT", 0.014, 59_990.2, 60_000.05, 0.14, 3.20, 0.41, "", 1.32, 1.1),
        PositionLine("SOLUSDT", -3.0, 150.12, 150.40, -0.84, 1.10, 0.22, "", 1.5, 1.5),
        PositionLine("XRPUSDT", 0.0, 0.0, 0.52, 0.0, -0.35, 0.05),
        PositionLine("DOGEUSDT", 1_200.0, 0.1201, 0.1203, 0.24),
        PositionLine("AVAXUSDT", 0.0, 0.0, 24.1, 0.0, stood_aside="its status is 'maintain'"),
        PositionLine("ETHUSDT", -0.2, 3_001.1, 3_000.01, 0.22, 0.0, 0.12, "", 0.8, 1.0),
    )
    trading = replace(base.status.trading, positions=positions, open_orders=6)

    def depth(symbol: str) -> DepthView:
        return (
            depth_view(symbol)
            if symbol == "BTCUSDT"
            else replace(depth_view("ETHUSDT"), symbol=symbol)
        )

    def order(symbol: str, side: OrderSide, index: int) -> OrderUpdate:
        return orders()[0]._replace(symbol=symbol, side=side, client_oid=f"q-{index}")

    records = (
        *verdicts_view().recent,
        VerdictRecord("SOLUSDT", AT_MS - 400, Verdict.LEAN_BUY, 0.66, QuoteIntent.PULL_ASKS),
        VerdictRecord("XRPUSDT", AT_MS - 300, Verdict.EMERGENCY, 0.91, QuoteIntent.CANCEL_ALL),
    )
    current = {"SOLUSDT": Verdict.LEAN_BUY, "XRPUSDT": Verdict.EMERGENCY, "DOGEUSDT": Verdict.HOLD}
    verdicts = VerdictStreamView(records, verdicts_view().counts, verdicts_view().total, current)
    status = replace(
        base.status,
        feeds=feeds,
        trading=trading,
        laya=replace(
            base.status.laya,
            warming_s=(("LINKUSDT", 12.4),),
            stood_aside=(("NEXOUSDT", "LayaModelError: /m/nexo.onnx is not a Laya model"),),
        ),
        quoted=tuple(s for s in BOOK_QUOTED if s != picked_missing),
        hedge="ETHUSDT",
    )
    return replace(
        base,
        status=status,
        depth=tuple(depth(symbol) for symbol in symbols),
        imbalance=tuple(replace(imbalance_view("ETHUSDT"), symbol=s) for s in symbols),
        verdicts=verdicts,
        orders=(
            order("BTCUSDT", OrderSide.BUY, 1),
            order("BTCUSDT", OrderSide.SELL, 2),
            order("SOLUSDT", OrderSide.BUY, 3),
            order("SOLUSDT", OrderSide.SELL, 4),
            order("DOGEUSDT", OrderSide.SELL, 5),
            order("ETHUSDT", OrderSide.BUY, 6),
        ),
    )
