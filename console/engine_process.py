"""The engine process behind `EngineNodeHandle`: the `EngineNode` and a `SnapshotPublisher`
on this process's own event loop, talking to the console over one socket.

A process, not a thread: CPython's one GIL would let drawing the console (about a third of a
core while the market moves) stall the fast path mid-frame. Here the console only costs the
engine the pictures it is sent.

The wire (pickled tuples, one message per `Connection.send_bytes`):

- console -> engine: the setup first (`EngineSetup`), then `("command", id, Command)`,
  `("stats", id)` and `("shutdown", id, policy, reason)`, where `reason` says why the run ends
  (it is journaled).
- engine -> console: `("picture", at_ns, parts, status_line, finished)` with only the
  snapshot parts that changed since the last one sent; `("events", events)` in order;
  `("answer", id, ok, payload)`; `("started",)` or `("failed", why)` once.

An `Outbox` sends from a thread of its own: a console that stops reading never blocks this
loop (a newer picture replaces an unsent one; events beyond `events_kept` drop, oldest first,
and the console counts the gap). When the console goes away without a shutdown (its process
killed), the engine ends as the console's exit policy says: flatten by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import os
import pickle
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from multiprocessing.connection import Connection
from pathlib import Path
from types import MappingProxyType

from console.engine_views import (
    DEFAULT_STAGE_BUDGETS_P99_US,
    PANE_STAGES,
    NodeWithKev,
    console_event,
    depth_view,
    depth_view_with_orders,
    fill_update,
    histogram_bins,
    imbalance_reading,
    kev_decision_view,
    kev_event,
    kev_latency,
    kev_status_view,
    order_update,
    own_orders_by_symbol,
    stage_latency,
    trading_view,
    watch_only_view,
)
from console.handle import ShutdownPolicy
from console.view import (
    ConsoleEvent,
    ConsoleSnapshot,
    DepthView,
    EventClock,
    EventKind,
    FeedView,
    ImbalanceReading,
    ImbalanceView,
    KevDecisionView,
    LatencyView,
    LayaView,
    OwnOrder,
    Severity,
    StatusView,
    VramView,
)
from engine.bitget.credentials import Credentials
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.clock import EngineClock
from engine.feed.replay import ReplayFeed
from engine.gpu import GpuMonitor, GpuMonitorConfig, GpuSample, VramBudget
from engine.kev.hub import KevDecision, KevHub
from engine.kev.server import llama_server_pid_path
from engine.latency import LatencyHistogram, timer_cost_ns
from engine.laya.classifier import CPU_PROVIDER
from engine.laya.decide import VerdictStreamView
from engine.node import (
    EngineConfig,
    EngineNode,
    EngineStatus,
    engine_clock,
    format_status,
    format_warm_up,
)
from engine.pipeline import TIMED_STAGES
from engine.trading.commands import Command, CommandResult, CommandSource, Flatten, Kill
from engine.trading.config import TradingMode, default_risk_config
from engine.trading.desk import TradingStatus
from engine.trading.events import OrderFilled
from engine.trading.tracked_order import OrderView

logger = logging.getLogger(__name__)

SNAPSHOT_PARTS = tuple(item.name for item in fields(ConsoleSnapshot) if item.name != "at_ns")
STATUS_LINE_INTERVAL_S = 0.25
"""How often the one-line status (headless output) travels with a picture."""


@dataclass(frozen=True, slots=True)
class EngineAdapterConfig:
    """How the engine side feeds the console.

    `publish_hz`: snapshots a second. The imbalance plot keeps `imbalance_window_s` of
    `imbalance_step_s` means (exchange time, so a replay plots its own minutes). The
    `*_shown` and `events_kept` bound what each snapshot carries. `stage_budgets_p99_us` colour
    a stage whose p99 is above. Commands time out after `command_timeout_s`; kill and flatten
    get the trading desk's own limit plus `sequence_margin_s`; the engine process has
    `start_timeout_s` to start and `stop_timeout_s` to stop. `gpu` configures the VRAM monitor
    (None: off); Laya's PID in it is the engine process's.
    """

    publish_hz: float = 20.0
    depth_levels: int = 15
    imbalance_window_s: float = 300.0
    imbalance_step_s: float = 2.0
    verdicts_shown: int = 100
    kev_decisions_shown: int = 50
    fills_shown: int = 100
    events_kept: int = 2_000
    histogram_bins: int = 24
    stage_budgets_p99_us: Mapping[str, float] = field(
        default_factory=lambda: dict(DEFAULT_STAGE_BUDGETS_P99_US)
    )
    command_timeout_s: float = 5.0
    sequence_margin_s: float = 5.0
    start_timeout_s: float = 120.0
    stop_timeout_s: float = 30.0
    gpu: GpuMonitorConfig | None = field(
        default_factory=lambda: GpuMonitorConfig(kev_pid_file=str(llama_server_pid_path()))
    )

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "stage_budgets_p99_us", MappingProxyType(dict(self.stage_budgets_p99_us))
        )
        if not (math.isfinite(self.publish_hz) and 1 <= self.publish_hz <= 60):
            raise ValueError(f"publish_hz must be within [1, 60], got {self.publish_hz!r}")
        if not 1 <= self.depth_levels <= 15:
            raise ValueError(f"depth_levels must be within [1, 15], got {self.depth_levels!r}")
        if not (0 < self.imbalance_step_s < self.imbalance_window_s <= 3_600):
            raise ValueError(
                "imbalance_step_s and imbalance_window_s must satisfy 0 < step < window <= "
                f"3600 s, got {self.imbalance_step_s!r} and {self.imbalance_window_s!r}"
            )
        for name in (
            "verdicts_shown",
            "kev_decisions_shown",
            "fills_shown",
            "events_kept",
            "histogram_bins",
        ):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        unknown = sorted(set(self.stage_budgets_p99_us) - {*PANE_STAGES, "kev"})
        if unknown:
            raise ValueError(f"stage_budgets_p99_us names unknown stages {unknown}")
        for stage, budget in self.stage_budgets_p99_us.items():
            if not (math.isfinite(budget) and budget > 0):
                raise ValueError(f"the p99 budget of {stage} must be > 0 us, got {budget!r}")
        for name in ("command_timeout_s", "sequence_margin_s", "start_timeout_s", "stop_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0, got {value!r}")


class _FrameRates:
    """Book frames a second per symbol, over windows of about a second, and when each
    symbol's book last moved (monotonic seconds)."""

    def __init__(self, symbols: Sequence[str]) -> None:
        self._window = {symbol: (0, 0.0) for symbol in symbols}
        self._last_count = dict.fromkeys(symbols, 0)
        self.rate = dict.fromkeys(symbols, 0.0)
        self.moved_at: dict[str, float | None] = dict.fromkeys(symbols)

    def update(self, symbol: str, count: int, now: float) -> None:
        if count != self._last_count[symbol]:
            self._last_count[symbol] = count
            self.moved_at[symbol] = now
        window_count, window_start = self._window[symbol]
        elapsed = now - window_start
        if not window_start:
            self._window[symbol] = (count, now)
        elif elapsed >= 1.0:
            self.rate[symbol] = (count - window_count) / elapsed
            self._window[symbol] = (count, now)
        elif not self.rate[symbol] and elapsed >= 0.2:  # the first second: a partial window
            self.rate[symbol] = (count - window_count) / elapsed


class _ImbalanceSeries:
    """One symbol's imbalance: the latest reading, and the means of `step_s` buckets of
    exchange time over the last `window_s`."""

    def __init__(self, symbol: str, window_s: float, step_s: float) -> None:
        self.symbol = symbol
        self._window_s = window_s
        self._step_ms = int(step_s * 1000)
        self._points: deque[tuple[int, ImbalanceReading]] = deque(
            maxlen=math.ceil(window_s / step_s) + 1
        )
        self._bucket_ms: int | None = None
        self._sums = [0.0, 0.0, 0.0, 0.0]
        self._samples = 0
        self._current: ImbalanceReading | None = None
        self._view: ImbalanceView | None = None
        self._series_changed = True

    def add(self, reading: ImbalanceReading, exchange_ts_ms: int) -> None:
        bucket = exchange_ts_ms - exchange_ts_ms % self._step_ms
        if self._bucket_ms is not None and bucket != self._bucket_ms and self._samples:
            mean = ImbalanceReading(*(total / self._samples for total in self._sums))
            self._points.append((self._bucket_ms, mean))
            self._sums = [0.0, 0.0, 0.0, 0.0]
            self._samples = 0
            self._series_changed = True
        self._bucket_ms = bucket
        for index, value in enumerate(reading):
            self._sums[index] += value
        self._samples += 1
        self._current = reading

    def view(self) -> ImbalanceView:
        previous = self._view
        if previous is not None and not self._series_changed:
            if previous.current is self._current:
                return previous
            view = ImbalanceView(
                self.symbol, self._current, previous.window_s, previous.ages_s, previous.series
            )
        else:
            ages: tuple[float, ...] = ()
            series: tuple[ImbalanceReading, ...] = ()
            if self._points:
                last_ms = self._points[-1][0]
                kept = [
                    (age, mean)
                    for at_ms, mean in self._points
                    if (age := (at_ms - last_ms) / 1000) >= -self._window_s
                ]
                ages = tuple(age for age, _ in kept)
                series = tuple(mean for _, mean in kept)
            view = ImbalanceView(self.symbol, self._current, self._window_s, ages, series)
            self._series_changed = False
        self._view = view
        return view


class SnapshotPublisher:
    """Owns the node on the engine loop: starts and stops it and, when asked (`publish`),
    builds the console's snapshot and turns new engine events into `ConsoleEvent`s.

    `latest` and `events` are replaced, never mutated. Parts whose inputs did not change are
    reused as the same objects: only the changed parts travel to the console, and its panes
    skip the rest.
    """

    def __init__(self, node: EngineNode, config: EngineAdapterConfig, key_note: str) -> None:
        self.node = node
        self.config = config
        self._key_note = key_note
        self._gpu = GpuMonitor(config.gpu) if config.gpu is not None else None
        symbols = node.config.symbols
        self._symbols = symbols
        trading = node.config.trading
        self._decimals = (
            {i.symbol: (i.price_decimals, i.size_decimals) for i in trading.instruments}
            if trading is not None
            else {}
        )
        self._mode = (
            trading.mode
            if trading is not None
            else (TradingMode.SIM if node.config.market_source == "sim" else TradingMode.PAPER)
        )
        self._watch_only = watch_only_view(default_risk_config()) if trading is None else None
        self._rates = _FrameRates(symbols)
        self._imbalance = {
            symbol: _ImbalanceSeries(symbol, config.imbalance_window_s, config.imbalance_step_s)
            for symbol in symbols
        }
        self._depth: dict[str, tuple[int, DepthView]] = {}
        self._fills: deque[FillUpdate] = deque(maxlen=config.fills_shown)
        self._fill_view: tuple[FillUpdate, ...] = ()
        self._older_than_shown: EngineStatus | None = None
        self._event_buffer: deque[ConsoleEvent] = deque(maxlen=config.events_kept)
        self._next_event_id = 0
        self._engine_cursor = -1
        self._last_kev_id = -1
        self._laya = LayaView("not loaded", "no model")
        self._verdicts: VerdictStreamView | None = None
        self._latency: tuple[tuple[int, ...], LatencyView] | None = None
        self._vram: VramView | None = None
        self._kev_views: tuple[int, tuple[KevDecisionView, ...]] = (-1, ())
        self._orders: tuple[tuple[OrderView, ...], tuple[OrderUpdate, ...]] = ((), ())
        self._timer_overhead_ns = 0
        self._started_at = 0.0
        self._finished_at: float | None = None
        self.latest: ConsoleSnapshot | None = None
        self.events: tuple[ConsoleEvent, ...] = ()
        self.engine_status: EngineStatus | None = None
        self.finished = False
        self.stopping = False

    @property
    def kev(self) -> KevHub | None:
        node = self.node
        return node.kev if isinstance(node, NodeWithKev) else None

    async def start(self) -> None:
        if self._gpu is not None:
            self._gpu.start()
        await self.node.start()
        self._started_at = time.monotonic()
        self._timer_overhead_ns = timer_cost_ns()
        self._laya = self._laya_view()
        for line in self._started_notes():  # first in the event log, before the start's own
            self.note(EventKind.SYSTEM, Severity.INFO, line)
        self.publish()

    async def stop(self) -> None:
        self.stopping = True
        node = self.node
        if not node.finished:  # a replay read to its end has said so already
            node.pipeline.report_warm_up("the run stopped", node.clock.time_ns())
        try:
            await node.stop()
            # A last picture with the stop's own events (the kill, cancels, the last fills);
            # a start that failed drew none, and has nothing to finish.
            if self.latest is not None:
                try:
                    self.publish(fresh=True)
                except Exception:  # the engine is stopped: a failed last picture is only logged
                    logger.exception("the last console snapshot failed")
        finally:
            if self._gpu is not None:
                self._gpu.stop()

    def note(self, kind: EventKind, severity: Severity, text: str) -> None:
        """An event of the console's own (startup, a fault of the publisher), in order."""
        self._add_event(kind, severity, text, time.time_ns())
        self.events = tuple(self._event_buffer)

    # Snapshots

    def publish(self, fresh: bool = False) -> None:
        """Build and hand over a snapshot; `fresh` builds the engine's status now instead of
        taking the one the node last published (and so do the next ones until the node
        publishes a newer one: a picture never goes back to a state before a command's)."""
        node = self.node
        now_ns = time.time_ns()
        now = time.monotonic()
        published = node.latest_status
        fresh = fresh or published is None or published is self._older_than_shown
        if fresh:
            self._older_than_shown = published
        status = node.status() if fresh else published
        self.engine_status = status
        trading = status.trading
        hub = self.kev
        kev_decisions = hub.decisions(self.config.kev_decisions_shown) if hub is not None else ()
        self._take_events(now_ns, kev_decisions)
        own = own_orders_by_symbol(trading.open_orders) if trading is not None else {}
        depth = self._depth_views(own, now)
        self.latest = ConsoleSnapshot(
            at_ns=now_ns,
            status=self._status_view(status, hub, now),
            depth=depth,
            imbalance=tuple(self._imbalance[view.symbol].view() for view in depth),
            verdicts=self._verdict_view(),
            latency=self._latency_view(kev_decisions),
            vram=self._vram_view(),
            kev_decisions=self._kev_decision_views(kev_decisions),
            orders=self._order_updates(trading),
            fills=self._fill_view,
        )
        if node.finished and not self.finished:
            self._finished_at = now
            self.finished = True

    def _status_view(self, status: EngineStatus, hub: KevHub | None, now: float) -> StatusView:
        rates = self._rates
        feeds = []
        for item in status.symbols:
            age = item.book_age_ms
            moved = rates.moved_at.get(item.symbol)
            if age is None and moved is not None:
                age = (now - moved) * 1e3
            feeds.append(FeedView(item.symbol, item.state, rates.rate.get(item.symbol, 0.0), age))
        desk = self.node.desk
        if status.trading is not None and desk is not None:
            gateway = desk.gateway.config
            trading = trading_view(status.trading, gateway.bounds, gateway.rearm_confirmation)
        else:
            assert self._watch_only is not None
            trading = self._watch_only
        kev = kev_status_view(hub.status() if hub is not None else None)
        laya = self._laya
        if status.laya_warming:
            laya = dataclasses.replace(laya, warming=format_warm_up(status.laya_warming))
        return StatusView(self._mode, tuple(feeds), trading, laya, kev)

    def _depth_views(
        self, own: dict[str, tuple[OwnOrder, ...]], now: float
    ) -> tuple[DepthView, ...]:
        views = []
        books = self.node.pipeline.books
        for symbol in self._symbols:
            book = books[symbol]
            updates = book.updates
            self._rates.update(symbol, updates, now)
            orders = own.get(symbol, ())
            previous = self._depth.get(symbol)
            if previous is not None and previous[0] == updates:
                view = previous[1]
                if view.own_orders != orders:
                    view = depth_view_with_orders(view, orders)
            else:
                book_view = book.view(self.config.depth_levels)
                if book_view is None or not (book_view.bid_prices and book_view.ask_prices):
                    continue
                view = depth_view(book_view, orders, self._decimals.get(symbol))
                self._imbalance[symbol].add(imbalance_reading(book_view), book_view.exchange_ts_ms)
            self._depth[symbol] = (updates, view)
            views.append(view)
        return tuple(views)

    def _verdict_view(self) -> VerdictStreamView:
        view = self.node.pipeline.decisions.view(self.config.verdicts_shown)
        previous = self._verdicts
        if previous is not None and previous.total == view.total:
            return previous
        self._verdicts = view
        return view

    def _histograms(self) -> dict[str, LatencyHistogram]:
        node = self.node
        feed = node.feed
        parse = feed.timings.parse if feed is not None else LatencyHistogram()
        total = feed.timings.total if feed is not None else LatencyHistogram()
        trade = feed.timings.trade if feed is not None else LatencyHistogram()
        return {"parse": parse, **node.pipeline.latency, "total": total, "trade": trade}

    def _latency_view(self, kev_decisions: Sequence[KevDecision]) -> LatencyView:
        histograms = self._histograms()
        key = (
            *(histograms[stage].count for stage in PANE_STAGES),
            kev_decisions[-1].id if kev_decisions else -1,
        )
        if self._latency is not None and self._latency[0] == key:
            return self._latency[1]
        budgets = self.config.stage_budgets_p99_us
        overhead = self._timer_overhead_ns
        stages = tuple(
            stage_latency(stage, histograms[stage], overhead, budgets.get(stage))
            for stage in PANE_STAGES
        )
        kev = kev_latency(kev_decisions, budgets.get("kev"))
        view = LatencyView(
            (*stages, kev), histogram_bins(histograms["total"], self.config.histogram_bins)
        )
        self._latency = (key, view)
        return view

    def _vram_view(self) -> VramView:
        gpu = self._gpu
        previous = self._vram
        if gpu is None:
            if previous is None:
                previous = self._vram = VramView(
                    GpuSample(False, "the VRAM monitor is off in this configuration"),
                    VramBudget(),
                )
            return previous
        sample = gpu.latest()
        if previous is not None and previous.sample is sample:
            return previous
        view = self._vram = VramView(sample, gpu.config.budget)
        return view

    def _kev_decision_views(self, decisions: Sequence[KevDecision]) -> tuple[KevDecisionView, ...]:
        last_id = decisions[-1].id if decisions else -1
        if self._kev_views[0] != last_id:
            self._kev_views = (last_id, tuple(map(kev_decision_view, decisions)))
        return self._kev_views[1]

    def _order_updates(self, trading: TradingStatus | None) -> tuple[OrderUpdate, ...]:
        orders = trading.open_orders if trading is not None else ()
        if orders != self._orders[0]:
            self._orders = (orders, tuple(map(order_update, orders)))
        return self._orders[1]

    # Events

    def _take_events(self, now_ns: int, kev_decisions: Sequence[KevDecision]) -> None:
        node = self.node
        # The engine stamps its events on its clock (feed events with their receive time,
        # which a replay takes from the recording): in a replay, market time.
        engine_clock = EventClock.MARKET if node.clock.market else EventClock.WALL
        engine_now_ns = node.clock.time_ns()  # for the events that carry no time of their own
        events, missed = node.events.since(self._engine_cursor)
        added = False
        if missed:
            self._add_event(
                EventKind.SYSTEM,
                Severity.WARNING,
                f"{missed} engine events were dropped before the console read them",
                now_ns,
            )
            added = True
        new_fills = False
        for event_id, event in events:
            self._engine_cursor = event_id
            if isinstance(event, OrderFilled):
                self._fills.append(fill_update(event))
                new_fills = True
            shown = console_event(event, engine_now_ns)
            if shown is not None:
                self._add_event(*shown, engine_clock)
                added = True
        for decision in kev_decisions:
            if decision.id > self._last_kev_id:
                self._last_kev_id = decision.id
                severity, text = kev_event(decision)
                self._add_event(EventKind.KEV, severity, text, decision.at_ns, engine_clock)
                added = True
        if new_fills:
            self._fill_view = tuple(self._fills)
        if added:
            self.events = tuple(self._event_buffer)

    def _add_event(
        self,
        kind: EventKind,
        severity: Severity,
        text: str,
        at_ns: int,
        clock: EventClock = EventClock.WALL,
    ) -> None:
        event = ConsoleEvent(self._next_event_id, at_ns, kind, severity, text, clock)
        self._event_buffer.append(event)
        self._next_event_id += 1

    def kept_text(self) -> str:
        """What stopping without a flatten leaves: the quotes go, the positions stay."""
        latest = self.latest
        positions = ", ".join(
            f"{p.symbol} {p.size:+g}"
            for p in (latest.status.trading.positions if latest is not None else ())
            if p.size
        )
        trading = self.node.config.trading
        cancels = trading is not None and trading.executor.cancel_on_stop
        orders = "resting orders cancelled" if cancels else "resting orders left"
        return f"{orders}, positions kept: {positions or 'none'}"

    # Start-up facts and figures

    def _laya_view(self) -> LayaView:
        classifier = self.node.classifier
        metadata = classifier.model_metadata
        provider = classifier.runs_on
        if metadata is None:
            return LayaView(provider, "no model")
        created = metadata.created_utc[:10]
        name = Path(classifier.model_path).stem
        return LayaView(provider, f"{name} {created} ({metadata.feature_set_version})")

    def _started_notes(self) -> list[str]:
        """What the engine started with, a short line each (the event pane does not wrap)."""
        node = self.node
        config = node.config
        source = {
            "sim": "the in-process simulator",
            "replay": f"the recording {config.replay_path}",
            "live": config.live_url or "",
        }[config.market_source]
        notes = [f"engine started: market data from {source}"]
        desk = node.desk
        if desk is not None:
            notes.append(f"orders go to {desk.venue.name} with {self._key_note}")
            if node.journal is not None:
                notes.append(f"journal {node.journal.config.path}")
        else:
            notes.append("watch only: nothing is traded")
        laya = self._laya
        classifier = node.classifier
        reason = classifier.provider_fallback_reason
        fallback = f" ({reason})" if reason else ""
        notes.append(f"Laya on {laya.provider}{fallback}, model {laya.model_version}")
        if classifier.provider == CPU_PROVIDER:
            notes.append(f"Laya's rows: {classifier.runner} ({classifier.runner_reason})")
        return notes

    def stats(self) -> dict[str, object]:
        """The fast path's figures in `hft-console bench`'s shape (its fast-path part: the
        steady-state memory and risk-check passes are the bench's own). `frames_per_s` is the
        fast path's own rate (frames over the time the timers saw), as bench's throughput;
        `wall_s` is the run's."""
        node = self.node
        histograms = self._histograms()
        frames = histograms["total"].count + histograms["trade"].count
        busy_s = (histograms["total"].total_ns + histograms["trade"].total_ns) / 1e9
        end = self._finished_at if self._finished_at is not None else time.monotonic()
        overhead = self._timer_overhead_ns
        return {
            "frames": node.parser.stats.frames,
            "frames_per_s": frames / busy_s if busy_s > 0 else 0.0,
            "provider": node.classifier.provider,
            "runner": node.classifier.runner,
            "timer_overhead_ns": overhead,
            "depth_frames": histograms["parse"].count,
            "trade_frames": histograms["trade"].count,
            "passes": 1,
            "stages_us": {
                name: histograms[name].summary_us(overhead_ns=overhead) for name in TIMED_STAGES
            },
            "parser": node.parser.stats.as_dict(),
            "source": node.config.market_source,
            "wall_s": end - self._started_at,
            "recording": self._recording_figures(),
        }

    def _recording_figures(self) -> dict[str, object] | None:
        """What was wrong with the replayed recording (None: not a replay)."""
        feed = self.node.feed
        if not isinstance(feed, ReplayFeed):
            return None
        problem = feed.problem()
        return {
            "path": feed.path,
            "problem": problem.text if problem is not None else None,
            "unreadable": problem is not None and problem.unreadable,
        }


@dataclass(frozen=True, slots=True)
class EngineSetup:
    """What the console sends the engine process first. `key` is the API key, secret and
    passphrase (None: the simulator's own); `log_path` takes the process's log records and,
    once the engine runs, its stdout and stderr (None: they stay where they are)."""

    engine: EngineConfig
    adapter: EngineAdapterConfig
    exit_policy: ShutdownPolicy
    key: tuple[str, str, str] | None
    key_note: str
    log_path: str | None


class Outbox:
    """Engine -> console messages, written by a thread of its own (see the module docstring).
    Everything is pickled on the engine loop; the thread only writes bytes."""

    def __init__(self, connection: Connection, events_kept: int) -> None:
        self._connection = connection
        self._events_kept = events_kept
        self._ready = threading.Condition()
        self._picture: tuple[bytes, frozenset[str]] | None = None
        self._queue: deque[tuple[bytes, int]] = deque()
        self._queued_events = 0
        self._closing = False
        self.dropped_events = 0
        self.broken = False
        self._thread = threading.Thread(target=self._run, name="engine-outbox", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def put(self, message: tuple[object, ...], events: int = 0) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self._ready:
            self._queue.append((payload, events))
            self._queued_events += events
            while self._queued_events > self._events_kept:
                self._drop_oldest_events()
            self._ready.notify()

    def _drop_oldest_events(self) -> None:
        for index, (_, count) in enumerate(self._queue):
            if count:
                del self._queue[index]
                self._queued_events -= count
                self.dropped_events += count
                return

    def put_picture(self, message: tuple[object, ...], parts: frozenset[str]) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        with self._ready:
            self._picture = (payload, parts)
            self._ready.notify()

    def take_back_picture(self) -> frozenset[str]:
        """The parts of a picture not sent yet (withdrawn: the next one must carry them)."""
        with self._ready:
            picture, self._picture = self._picture, None
        return picture[1] if picture is not None else frozenset()

    def close(self, timeout_s: float) -> None:
        """Send what is queued (up to `timeout_s`), then close the connection."""
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join(timeout_s)
        self._connection.close()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not (self._queue or self._picture or self._closing):
                    self._ready.wait()
                if self._queue:
                    payload, events = self._queue.popleft()
                    self._queued_events -= events
                elif self._picture is not None:
                    payload, self._picture = self._picture[0], None
                else:
                    return
            try:
                self._connection.send_bytes(payload)
            except OSError:  # the console is gone: the engine notices on its own side
                self.broken = True
                return


class EngineServer:
    """Runs in the engine process: builds the node and its publisher from the setup, sends
    pictures at the publish rate, answers commands, and ends on `shutdown` or when the console
    goes away."""

    def __init__(self, connection: Connection, setup: EngineSetup, clock: EngineClock) -> None:
        self._connection = connection
        self._setup = setup
        self._clock = clock
        adapter = setup.adapter
        if adapter.gpu is not None:  # Laya runs in this process
            adapter = dataclasses.replace(
                adapter, gpu=dataclasses.replace(adapter.gpu, laya_pid=os.getpid())
            )
        self._adapter = adapter
        self._outbox = Outbox(connection, adapter.events_kept)
        self._publisher: SnapshotPublisher | None = None
        self._sent: dict[str, object] = {}
        self._last_event_id = -1
        self._status_line_at = 0.0
        self._publish_error = ""
        self._ended = asyncio.Event()
        self._stopping: asyncio.Task[CommandResult] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self) -> int:
        self._loop = asyncio.get_running_loop()
        setup = self._setup
        credentials = Credentials(*setup.key) if setup.key is not None else None
        self._outbox.start()
        try:
            node = EngineNode(setup.engine, credentials, self._clock)
            publisher = SnapshotPublisher(node, self._adapter, setup.key_note)
            self._publisher = publisher
            await publisher.start()
        except Exception as error:  # said to the console, which says it to the operator
            logger.exception("the engine failed to start")
            self._outbox.put(("failed", f"{type(error).__name__}: {error}"))
            if self._publisher is not None:
                with contextlib.suppress(Exception):  # release what the failed start took
                    await self._publisher.stop()
            self._outbox.close(5.0)
            return 1
        self._send_picture(final=True)
        self._outbox.put(("started",))
        if setup.log_path is not None:
            _redirect_output(setup.log_path)
        threading.Thread(target=self._read_commands, name="engine-commands", daemon=True).start()
        publishing = asyncio.create_task(self._publish_loop(), name="console-pictures")
        await self._ended.wait()
        publishing.cancel()
        await asyncio.gather(publishing, *self._tasks, return_exceptions=True)
        self._outbox.close(5.0)
        return 0

    # Pictures

    async def _publish_loop(self) -> None:
        publisher = self._publisher
        assert publisher is not None
        interval = 1.0 / self._adapter.publish_hz
        built_s = time.perf_counter()
        while True:
            await asyncio.sleep(interval)  # engine clock: market time in a replay
            if publisher.stopping:
                # The stop's own last picture (fresh status: HALTED after a kill) goes last;
                # one built here from the node's older published status would follow it.
                return
            # A fast replay's market time outruns the screen: a picture at most about as
            # often in real time as the publish rate says.
            now_s = time.perf_counter()
            if now_s - built_s < interval / 2:
                continue
            built_s = now_s
            try:
                publisher.publish()
            except Exception as error:  # a mapping bug must not freeze the console's picture
                text = f"console snapshot failed: {type(error).__name__}: {error}"
                if text != self._publish_error:
                    self._publish_error = text
                    logger.exception("console snapshot failed")
                    publisher.note(EventKind.FAULT, Severity.ERROR, text)
            self._send_picture()

    def _send_picture(self, final: bool = False) -> None:
        """The snapshot's changed parts; `final` ones (the first, the last) also carry the
        status line and go in order with the messages after them, never replaced."""
        publisher = self._publisher
        assert publisher is not None
        events = publisher.events
        if events and events[-1].event_id > self._last_event_id:
            new = tuple(event for event in events if event.event_id > self._last_event_id)
            self._last_event_id = new[-1].event_id
            self._outbox.put(("events", new), len(new))
        snapshot = publisher.latest
        if snapshot is None:
            return
        unsent = self._outbox.take_back_picture()
        parts = {name: getattr(snapshot, name) for name in SNAPSHOT_PARTS}
        changed = {
            name: value
            for name, value in parts.items()
            if name in unsent or self._sent.get(name) is not value
        }
        self._sent = parts
        status_line = None
        now = time.monotonic()
        if final or now - self._status_line_at >= STATUS_LINE_INTERVAL_S:
            self._status_line_at = now
            status = publisher.engine_status
            status_line = format_status(status) if status is not None else None
        message = ("picture", snapshot.at_ns, changed, status_line, publisher.finished)
        if final:  # in order with what follows (the start, a shutdown's answer)
            self._outbox.put(message)
        else:
            self._outbox.put_picture(message, frozenset(changed))

    # Commands

    def _read_commands(self) -> None:
        loop = self._loop
        assert loop is not None
        try:
            while True:
                message = pickle.loads(self._connection.recv_bytes())
                loop.call_soon_threadsafe(self._on_message, message)
        except (EOFError, OSError):
            with contextlib.suppress(RuntimeError):  # the loop has closed: we are done anyway
                loop.call_soon_threadsafe(self._on_console_gone)

    def _on_message(self, message: tuple[object, ...]) -> None:
        kind, request_id = message[0], message[1]
        if kind == "shutdown":
            policy, reason = ShutdownPolicy(message[2]), str(message[3])
            self._spawn(self._answer_shutdown(request_id, policy, reason))
        elif kind == "stats":
            self._spawn(self._answer(request_id, None))
        else:
            command = message[2]
            assert isinstance(command, Command)
            self._spawn(self._answer(request_id, command))

    def _spawn(self, coroutine) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, request_id: object, command: Command | None) -> None:
        """A command's answer, or (None) the fast path's figures."""
        publisher = self._publisher
        assert publisher is not None
        try:
            if command is None:
                result: object = publisher.stats()
            elif isinstance(command.request, Kill | Flatten):
                running = asyncio.ensure_future(publisher.node.execute(command))
                await asyncio.sleep(0)  # it runs to its first wait: HALTED (REDUCING) is set
                if not running.done():
                    # The state now, before the close sequence confirms flat: the console
                    # shows HALTED at once and the answer when it comes.
                    self._send_fresh_picture()
                    self._outbox.put(("progress", request_id))
                result = await running
            else:
                result = await publisher.node.execute(command)
        except Exception as error:  # the console shows it; the engine carries on
            logger.exception("command %s failed", command.name if command else "stats")
            self._outbox.put(("answer", request_id, False, f"{type(error).__name__}: {error}"))
            return
        if command is not None:
            self._send_fresh_picture()
        self._outbox.put(("answer", request_id, True, result))

    def _send_fresh_picture(self) -> None:
        """A picture of the engine as a command left it, sent just ahead of the command's
        answer: the console shows the outcome (HALTED after a kill) without waiting for the
        next picture, up to a publish interval and the node's status interval later."""
        publisher = self._publisher
        assert publisher is not None
        if publisher.stopping:  # the stop sends its own last picture
            return
        try:
            publisher.publish(fresh=True)
        except Exception:  # the answer still goes; the next picture has the state
            logger.exception("the picture after a command failed")
            return
        self._send_picture(final=True)

    async def _answer_shutdown(
        self, request_id: object, policy: ShutdownPolicy, reason: str
    ) -> None:
        result = await self._stop(policy, reason, operator=True)
        stats = self._publisher.stats() if self._publisher is not None else None
        self._outbox.put(("answer", request_id, True, (result, stats)))
        if result.ok:
            self._ended.set()

    def _on_console_gone(self) -> None:
        if self._stopping is None and not self._ended.is_set():
            logger.error("the console went away: ending by its exit policy")
            self._spawn(self._end_alone())

    async def _end_alone(self) -> None:
        policy = self._setup.exit_policy
        reason = f"the console went away (exit policy {policy.value})"
        result = await self._stop(policy, reason, operator=False)
        logger.error("ended without the console: %s", result.message)
        self._ended.set()

    async def _stop(self, policy: ShutdownPolicy, reason: str, *, operator: bool) -> CommandResult:
        """FLATTEN: kill (journaled with `reason`), then stop; when the venue does not confirm
        flat the engine keeps running for the operator to decide (`operator`), or stops anyway
        (nobody to ask). KEEP: stop (the quotes are cancelled, positions stay)."""
        running = self._stopping
        if running is not None:
            return await asyncio.shield(running)
        self._stopping = asyncio.get_running_loop().create_task(
            self._stop_once(policy, reason, operator)
        )
        result = await asyncio.shield(self._stopping)
        if not result.ok:
            self._stopping = None  # the operator may try again
        return result

    async def _stop_once(
        self, policy: ShutdownPolicy, reason: str, operator: bool
    ) -> CommandResult:
        publisher = self._publisher
        assert publisher is not None
        node = publisher.node
        done = []
        if policy is ShutdownPolicy.FLATTEN and node.desk is not None:
            killed = await node.execute(Command(Kill(reason), CommandSource.EXIT_POLICY))
            if not killed.ok and operator:
                return CommandResult(
                    "shutdown",
                    False,
                    f"still running: the kill switch did not confirm flat ({killed.message}). "
                    "HALTED stays latched; try again, or quit and keep",
                )
            done.append(f"halted and flat: {killed.message}" if killed.ok else killed.message)
        elif node.desk is not None:
            done.append(publisher.kept_text())
        await publisher.stop()
        self._send_picture(final=True)
        done.append("engine stopped")
        return CommandResult("shutdown", True, "; ".join(done))


def _redirect_output(log_path: str) -> None:
    """Once the engine runs, whatever a library prints goes to the log, not over the
    console's screen."""
    sys.stdout.flush()
    sys.stderr.flush()
    descriptor = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)


def _configure_logging(log_path: str | None) -> None:
    handler: logging.Handler
    if log_path is not None:
        handler = logging.FileHandler(log_path, encoding="utf-8")
        level = logging.INFO
    else:
        handler = logging.StreamHandler(sys.stderr)
        level = logging.WARNING
    handler.setFormatter(
        logging.Formatter("%(asctime)s engine %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)


def main(argv: Sequence[str]) -> int:
    """`python -m console.engine_process FD`: serve the console on the socket FD."""
    # The console decides how the run ends: terminal signals and a service stop reach it
    # (this process has a session of its own), and it asks this process to stop.
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    connection = Connection(int(argv[0]))
    try:
        setup = pickle.loads(connection.recv_bytes())
    except (EOFError, OSError):
        return 1  # the console went away before it said what to run
    if not isinstance(setup, EngineSetup):
        raise TypeError(f"expected an EngineSetup first, got {type(setup).__name__}")
    _configure_logging(setup.log_path)
    try:
        clock = engine_clock(setup.engine)  # a replay's: its loop runs in the recording's time
    except (OSError, ValueError) as error:
        outbox = Outbox(connection, 1)
        outbox.start()
        outbox.put(("failed", f"{type(error).__name__}: {error}"))
        outbox.close(5.0)
        return 1
    return clock.run(EngineServer(connection, setup, clock).serve())


if __name__ == "__main__":
    # Run as the imported module, not as __main__: the setup unpickles into its classes.
    from console import engine_process

    sys.exit(engine_process.main(sys.argv[1:]))
