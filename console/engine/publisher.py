"""`SnapshotPublisher`: the engine side of the console's picture. It owns the node on the
engine loop and, at the publish rate, builds the frozen `ConsoleSnapshot` and the new
`ConsoleEvent`s the server sends."""

from __future__ import annotations

import dataclasses
import logging
import math
import operator
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path

from console.engine.config import EngineAdapterConfig
from console.engine.views import (
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
from engine.bitget.private_events import FillUpdate, OrderUpdate
from engine.feed.replay import ReplayFeed
from engine.gpu import GpuMonitor, GpuSample, VramBudget
from engine.kev.hub import KevDecision, KevHub
from engine.latency import LatencyHistogram, timer_cost_ns
from engine.laya.classifier import CPU_PROVIDER
from engine.laya.decide import VerdictStreamView
from engine.market.instruments import Instrument
from engine.node import (
    EngineNode,
    EngineStatus,
    format_warm_up,
)
from engine.pipeline import TIMED_STAGES
from engine.trading.config import TradingMode, default_risk_config
from engine.trading.contract_watch import ContractChanged
from engine.trading.desk import TradingStatus
from engine.trading.events import OrderFilled
from engine.trading.tracked_order import OrderView

logger = logging.getLogger(__name__)


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
        self._contracts = {instrument.symbol: instrument for instrument in node.config.instruments}
        self._quoted = trading.quoted[0] if trading is not None else symbols[0]
        self._roles: tuple[tuple[str, ...], str | None] = (
            (trading.quoted, trading.hedge_symbol) if trading is not None else ((), None)
        )
        """The quoted symbols and the hedge, as `StatusView` names them (watch only: none)."""
        self._contracts_shown = self._shown_contracts()
        """The status bar's: the quoted symbol's contract first."""
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
        self._detail_at = 0.0
        """When the read-only parts were last rebuilt (monotonic seconds)."""
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

    def _shown_contracts(self) -> tuple[Instrument, ...]:
        symbols = (self._quoted, *(s for s in self._symbols if s != self._quoted))
        return tuple(self._contracts[symbol] for symbol in symbols if symbol in self._contracts)

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
        books = self.node.pipeline.books
        updates = {symbol: books[symbol].updates for symbol in self._symbols}
        for symbol, count in updates.items():
            self._rates.update(symbol, count, now)
        previous = self.latest
        # The read-only parts at their own rate (the stop's last picture has them all); in
        # between they are the same objects, which do not travel again.
        detail = (
            previous is None or self.stopping or now - self._detail_at >= 1 / self.config.detail_hz
        )
        own = own_orders_by_symbol(trading.open_orders) if trading is not None else {}
        depth = self._depth_views(own, updates, levels_too=detail)
        if detail:
            self._detail_at = now
            imbalance = tuple(self._imbalance[view.symbol].view() for view in depth)
            verdicts = self._verdict_view()
            latency = self._latency_view(kev_decisions)
        else:
            imbalance, verdicts, latency = previous.imbalance, previous.verdicts, previous.latency
        self.latest = ConsoleSnapshot(
            at_ns=now_ns,
            status=self._status_view(status, hub, now),
            depth=depth,
            imbalance=imbalance,
            verdicts=verdicts,
            latency=latency,
            vram=self._vram_view(),
            kev_decisions=self._kev_decision_views(kev_decisions),
            orders=self._order_updates(trading),
            fills=self._fill_view,
            scorecard=status.laya_scorecard,
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
            trading = trading_view(status.trading, desk.gateway.config)
        else:
            assert self._watch_only is not None
            trading = self._watch_only
        kev = kev_status_view(hub.status() if hub is not None else None)
        laya = self._laya
        if status.laya_warming:
            laya = dataclasses.replace(
                laya,
                warming=format_warm_up(status.laya_warming),
                warming_s=tuple(status.laya_warming.items()),
            )
        if status.laya_stood_aside:
            laya = dataclasses.replace(laya, stood_aside=tuple(status.laya_stood_aside.items()))
        quoted, hedge = self._roles
        return StatusView(
            self._mode, tuple(feeds), trading, laya, kev, self._contracts_shown, quoted, hedge
        )

    def _depth_views(
        self,
        own: dict[str, tuple[OwnOrder, ...]],
        book_updates: dict[str, int],
        levels_too: bool,
    ) -> tuple[DepthView, ...]:
        """Each symbol's ladder with our orders as they are now; its levels are taken from the
        book again only when `levels_too` and the book moved (`book_updates`, each book's
        count). The same tuple while nothing changed."""
        views = []
        books = self.node.pipeline.books
        for symbol in self._symbols:
            updates = book_updates[symbol]
            orders = own.get(symbol, ())
            previous = self._depth.get(symbol)
            if previous is not None and (previous[0] == updates or not levels_too):
                updates, view = previous
                if view.own_orders != orders:
                    view = depth_view_with_orders(view, orders)
            else:
                book_view = books[symbol].view(self.config.depth_levels)
                if book_view is None or not (book_view.bid_prices and book_view.ask_prices):
                    continue
                view = depth_view(book_view, orders, self._contracts.get(symbol))
                self._imbalance[symbol].add(imbalance_reading(book_view), book_view.exchange_ts_ms)
            self._depth[symbol] = (updates, view)
            views.append(view)
        shown = self.latest.depth if self.latest is not None else ()
        if len(shown) == len(views) and all(map(operator.is_, shown, views)):
            return shown
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
            elif isinstance(event, ContractChanged):
                self._contracts[event.new.symbol] = event.new
                self._contracts_shown = self._shown_contracts()
            shown = console_event(event, engine_now_ns, self._contracts)
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
        runs_on = classifier.runs_on
        if metadata is None:
            return LayaView(runs_on, "no model")
        created = metadata.created_utc[:10]
        name = Path(classifier.model_path).stem
        version = f"{name} {created} ({metadata.feature_set_version})"
        models = self.node.symbol_classifiers
        if any(model is not classifier for model in models.values()):
            # [laya.models] gives some symbols their own model: say which each runs.
            version += "; " + ", ".join(
                f"{symbol} {Path(model.model_path).stem}" for symbol, model in models.items()
            )
        return LayaView(runs_on, version)

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
        notes.append(f"Laya on {laya.runs_on}{fallback}, model {laya.model_version}")
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
