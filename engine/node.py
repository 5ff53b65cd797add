"""The engine node: builds the market source and the pipeline, owns their lifecycle, and
publishes frozen status snapshots. It runs headless here and under the console later."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from engine.feed.bitget_ws import BitgetPublicFeed, BitgetPublicFeedConfig
from engine.feed.events import FeedState, FeedStateChanged
from engine.feed.parse import FrameParser
from engine.feed.record import RecordProgress, record
from engine.feed.replay import ReplayFeed
from engine.laya.classifier import LayaClassifier, LayaClassifierConfig
from engine.pipeline import MarketPipeline, MarketPipelineConfig
from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchange, SimExchangeConfig


def _sim_config(seed: int) -> SimExchangeConfig:
    return SimExchangeConfig(market=MarketGeneratorConfig(seed=seed))


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Where market data comes from: a recording, a live websocket, or (default) the simulator."""

    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    replay_path: str | None = None
    replay_speed: float | None = 1.0
    live_url: str | None = None
    sim_seed: int = 7
    laya: LayaClassifierConfig = field(default_factory=LayaClassifierConfig)

    def __post_init__(self) -> None:
        if not self.symbols:
            raise ValueError("EngineConfig.symbols must name at least one symbol")
        if self.replay_path is not None and self.live_url is not None:
            raise ValueError("choose a recording or a live url, not both")
        if self.replay_speed is not None and not self.replay_speed > 0:
            raise ValueError(f"replay_speed must be > 0 or None (max), got {self.replay_speed}")

    @property
    def market_source(self) -> str:
        if self.replay_path is not None:
            return "replay"
        return "live" if self.live_url is not None else "sim"


@dataclass(frozen=True, slots=True)
class SymbolStatus:
    symbol: str
    state: FeedState
    books: int
    best_bid: float
    best_ask: float
    spread_bps: float
    book_age_ms: float | None


@dataclass(frozen=True, slots=True)
class EngineStatus:
    """A frozen picture of the engine, safe to hand to another thread."""

    market_source: str
    symbols: tuple[SymbolStatus, ...]
    frames: int
    rejected: dict[str, int]
    finished: bool
    laya_provider: str
    verdict_counts: dict[str, int]


class EngineNode:
    """Assembles source -> parser -> pipeline and starts and stops them in order."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.parser = FrameParser(config.symbols)
        self.classifier = LayaClassifier(config.laya)
        self.pipeline = MarketPipeline(
            MarketPipelineConfig(symbols=config.symbols),
            self.parser.tape,
            self.classifier,
            on_resync=self._resync,
        )
        self.sim: SimExchange | None = None
        self.feed: BitgetPublicFeed | ReplayFeed | None = None

    async def start(self) -> None:
        """Loads Laya first (ONNX Runtime may print while it loads), then the market."""
        config = self.config
        self.classifier.start()
        if config.replay_path is not None:
            self.feed = ReplayFeed(
                config.replay_path, self.parser, self.pipeline, config.replay_speed
            )
        else:
            url = config.live_url
            if url is None:
                self.sim = SimExchange(_sim_config(config.sim_seed))
                await self.sim.start()
                url = self.sim.ws_url
            self.feed = BitgetPublicFeed(
                BitgetPublicFeedConfig(url=url, symbols=config.symbols), self.parser, self.pipeline
            )
        await self.feed.start()

    async def stop(self) -> None:
        if self.feed is not None:
            await self.feed.stop()
        if self.sim is not None:
            await self.sim.stop()
        self.classifier.stop()

    @property
    def finished(self) -> bool:
        """A replay that reached the end of its recording."""
        return isinstance(self.feed, ReplayFeed) and self.feed.stats.finished

    def _resync(self, symbol: str) -> None:
        if isinstance(self.feed, BitgetPublicFeed):
            self.feed.request_resync(symbol)

    def _state(self, symbol: str) -> FeedState:
        if self.feed is None:
            return FeedState.STOPPED
        try:
            return self.feed.state(symbol)
        except KeyError:
            return FeedState.CONNECTING

    def status(self) -> EngineStatus:
        now_ns = time.time_ns()
        symbols = []
        for symbol, book in self.pipeline.books.items():
            bid, _, ask, _ = book.best()
            age = None
            if book.snapshot is not None and self.config.replay_path is None:
                age = (now_ns - book.snapshot.recv_ns) / 1e6
            symbols.append(
                SymbolStatus(
                    symbol,
                    self._state(symbol),
                    book.updates,
                    bid,
                    ask,
                    book.spread_bps() if book.ready else float("nan"),
                    age,
                )
            )
        stats = self.parser.stats
        return EngineStatus(
            self.config.market_source,
            tuple(symbols),
            stats.frames,
            dict(stats.rejected),
            self.finished,
            self.classifier.provider or "not loaded",
            self.pipeline.decisions.counts(),
        )


def format_status(status: EngineStatus) -> str:
    """One status line for the headless runner."""
    parts = [f"{status.market_source.upper()} frames {status.frames:,}"]
    for item in status.symbols:
        if item.books:
            quote = f"{item.best_bid:,.2f}/{item.best_ask:,.2f} ({item.spread_bps:.2f} bps)"
        else:
            quote = "no book yet"
        age = "" if item.book_age_ms is None else f" age {item.book_age_ms:,.0f} ms"
        parts.append(f"{item.symbol} {item.state.value} {quote}{age}")
    rejected = sum(status.rejected.values())
    if rejected:
        parts.append(f"rejected {rejected}")
    verdicts = " ".join(f"{name} {count}" for name, count in status.verdict_counts.items())
    parts.append(f"Laya ({status.laya_provider}) {verdicts}")
    return " | ".join(parts)


def _format_event(event: object) -> str:
    if isinstance(event, FeedStateChanged):
        return f"feed {event.symbol}: {event.state.value} ({event.reason})"
    return f"feed: {event}"


async def run_headless(
    config: EngineConfig,
    duration_s: float | None = None,
    out: TextIO = sys.stdout,
    status_interval_s: float = 1.0,
) -> int:
    """Run the engine without a UI, printing feed events and a status line every interval.

    Stops on SIGINT/SIGTERM, after `duration_s`, or when a replay ends.
    """
    node = EngineNode(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    await node.start()
    deadline = None if duration_s is None else loop.time() + duration_s
    last_event_id = -1
    try:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), status_interval_s)
            events, missed = node.pipeline.events.since(last_event_id)
            if missed:
                print(f"({missed} feed events dropped from the log)", file=out)
            for event_id, event in events:
                print(_format_event(event), file=out)
                last_event_id = event_id
            print(format_status(node.status()), file=out, flush=True)
            if node.finished or (deadline is not None and loop.time() >= deadline):
                break
    finally:
        await node.stop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(signum)
    return 0


async def record_command(
    out_path: str,
    symbols: tuple[str, ...],
    duration_s: float | None,
    url: str | None,
    sim_seed: int,
    report: Callable[[str], None] = print,
) -> int:
    """`hft-console record`: from `url`, or from an in-process simulator when url is None."""
    sim = None
    if url is None:
        sim = SimExchange(_sim_config(sim_seed))
        await sim.start()
        url = sim.ws_url
    source = BitgetPublicFeedConfig(url=url, symbols=symbols)

    def progress(update: RecordProgress) -> None:
        states = " ".join(f"{symbol} {state.value}" for symbol, state in update.states)
        line = (
            f"{update.elapsed_s:7.1f} s  frames {update.frames:,}  "
            f"bytes {update.bytes_written:,}  {update.frames_per_s:,.1f} frames/s  {states}"
        )
        if update.fault:
            line += f"  FAULT: {update.fault}"
        report(line)

    try:
        final = await record(source, out_path, duration_s, progress)
    finally:
        if sim is not None:
            await sim.stop()
    return 1 if final.fault else 0
