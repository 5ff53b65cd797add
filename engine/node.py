"""The engine node: builds the market source, the pipeline and the trading desk, owns their
lifecycle, takes the operator's commands and publishes frozen status snapshots. It runs
headless here and under the console.

Time. The node's `clock` is the one every component reads and waits on: the system clock live
and on the simulator, the recording's time in a replay (`engine/clock.py`), where the node must
run on the clock's own loop (`node.clock.run(main)`).

Threads. Everything runs on the engine's own event loop. Commands arrive on it (the engine
process hands each to `execute`); another thread may read `latest_status` (a frozen snapshot
republished every `status_interval_s`) and `events`, and run a coroutine on the loop with
`call_threadsafe(node.execute(Command(Kill())))`, which returns a `concurrent.futures.Future`
of its `CommandResult`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from engine.bitget.credentials import Credentials, mask_api_key
from engine.bitget.endpoints import PRIVATE_WS_PATH
from engine.bitget.public_ws import BitgetPublicFeed, BitgetPublicFeedConfig
from engine.bitget.record import RecordProgress, record, recorded_contracts, rest_url_of
from engine.bitget.rest import BitgetRestConfig
from engine.clock import EngineClock, MarketClock, WallClock
from engine.config import EngineConfig, MarketPipelineConfig
from engine.feed.events import BookSnapshot, FeedState
from engine.feed.parse import FrameParser
from engine.feed.recording import contracts_text
from engine.feed.replay import ReplayFeed, replay_clock
from engine.instance_lock import (
    InstanceLock,
    LockTakenOver,
    account_lock_path,
    journal_lock_path,
)
from engine.journal import Journal, JournalConfig
from engine.kev.answers import KevAnswerRecorder, RecordedKevClient
from engine.kev.client import KevClient
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig
from engine.kev.context import snapshot_of
from engine.kev.hedge import HedgeAnalytics
from engine.kev.hub import KevHub
from engine.laya.classifier import LayaClassifier, classifiers_by_symbol
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.scorecard import (
    LayaScorecard,
    LayaScorecardConfig,
    ScorecardView,
    shadow_classifier_config,
)
from engine.market.instruments import Instrument, price_text
from engine.pipeline import (
    EventLog,
    MarketPipeline,
    PipelineSinks,
    book_shelf,
    feature_extractor,
)
from engine.sim.market import engine_market
from engine.sim.server import SimExchange, SimExchangeConfig
from engine.trading.commands import Command, CommandResult
from engine.trading.config import TradingConfig, TradingMode
from engine.trading.contract_watch import ContractWatcher
from engine.trading.desk import TradingDesk, TradingStatus
from engine.trading.paper_venue import PaperVenue
from engine.trading.quote_skews import QuoteSkews
from engine.trading.rest_venue import RestVenue
from engine.trading.venue import Venue
from engine.units import amount, coin
from engine.warmup import InferenceWarmer, compile_fast_path

_T = TypeVar("_T")

logger = logging.getLogger(__name__)


def _sim_config(symbols: tuple[str, ...], seed: int) -> SimExchangeConfig:
    """The in-process simulator of the engine's symbols (any of its table's contracts): a
    traded symbol and its hedge, or a book of quoted symbols following the last, its leader."""
    return SimExchangeConfig(market=engine_market(symbols, seed))


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
    """A frozen picture of the engine, safe to hand to another thread. `trading` is None
    when the engine only watches the market."""

    market_source: str
    symbols: tuple[SymbolStatus, ...]
    frames: int
    rejected: dict[str, int]
    finished: bool
    laya_runs_on: str
    verdict_counts: dict[str, int]
    trading: TradingStatus | None = None
    laya_warming: dict[str, float] = field(default_factory=dict)
    """Market seconds each symbol Laya still stands aside on has to wait."""
    laya_scorecard: ScorecardView | None = None
    """Laya's scorecard as of its last score pass."""
    laya_stood_aside: dict[str, str] = field(default_factory=dict)
    """The symbols Laya stands aside on for good, with why (their model would not start)."""


def engine_clock(config: EngineConfig) -> EngineClock:
    """The clock `config`'s engine runs on: a replay's starts at the recording's first frame."""
    if config.replay_path is None:
        return WallClock()
    return replay_clock(config.replay_path, config.replay_speed)


def _change_contract(desk: TradingDesk, venue: RestVenue, instrument: Instrument) -> None:
    venue.change_instrument(instrument)
    desk.change_contract(instrument)


class EngineNode:
    """Assembles source -> parser -> pipeline -> trading desk and starts and stops them in
    order. `credentials` are needed for demo and live trading (never for sim or paper).
    `clock` defaults to `engine_clock(config)`."""

    def __init__(
        self,
        config: EngineConfig,
        credentials: Credentials | None = None,
        clock: EngineClock | None = None,
        *,
        wrap_sinks: Callable[[PipelineSinks], PipelineSinks] | None = None,
    ) -> None:
        self.config = config
        self._wrap_sinks = wrap_sinks
        self.clock = clock if clock is not None else engine_clock(config)
        if config.replay_path is not None and not isinstance(self.clock, MarketClock):
            raise ValueError("a replay runs on a MarketClock (the recording's time)")
        self.events = EventLog(MarketPipelineConfig().event_log_size)
        self.parser = FrameParser(config.symbols)
        self.symbol_classifiers = classifiers_by_symbol(
            config.laya, dict(config.laya_models), config.symbols
        )
        """Each symbol's classifier, one per distinct model."""
        self.classifier = next(
            (
                classifier
                for classifier in self.symbol_classifiers.values()
                if classifier.config is config.laya
            ),
            None,
        ) or LayaClassifier(config.laya)
        """The default model's ([laya] model_path), started or the engine does not start: the
        start line."""
        self.model_faults: dict[str, str] = {}
        """Symbols whose own model would not start, with why: Laya stands them aside."""
        trading = config.trading
        self.journal = (
            Journal(
                JournalConfig(trading.resolved_journal_path(), durable=trading.journal_durable),
                on_fault=self._journal_fault,
                clock=self.clock,
            )
            if trading is not None
            else None
        )
        self.books = book_shelf(config.symbols)
        """Written by the pipeline, read by the trading desk."""
        self.features = feature_extractor(config.symbols, self.parser.tape)
        shadow = config.laya_shadow_model
        self.scorecard = LayaScorecard(
            LayaScorecardConfig(symbols=config.symbols, imbalance_gate=config.imbalance_gate),
            self.symbol_classifiers,
            self.clock,
            self.features,
            shadow=LayaClassifier(shadow_classifier_config(config.laya, shadow))
            if shadow is not None
            else None,
            journal=self.journal,
        )
        self._pipeline: MarketPipeline | None = None
        needs_keys = trading is not None and trading.mode in (TradingMode.DEMO, TradingMode.LIVE)
        if needs_keys and credentials is None:
            raise ValueError(f"{trading.mode.value} trading needs Bitget API credentials")
        self._credentials = credentials
        self.sim: SimExchange | None = None
        self.feed: BitgetPublicFeed | ReplayFeed | None = None
        self.desk: TradingDesk | None = None
        self.contract_watch: ContractWatcher | None = None
        self.latest_status: EngineStatus | None = None
        self.fast_path_compile_s: float | None = None
        self.warmer: InferenceWarmer | None = None
        self.kev: KevHub | None = None
        self.hedge_analytics: dict[str, HedgeAnalytics] = {}
        """Each quoted symbol's pair with the hedge (or leader), where Kev runs."""
        self._kev_client: KevClient | RecordedKevClient | None = None
        self._kev_answers: KevAnswerRecorder | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._publisher: asyncio.Task[None] | None = None
        self._locks: list[InstanceLock] = []

    async def start(self) -> None:
        """Takes the journal's and the account's locks first (`EngineLocked`: another engine
        holds one), then loads Laya (ONNX Runtime may print while it loads), then the venue and
        the trading desk (reconciled before the first frame), then the market."""
        config = self.config
        clock = self.clock
        if isinstance(clock, MarketClock):
            clock.require_loop()
        self._loop = asyncio.get_running_loop()
        self._take_locks()
        try:
            self.classifier.start()
            self._start_symbol_models()
            self.scorecard.start()
            # Off the loop: after an install numba needs ~a minute to compile the kernels once;
            # in a replay market time waits for it.
            self.fast_path_compile_s = await clock.real_wait(
                asyncio.to_thread(compile_fast_path, config.symbols), None
            )
        except BaseException:
            self._release_locks()
            raise
        try:
            if config.replay_path is None and config.live_url is None:
                self.sim = SimExchange(_sim_config(config.symbols, config.sim_seed))
                await self.sim.start()
            if config.trading is not None:
                await self._start_trading(config.trading)
            pipeline = self._build_pipeline()
            if config.replay_path is not None:
                assert isinstance(clock, MarketClock)
                self.feed = ReplayFeed(config.replay_path, self.parser, pipeline, clock)
            else:
                url = config.live_url if self.sim is None else self.sim.ws_url
                assert url is not None
                self.feed = BitgetPublicFeed(
                    BitgetPublicFeedConfig(
                        url=url, symbols=config.symbols, channels=config.feed_channels
                    ),
                    self.parser,
                    pipeline,
                )
            # The warmer keeps CPU caches warm over real idle time; a replay has none to keep.
            # It warms every model a symbol runs on ([laya.models]): any EMERGENCY cancels.
            warmed = {
                id(classifier): classifier
                for symbol, classifier in self.symbol_classifiers.items()
                if symbol not in self.model_faults
            }
            if config.laya_keep_warm_ms is not None and not clock.market and warmed:
                self.warmer = InferenceWarmer(
                    tuple(warmed.values()), FEATURE_COUNT, config.laya_keep_warm_ms / 1e3
                )
                self.warmer.start()
            await self.feed.start()
        except BaseException:
            await self.stop()  # release whatever had started
            raise
        self.latest_status = self.status()
        self._publisher = asyncio.create_task(self._publish(), name="engine-status")

    @property
    def pipeline(self) -> MarketPipeline:
        """Built by `start`, once what takes its decisions (the desk, Kev) is running."""
        if self._pipeline is None:
            raise RuntimeError("the engine's pipeline is built when the engine starts")
        return self._pipeline

    def _build_pipeline(self) -> MarketPipeline:
        """The pipeline, handing its decisions to the desk and Kev where they run (through
        `wrap_sinks` when given); the symbols whose model would not start stood aside."""
        config = self.config
        desk, kev = self.desk, self.kev
        sinks = PipelineSinks(
            on_decided=desk.on_book if desk is not None else None,
            on_trades=desk.on_trades if desk is not None and desk.paper is not None else None,
            on_notice=desk.on_feed_event if desk is not None else None,
            on_verdict=self._offer_to_kev if kev is not None else None,
        )
        if self._wrap_sinks is not None:
            sinks = self._wrap_sinks(sinks)
        pipeline = MarketPipeline(
            MarketPipelineConfig(
                symbols=config.symbols,
                warmup_ms=round(config.laya_warmup_s * 1000),
                gate=config.quote_gate,
                imbalance_gate=config.imbalance_gate,
            ),
            self.parser.tape,
            self.symbol_classifiers,
            on_resync=self._resync,
            events=self.events,
            scores=self.scorecard.queue,
            features=self.features,
            books=self.books,
            sinks=sinks,
        )
        now_ns = self.clock.time_ns()
        for symbol, reason in self.model_faults.items():
            pipeline.stand_aside(symbol, reason, now_ns)
        self._pipeline = pipeline
        return pipeline

    def _start_symbol_models(self) -> None:
        """Starts the models [laya.models] maps symbols to; one that will not start stands its
        symbols aside and says why, the engine runs on."""
        failed: dict[int, str] = {}
        for symbol, classifier in self.symbol_classifiers.items():
            if classifier is self.classifier or classifier.model_metadata is not None:
                continue
            if id(classifier) not in failed:
                try:
                    classifier.start()
                    continue
                except Exception as error:  # a bad model must not stop the engine
                    failed[id(classifier)] = f"{type(error).__name__}: {error}"
            self.model_faults[symbol] = failed[id(classifier)]

    def _take_locks(self) -> None:
        """One engine per journal, and for demo and live per account (engine/instance_lock.py);
        a lock a dead engine left is taken over and said."""
        trading = self.config.trading
        if trading is None:
            return
        journal_path = trading.resolved_journal_path()
        locks = [InstanceLock(journal_lock_path(journal_path), f"the journal {journal_path}")]
        credentials = self._credentials
        if credentials is not None and trading.mode in (TradingMode.DEMO, TradingMode.LIVE):
            account = f"the Bitget account of API key {mask_api_key(credentials.api_key)}"
            locks.append(InstanceLock(account_lock_path(credentials.api_key), account))
        try:
            for lock in locks:
                taken_over = lock.acquire()
                self._locks.append(lock)
                if taken_over is not None:
                    logger.warning("%s", taken_over)
                    self.events.append(LockTakenOver(taken_over, self.clock.time_ns()))
        except BaseException:
            self._release_locks()
            raise

    def _release_locks(self) -> None:
        while self._locks:
            self._locks.pop().release()

    async def _start_trading(self, trading: TradingConfig) -> None:
        journal = self.journal
        assert journal is not None
        if self._credentials is not None:
            for secret in (*self._credentials.secrets, self._credentials.api_key):
                journal.register_secret(secret)
        journal.start()
        venue = self._build_venue(trading)
        skews = QuoteSkews(self.clock.time_ns) if self.config.kev_client is not None else None
        desk = TradingDesk(
            trading,
            venue,
            journal,
            self.events,
            self.books,
            clock=self.clock,
            gate=self.config.quote_gate,
            quote_skews=skews,
        )
        self.desk = desk
        await desk.start()
        if isinstance(venue, RestVenue):
            self.contract_watch = ContractWatcher(
                trading.contract_check_interval_s,
                venue.client,
                trading.instruments,
                apply=lambda instrument: _change_contract(desk, venue, instrument),
                on_event=self.events.append,
                clock=self.clock.time_ns,
                command=desk.execute,
            )
            await self.contract_watch.start()
        if self.config.kev_client is not None:
            assert skews is not None
            await self._start_kev(self.config.kev_client, desk, skews)

    async def _start_kev(
        self, client_config: KevClientConfig, desk: TradingDesk, skews: QuoteSkews
    ) -> None:
        """Kev's hub on this loop, on the desk's clock: non-HOLD verdicts go to its queue, its
        commands to the desk (which drains the gateway's events), its decisions to the journal,
        its events to the event log, accepted quote skews to the strategy. It starts offline
        and connects (warming the prompt cache first) when llama-server answers."""
        spec = KevCommandSpec().for_gateway(desk.gateway.config)
        config = self.config
        client: KevClient | RecordedKevClient = (
            RecordedKevClient(config.kev_answers_in, spec)
            if config.kev_answers_in
            else KevClient(client_config, spec)
        )
        await client.start()
        self._kev_client = client
        recorder = None
        if config.kev_answers_out:
            recorder = KevAnswerRecorder(config.kev_answers_out)
            recorder.open()
        self._kev_answers = recorder
        *paired, _ = self.config.symbols  # each quoted symbol with the hedge (or leader)
        self.hedge_analytics = {symbol: HedgeAnalytics() for symbol in paired}
        hub = KevHub(
            self.config.kev_hub,
            client,
            desk.gateway,
            desk.clock,
            hedge=self.hedge_analytics,
            execute=desk.execute,
            journal=desk.journal,
            on_event=self.events.append,
            engine_clock=self.clock,
            recorder=recorder,
            skews=skews,
        )
        await hub.start()
        self.kev = hub

    def _offer_to_kev(
        self, snapshot: BookSnapshot, verdict: int, probabilities: list[float], features: np.ndarray
    ) -> None:
        hub = self.kev
        assert hub is not None  # the pipeline's sink only where Kev runs (`_build_pipeline`)
        bid, ask = snapshot.levels[0, 0], snapshot.levels[2, 0]
        hub.offer(
            snapshot_of(
                snapshot.symbol,
                snapshot.exchange_ts_ms,
                verdict,
                probabilities,
                0.5 * float(bid + ask),
                features,
            )
        )

    def _build_venue(self, trading: TradingConfig) -> Venue:
        instruments = trading.instruments
        if trading.mode is TradingMode.PAPER:
            return PaperVenue(trading.paper, instruments, clock=self.clock.time_ns)
        if trading.mode is TradingMode.SIM:
            if self.sim is not None:
                sim = self.sim
                rest_url, private_url, name = sim.rest_url, sim.private_ws_url, "sim"
                sim_config = sim.config
            else:
                rest_url = trading.rest_url
                assert rest_url is not None
                private_url = trading.private_ws_url or (
                    "ws" + rest_url.removeprefix("http") + PRIVATE_WS_PATH
                )
                name = f"sim@{rest_url}"
                sim_config = SimExchangeConfig()
            credentials = self._credentials or Credentials(
                sim_config.api_key, sim_config.api_secret, sim_config.passphrase
            )
            return RestVenue(
                name,
                BitgetRestConfig(base_url=rest_url, request_timeout_s=trading.rest_timeout_s),
                credentials,
                instruments,
                private_ws_url=private_url,
                cancel_lane=trading.cancel_lane,
            )
        rest_url = trading.resolved_rest_url()
        private_url = trading.resolved_private_ws_url()
        assert rest_url is not None and private_url is not None and self._credentials is not None
        return RestVenue(
            trading.mode.value,
            BitgetRestConfig(
                base_url=rest_url,
                demo=trading.mode is TradingMode.DEMO,
                request_timeout_s=trading.rest_timeout_s,
            ),
            self._credentials,
            instruments,
            private_ws_url=private_url,
            cancel_lane=trading.cancel_lane,
        )

    async def stop(self) -> None:
        """Market first (no more frames), then trading (resting orders cancelled), then the
        simulator and the journal."""
        if self._publisher is not None:
            self._publisher.cancel()
            await asyncio.gather(self._publisher, return_exceptions=True)
            self._publisher = None
        if self.feed is not None:
            await self.feed.stop()
        if self.warmer is not None:
            await self.warmer.stop()
        await self.scorecard.stop()
        if self.kev is not None:
            await self.kev.stop()
        if self._kev_client is not None:
            await self._kev_client.stop()
        if self._kev_answers is not None:
            self._kev_answers.close()
        if self.contract_watch is not None:
            await self.contract_watch.stop()
        if self.desk is not None:
            await self.desk.stop()
        if self.sim is not None:
            await self.sim.stop()
        if self.journal is not None:
            self.journal.stop()
        self.classifier.stop()
        for classifier in self.symbol_classifiers.values():
            classifier.stop()
        self._release_locks()  # last: the journal is closed and nothing trades any more

    async def _publish(self) -> None:
        interval_s = self.config.status_interval_s
        built_s = time.perf_counter()
        while True:
            await asyncio.sleep(interval_s)
            self._sample_hedge_pairs()
            # A fast replay's market time outruns any reader: a new picture at most about as
            # often in real time (a picture costs ~0.3 ms; at max speed most wakes skip it).
            now_s = time.perf_counter()
            if now_s - built_s >= interval_s / 2:
                built_s = now_s
                self.latest_status = self.status()

    def _sample_hedge_pairs(self) -> None:
        """Feeds each quoted symbol's hedge analytics with the hedge (Kev's context) off the
        fast path."""
        if not self.hedge_analytics:
            return
        hedge = self.books[self.config.symbols[-1]]
        if not hedge.ready:
            return
        hedge_bid, _, hedge_ask, _ = hedge.best()
        hedge_mid = 0.5 * (hedge_bid + hedge_ask)
        now_ms = self.clock.time_ns() // 1_000_000
        for symbol, analytics in self.hedge_analytics.items():
            traded = self.books[symbol]
            if traded.ready:
                traded_bid, _, traded_ask, _ = traded.best()
                analytics.on_mids(now_ms, 0.5 * (traded_bid + traded_ask), hedge_mid)

    def _journal_fault(self, fault: Exception) -> None:
        """From the journal's writer thread: halt on the engine loop (HALTED, then the desk
        cancels and flattens)."""
        loop, desk = self._loop, self.desk
        if loop is not None and desk is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(desk.on_journal_fault, str(fault))

    # Commands (engine loop; from another thread through `call_threadsafe`)

    def call_threadsafe(self, command: Coroutine[Any, Any, _T]) -> concurrent.futures.Future[_T]:
        """Run a coroutine (e.g. `node.execute(command)`) on the engine loop from any thread."""
        if self._loop is None or self._loop.is_closed():
            command.close()
            raise RuntimeError("the engine is not running")
        return asyncio.run_coroutine_threadsafe(command, self._loop)

    async def execute(self, command: Command) -> CommandResult:
        """A command that changes risk or orders (`engine/trading/commands.py`), through the
        trading desk's one way in; refused when the engine only watches the market."""
        desk = self.desk
        if desk is None:
            return CommandResult(
                command.name, False, "trading is off: the engine only watches the market"
            )
        return await desk.execute(command)

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
        now_ns = self.clock.time_ns()
        symbols = []
        for symbol, book in self.books.items():
            bid, _, ask, _ = book.best()
            age = None
            if book.snapshot is not None:
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
            self.classifier.runs_on,
            self.pipeline.decisions.counts(),
            self.desk.status() if self.desk is not None else None,
            self.pipeline.warm_up_left_s(),
            self.scorecard.view(),
            dict(self.pipeline.stood_aside),
        )


def format_status(status: EngineStatus, instruments: Iterable[Instrument] = ()) -> str:
    """One status line for the headless runner; prices at their contract's decimals."""
    parts = [f"{status.market_source.upper()} frames {status.frames:,}"]
    contracts = {instrument.symbol: instrument for instrument in instruments}
    for item in status.symbols:
        if item.books:
            spec = contracts.get(item.symbol)
            bid, ask = (
                price_text(spec, price, grouped=True) for price in (item.best_bid, item.best_ask)
            )
            quote = f"{bid}/{ask} ({item.spread_bps:.2f} bps)"
        else:
            quote = "no book yet"
        age = "" if item.book_age_ms is None else f" age {item.book_age_ms:,.0f} ms"
        parts.append(f"{item.symbol} {item.state.value} {quote}{age}")
    rejected = sum(status.rejected.values())
    if rejected:
        parts.append(f"rejected {rejected}")
    verdicts = " ".join(f"{name} {count}" for name, count in status.verdict_counts.items())
    laya = f"Laya ({status.laya_runs_on}) {verdicts}"
    if status.laya_warming:
        laya += f" {format_warm_up(status.laya_warming)}"
    parts.append(laya)
    if status.trading is not None:
        parts.append(format_trading(status.trading))
    return " | ".join(parts)


def format_warm_up(waits: dict[str, float]) -> str:
    """`warming up: BTCUSDT 20.1 s, ETHUSDT 20.1 s of market data to go`, from
    `EngineStatus.laya_warming`."""
    left = ", ".join(f"{symbol} {wait:,.1f} s" for symbol, wait in waits.items())
    return f"warming up: {left} of market data to go"


def format_trading(trading: TradingStatus) -> str:
    """State, positions, net delta, the session's PnL (and the day's since the daily reset),
    open orders, denials and the last kill, one line."""
    risk = trading.risk
    sizes = [coin(p.symbol, p.size, signed=True) for p in risk.positions if p.size]
    line = (
        f"{trading.mode.upper()} {risk.state.name} pos {', '.join(sizes) or 'flat'} "
        f"delta {risk.net_delta:+,.0f} USDT session PnL {amount(risk.session_pnl)} USDT "
        f"(day {amount(risk.daily_pnl)}) orders {risk.open_orders} "
        f"fills {trading.executor.fills} denials {risk.denials_total}"
    )
    if trading.reaction.count:
        line += f" react p50 {trading.reaction.p50_us:,.0f} us"
    if trading.last_kill is not None:
        kill = trading.last_kill
        line += f" kill {'ok' if kill.ok else 'FAILED'} {kill.elapsed_ms:,.1f} ms"
    return line


async def record_command(
    out_path: str,
    symbols: tuple[str, ...],
    duration_s: float | None,
    url: str | None,
    sim_seed: int,
    report: Callable[[str], None] = print,
) -> int:
    """`hft-console record`: from `url`, or from an in-process simulator when url is None,
    with the contracts of `symbols` from the venue's table first (ValueError naming a symbol
    the table lacks)."""
    sim = None
    if url is None:
        sim = SimExchange(_sim_config(symbols, sim_seed))
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
        rest_url = sim.rest_url if sim is not None else rest_url_of(url)
        instruments = await recorded_contracts(rest_url, symbols, report)
        report(f"contracts of {rest_url}: {contracts_text(instruments)}")
        final = await record(source, out_path, duration_s, progress, instruments=instruments)
    finally:
        if sim is not None:
            await sim.stop()
    return 1 if final.fault else 0
