"""`hft-console bench --reaction` and `--kill`: the order path's two latency figures, measured
end to end against the simulated exchange on loopback, with one quoted symbol and its hedge and
with a book of quoted symbols and their hedge (`bench_books`), in one run.

The exchange runs in its own process (as a real one would be elsewhere) and serves the
simulator's book (`sim_book`: the quoted symbols follow the hedge, the market's leader; the
symbols are the fast path's bench's, `book_symbols`); this process runs the whole engine on it:
`BitgetPublicFeed` -> parser -> `MarketPipeline` (book, features, the Laya model, the decision)
-> `TradingDesk` -> executor -> venue. Each round starts the exchange and the engine for the
one-symbol book, then for the larger one, so a busy machine weighs on both alike.

Reaction: from the receive of a books15 frame (`recv_ns`, stamped where the websocket frame is
read) that yields EMERGENCY to the cancel-all request's bytes being handed to the socket. Laya
runs the real model on every frame; only its decision thresholds are switched: HOLD while one
resting order (on the first quoted symbol; nothing else is quoted) is placed and acknowledged,
then EMERGENCY for every verdict, so the next frame of any symbol cancels it. Samples are paced
under Bitget's place-order limit. Two paths are timed, run by run in turn so both see the same
machine: the pre-connected cancel lane (`transport.write` on the reaction's stack) and the REST
client (aiohttp), stamped by aiohttp's chunk-sent hook just before its write.

Kill: from the `kill` command to the venue confirming (its own REST: open orders, positions)
no open order and no position. Each run starts with a position on every symbol of the book,
the hedge included, and a quote resting on every quoted one, as the engine tracks them and as
the venue reported them a second before (the venue's per-second request limits are left whole
for the kill's own confirmation); quotes are not moved while they rest (a wide requote
threshold), so every run reaches that state within the gateway's order pace. A run counts as
confirmed only when the kill says so and the venue then reports no order and no position on
any symbol; one that is not is counted and named, never dropped. Runs are a little over a
second apart (close-positions allows one a second).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import aiohttp

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.config import EngineConfig
from engine.contract_sources import simulator_contracts
from engine.latency import LatencyHistogram
from engine.laya.config import LayaClassifierConfig
from engine.node import EngineNode
from engine.risk.events import TradingState
from engine.risk.intents import OrderIntent, Source
from engine.settings.schema import Settings
from engine.sim.market import sim_book
from engine.sim.server import SimExchangeConfig
from engine.tools.bench.fast_path import book_symbols
from engine.trading.commands import Command, Kill, Rearm, Resume
from engine.trading.desk import TradingDesk
from engine.trading.rest_venue import RestVenue
from engine.trading.strategy import Grid
from engine.trading.tracked_order import OrderRole
from engine.trading.venue import VenueSnapshot
from engine.units import coin

REACTION_TARGET_P50_US = 300.0
REACTION_TARGET_P99_US = 600.0
REACTION_BOOK_RATIO_TARGET = 1.2
"""The book's lane p99 over the one-symbol book's (issue 30)."""
KILL_TARGET_P99_MS = 50.0
BOOK_KILL_TARGET_P99_MS = 10.0
"""The kill's p99 with a book of quoted symbols and their hedge (issue 30)."""
ALWAYS_EMERGENCY = (1.0, 1.0, 1.0, 0.0)
"""Laya thresholds under which every verdict is EMERGENCY (the model still runs)."""
NEVER_EMERGENCY = (0.0, 1.0, 1.0, 1.0)
"""Thresholds under which every verdict is HOLD: the strategy quotes undisturbed."""
_SAMPLE_PERIOD_S = 0.13
"""Under 8 placements a second: the gateway's own pace and Bitget's 10/s place-order limit."""
_KILL_SPACING_S = 1.15
_WARMUP_FRAMES = 60
_SIM_BOOK_INTERVAL_MS = 20
_SIM_SEED = 7
_UNREACHABLE_NOTIONAL = 1e12
"""USDT: a minimum notional no quote reaches (the reaction bench quotes nothing)."""
_RESTING_REQUOTE_BPS = 500.0
"""The kill bench's requote threshold: a quote rests until it fills or the kill cancels it."""
_BENCH_ORDER_USDT = 6.0
"""The reaction bench's resting bid: just over Bitget's 5 USDT minimum."""
_TAKER_USDT = 12.0
"""Each position the kill bench opens, in whole lots (one at least)."""
_TAKER_THROUGH = 0.0005
"""How far through the mark the kill bench's IOC takers are priced (5 bps)."""
_OPEN_RISK_TIMEOUT_S = 75.0
"""A book's quotes after a kill may wait out the gateway's orders_per_minute window."""
_REST_WINDOW_S = 1.0
"""The venue's request limits count per second (Bitget's all-position: 5 a second)."""


class BenchFailed(RuntimeError):
    """The bench could not get the engine or the exchange where it measures (one line)."""


@dataclass(frozen=True, slots=True)
class PathFigures:
    """One path's samples: pooled percentiles, and the median of the per-run p50s and p99s."""

    path: str
    samples: int
    p50_us: float
    p99_us: float
    max_us: float
    run_p50_us: tuple[float, ...]
    run_p99_us: tuple[float, ...]

    @property
    def median_p50_us(self) -> float:
        return statistics.median(self.run_p50_us)

    @property
    def median_p99_us(self) -> float:
        return statistics.median(self.run_p99_us)


@dataclass(frozen=True, slots=True)
class BookReaction:
    """The reaction figures of one book (`symbols`: the quoted ones, then the hedge)."""

    symbols: tuple[str, ...]
    lane: PathFigures
    client: PathFigures


@dataclass(frozen=True, slots=True)
class KillFigures:
    """One book's kill runs: `ok` of them confirmed flat on every symbol; `failures` names
    each other run and what the venue still held after it. When a kill was pressed the engine
    held positions on `positions_at_kill` symbols and orders on `quoted_at_kill` at least."""

    symbols: tuple[str, ...]
    runs: int
    ok: int
    positions_at_kill: int
    quoted_at_kill: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    attempts_max: int
    elapsed_ms: tuple[float, ...]
    failures: tuple[str, ...]


def python_loop_ns(iterations: int = 2_000_000) -> float:
    """Nanoseconds per iteration of a trivial Python loop: how fast this machine runs Python
    right now, to read the figures against (a busy VM host slows every figure alike)."""
    total = 0
    started = time.perf_counter_ns()
    for number in range(iterations):
        total += number
    return (time.perf_counter_ns() - started) / iterations


# The simulator, in a process of its own


def _serve_sim(port: int, seed: int, symbols: tuple[str, ...]) -> None:
    from engine.sim.standalone import run_standalone

    config = SimExchangeConfig(
        port=port,
        book_interval_ms=_SIM_BOOK_INTERVAL_MS,
        warmup_ms=3_000,
        market=sim_book(symbols[:-1], seed, symbols[-1]),
    )
    with open(os.devnull, "w") as quiet:
        run_standalone(config, [], status_interval_s=3_600, out=quiet)


class SimProcess:
    """The simulated exchange serving the book `symbols` (the quoted ones, then the hedge) in
    a child process, on a free loopback port."""

    def __init__(self, symbols: tuple[str, ...], seed: int = _SIM_SEED) -> None:
        self.symbols = symbols
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self._seed = seed
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/v2/ws/public"

    async def start(self, timeout_s: float = 60.0) -> None:
        root = str(Path(__file__).resolve().parents[2])
        path = os.environ.get("PYTHONPATH")
        environment = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{path}" if path else root}
        code = (
            "from engine.tools.bench.trading import _serve_sim; "
            f"_serve_sim({self.port}, {self._seed}, {self.symbols!r})"
        )
        self._process = subprocess.Popen(
            [sys.executable, "-c", code],
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        async with aiohttp.ClientSession() as session:
            while True:
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(f"{self.rest_url}/api/v2/public/time") as answer:
                        if answer.status == 200:
                            return
                if self._process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise BenchFailed("the simulated exchange did not start")
                await asyncio.sleep(0.1)

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# The engine under test


def _engine_config(
    sim: SimProcess, model: str | Path | None, journal: Path, *, quoting: bool
) -> EngineConfig:
    """The engine on `sim`'s book, trading as a run on the simulator with the default settings
    would (its strategy and risk caps sized on the simulator's contracts at their start
    prices), but with quotes left resting (`_RESTING_REQUOTE_BPS`) and no EMERGENCY cooldown."""
    laya = LayaClassifierConfig(prefer_gpu=False, thresholds=NEVER_EMERGENCY)
    if model is not None:
        laya = replace(laya, model_path=model)
    quoted, hedge = sim.symbols[:-1], sim.symbols[-1]
    settings = Settings().with_overrides(
        {
            "engine.symbols": ",".join(quoted),
            "engine.hedge": hedge,
            "trading.strategy.emergency_cooldown_ms": 0,
            "trading.strategy.requote_threshold_bps": _RESTING_REQUOTE_BPS,
            "risk.max_mark_age_ms": 5_000,
        }
    )
    trading = settings.trading_config(
        contracts=simulator_contracts(settings), rest_url=sim.rest_url
    )
    instruments = trading.instruments
    if not quoting:
        # The reaction bench: no quote reaches a quoted symbol's minimum notional, so only the
        # bench's own order rests and each sample cancels exactly one known order.
        instruments = tuple(
            replace(instrument, min_notional=_UNREACHABLE_NOTIONAL)
            if instrument.symbol in quoted
            else instrument
            for instrument in instruments
        )
    trading = replace(
        trading,
        instruments=instruments,
        journal_path=journal,
        # The venue's table is not read again: it would give the quoted symbols back their
        # minimum notional in a long reaction bench.
        contract_check_interval_s=86_400.0,
    )
    return EngineConfig(symbols=sim.symbols, live_url=sim.ws_url, laya=laya, trading=trading)


@contextlib.asynccontextmanager
async def _engine_on(
    symbols: tuple[str, ...], model: str | Path | None, journal: Path, *, quoting: bool
) -> AsyncIterator[EngineNode]:
    """The simulated exchange serving the book `symbols` and the engine trading on it, warm;
    both stopped on the way out."""
    sim = SimProcess(symbols)
    await sim.start()
    try:
        node = EngineNode(_engine_config(sim, model, journal, quoting=quoting))
        try:
            await node.start()
            await _warm(node)
            yield node
        finally:
            await node.stop()
    finally:
        sim.stop()


async def _until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise BenchFailed(f"timed out waiting for {what}")
        await asyncio.sleep(0.001)


async def _warm(node: EngineNode) -> None:
    """Until numba has compiled and every symbol has a mark."""
    await _until(lambda: node.parser.stats.frames >= _WARMUP_FRAMES, 60, "market frames")
    desk = node.desk
    assert desk is not None
    await _until(
        lambda: all(p.mark_price > 0 for p in desk.gateway.snapshot().positions),
        10,
        "a mark on every symbol",
    )


def bench_books(book: int | None) -> dict[str, tuple[str, ...]]:
    """The books a bench runs, by name: "one", a quoted symbol and its hedge, and with `book`,
    "book", that many quoted symbols and the hedge (`book_symbols`: a one-line ValueError for a
    book the simulator cannot serve)."""
    books = {"one": book_symbols(1)}
    if book is not None:
        books["book"] = book_symbols(book)
    return books


def _grid(desk: TradingDesk, symbol: str) -> Grid:
    strategy = desk.strategies.get(symbol)
    if strategy is not None:
        return strategy.grid
    assert desk.hedger is not None
    return desk.hedger.grid


def _mark(desk: TradingDesk, symbol: str) -> float:
    executor = desk.executor
    executor.invalidate_risk_view()
    return next(p.mark_price for p in executor.risk_view().positions if p.symbol == symbol)


def _lots_worth(grid: Grid, mark: float, usdt: float) -> float:
    """Whole lots worth at least `usdt` at `mark`, one at least."""
    return grid.round_size(grid.lot * max(1, math.ceil(usdt / (mark * grid.lot))))


# Reaction

PATHS = ("lane", "client")


async def _one_reaction(node: EngineNode, symbol: str, into: LatencyHistogram) -> bool:
    """Rest one far-away bid under HOLD verdicts, then switch Laya's thresholds so the next
    frame's verdict is EMERGENCY; that cancel's reaction goes `into` the histogram (True), or
    the order went otherwise (False)."""
    desk = node.desk
    assert desk is not None
    node.classifier.thresholds = NEVER_EMERGENCY
    executor = desk.executor
    await _until(lambda: not executor.has_open_orders(), 5, "the previous order to go")
    mark = _mark(desk, symbol)
    grid = _grid(desk, symbol)
    intent = OrderIntent(
        symbol,
        OrderSide.BUY,
        _lots_worth(grid, mark, _BENCH_ORDER_USDT),
        grid.floor_price(mark * 0.995),
        OrderType.LIMIT,
        executor.new_client_oid(OrderRole.OPERATOR),
        Source.OPERATOR,
        TimeInForce.POST_ONLY,
        False,
        "bench: something to cancel",
    )
    if not executor.submit(intent, OrderRole.OPERATOR).approved:
        executor.drain_risk_events()
        return False
    order = executor.order(intent.client_oid)
    assert order is not None
    await _until(lambda: order.acknowledged or order.state.terminal, 5, "the ack")
    if order.cancel_requested or order.state.terminal:
        return False
    desk.reaction.reset()
    node.classifier.thresholds = ALWAYS_EMERGENCY
    await _until(
        lambda: desk.reaction.count > 0 or not executor.has_open_orders(),
        5,
        "the EMERGENCY cancel",
    )
    into.merge(desk.reaction)
    return desk.reaction.count > 0


async def _reaction_round(node: EngineNode, samples: int) -> dict[str, LatencyHistogram]:
    """`samples` reactions through each path, the lane first."""
    desk = node.desk
    assert desk is not None and isinstance(desk.venue, RestVenue)
    venue = desk.venue
    await _until(lambda: venue.lane is not None and venue.lane.ready, 10, "the lane")
    symbol = desk.config.quoted[0]
    for _ in range(5):  # warm-up samples, not counted
        await _one_reaction(node, symbol, LatencyHistogram())
    histograms = {}
    for path in PATHS:
        venue.lane_enabled = path == "lane"
        histogram = histograms[path] = LatencyHistogram()
        while histogram.count < samples:
            started = time.monotonic()
            await _one_reaction(node, symbol, histogram)
            await asyncio.sleep(max(0.0, _SAMPLE_PERIOD_S - time.monotonic() + started))
    return histograms


def _path_figures(path: str, rounds: list[LatencyHistogram]) -> PathFigures:
    pooled = LatencyHistogram()
    for histogram in rounds:
        pooled.merge(histogram)
    return PathFigures(
        path,
        pooled.count,
        pooled.percentile_ns(50) / 1e3,
        pooled.percentile_ns(99) / 1e3,
        pooled.max_ns / 1e3,
        tuple(histogram.percentile_ns(50) / 1e3 for histogram in rounds),
        tuple(histogram.percentile_ns(99) / 1e3 for histogram in rounds),
    )


async def bench_reaction(
    books: dict[str, tuple[str, ...]],
    samples: int = 60,
    runs: int = 3,
    model: str | Path | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, BookReaction]:
    """Reaction latency through the lane and through the REST client on each of `books`
    (`bench_books`), `runs` rounds of `samples` per path and book, the books in turn within a
    round; see the module docstring."""
    rounds: dict[str, dict[str, list[LatencyHistogram]]] = {
        name: {path: [] for path in PATHS} for name in books
    }
    with tempfile.TemporaryDirectory(prefix="hft-bench-") as directory:
        for run in range(runs):
            for name, symbols in books.items():
                journal = Path(directory) / f"{name}-{run + 1}.sqlite"
                async with _engine_on(symbols, model, journal, quoting=False) as node:
                    histograms = await _reaction_round(node, samples)
                for path, histogram in histograms.items():
                    rounds[name][path].append(histogram)
                    p50, p99 = histogram.percentile_ns(50) / 1e3, histogram.percentile_ns(99) / 1e3
                    report(
                        f"  run {run + 1} {_quoted_label(symbols):>3} quoted {path:>6}: "
                        f"p50 {p50:7.1f} us  p99 {p99:7.1f} us"
                    )
    return {
        name: BookReaction(symbols, *(_path_figures(path, rounds[name][path]) for path in PATHS))
        for name, symbols in books.items()
    }


def lane_p99_ratios(figures: dict[str, BookReaction]) -> tuple[float, tuple[float, ...]] | None:
    """The book's lane p99 over the one-symbol book's, pooled and round by round; None
    without a book."""
    if "book" not in figures:
        return None
    one, book = figures["one"].lane, figures["book"].lane
    return (
        book.p99_us / one.p99_us,
        tuple(b / o for b, o in zip(book.run_p99_us, one.run_p99_us, strict=True)),
    )


# Kill


def venue_holds(snapshot: VenueSnapshot) -> list[str]:
    """What the venue still holds: each position, and the open orders of each symbol."""
    held = [
        f"{p.symbol} {coin(p.symbol, p.size, signed=True)}" for p in snapshot.positions if p.size
    ]
    orders: dict[str, int] = {}
    for order in snapshot.orders:
        orders[order.symbol] = orders.get(order.symbol, 0) + 1
    held += [
        f"{count} order{'s' if count > 1 else ''} on {symbol}" for symbol, count in orders.items()
    ]
    return held


def _take(desk: TradingDesk, symbol: str) -> str | None:
    """An IOC taker `_TAKER_THROUGH` past the mark: a buy of a quoted symbol, a sale of the
    hedge (the book long, its hedge short, as the hedger would have it); its clientOid, or
    None where the gateway denied it (its pace, most often)."""
    executor = desk.executor
    mark = _mark(desk, symbol)
    grid = _grid(desk, symbol)
    if symbol == desk.config.hedge_symbol:
        side, price = OrderSide.SELL, grid.ceil_price(mark * (1 - _TAKER_THROUGH))
    else:
        side, price = OrderSide.BUY, grid.floor_price(mark * (1 + _TAKER_THROUGH))
    intent = OrderIntent(
        symbol,
        side,
        _lots_worth(grid, mark, _TAKER_USDT),
        price,
        OrderType.LIMIT,
        executor.new_client_oid(OrderRole.OPERATOR),
        Source.OPERATOR,
        TimeInForce.IOC,
        False,
        "bench: open a position",
    )
    if executor.submit(intent, OrderRole.OPERATOR).approved:
        return intent.client_oid
    executor.drain_risk_events()
    return None


def _engine_holds(desk: TradingDesk) -> tuple[set[str], set[str]]:
    """The symbols the engine holds a position on, and those it has an order open on."""
    positions = {p.symbol for p in desk.gateway.snapshot().positions if p.size}
    return positions, {order.symbol for order in desk.executor.open_orders()}


def _missing(
    desk: TradingDesk, positions: set[str], resting: set[str]
) -> tuple[list[str], list[str]]:
    """The book's symbols without a position, and its quoted ones without a resting order."""
    return (
        [symbol for symbol in desk.config.symbols if symbol not in positions],
        [symbol for symbol in desk.config.quoted if symbol not in resting],
    )


async def _open_risk(desk: TradingDesk) -> tuple[int, int]:
    """Until the engine holds a position on every symbol of the book, the hedge included, and
    a quote on every quoted one, as a running engine would, the venue having reported the same
    `_REST_WINDOW_S` before; takers go again where a position is missing. The number of
    symbols with a position and of quoted ones with an order open, as it returns."""
    executor = desk.executor
    deadline = time.monotonic() + _OPEN_RISK_TIMEOUT_S
    confirmed = False
    while True:
        positions, resting = _engine_holds(desk)
        flat, bare = _missing(desk, positions, resting)
        if not flat and not bare:
            if confirmed:
                return len(positions), len(resting.intersection(desk.config.quoted))
            snapshot = await desk.venue.snapshot()
            confirmed = not any(
                _missing(
                    desk,
                    {p.symbol for p in snapshot.positions if p.size},
                    {order.symbol for order in snapshot.orders},
                )
            )
            # The venue's request windows pass before the kill (or the next look): its own
            # confirmation must not wait on this one's rate limit.
            await asyncio.sleep(_REST_WINDOW_S)
            continue
        confirmed = False
        if time.monotonic() > deadline:
            missing = [f"no position on {', '.join(flat)}"] if flat else []
            missing += [f"no quote resting on {', '.join(bare)}"] if bare else []
            raise BenchFailed(f"{' and '.join(missing)} after {_OPEN_RISK_TIMEOUT_S:g} s of trying")
        placed = [oid for symbol in flat if (oid := _take(desk, symbol)) is not None]
        await _until(
            lambda placed=placed: all(executor.order(oid) is None for oid in placed),
            5,
            "the takers",
        )
        await asyncio.sleep(0.05)


class _KillRun(NamedTuple):
    elapsed_ms: float
    attempts: int
    positions: int
    """Symbols the venue held a position on when the kill was pressed."""
    quoted: int
    """... and a resting order on."""
    failure: str | None
    """What went wrong; None: confirmed flat on every symbol."""


async def _kill_round(
    node: EngineNode, runs: int, first: int, report: Callable[[str], None]
) -> list[_KillRun]:
    """`runs` kills, numbered from `first`."""
    desk = node.desk
    assert desk is not None
    label = _quoted_label(desk.config.symbols)
    outcomes = []
    for number in range(first, first + runs):
        positions, quoted = await _open_risk(desk)
        result = await node.execute(Command(Kill()))
        held = venue_holds(await desk.venue.snapshot())
        failure = None
        if not result.ok or held:
            failure = f"kill {number} ({label} quoted): {result.message}" + (
                f"; the venue still holds {', '.join(held)}" if held else ""
            )
        sequence = desk.last_sequence
        outcomes.append(
            _KillRun(
                result.elapsed_ms,
                sequence.attempts if sequence is not None else 0,
                positions,
                quoted,
                failure,
            )
        )
        report(
            f"  kill {number:2d} {label:>3} quoted: {result.elapsed_ms:6.1f} ms  "
            f"{result.message}{'' if failure is None else '  NOT CONFIRMED FLAT'}"
        )
        await asyncio.sleep(_KILL_SPACING_S)
        await node.execute(Command(Rearm(desk.gateway.config.rearm_confirmation)))
        await node.execute(Command(Resume()))
        await _until(lambda: desk.gateway.state is TradingState.ACTIVE, 5, "resume")
    return outcomes


async def bench_kill(
    books: dict[str, tuple[str, ...]],
    kill_runs: int = 20,
    runs: int = 3,
    model: str | Path | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, KillFigures]:
    """The kill switch `kill_runs` times on each of `books` (`bench_books`), in `runs` rounds
    that take the books in turn; see the module docstring."""
    outcomes: dict[str, list[_KillRun]] = {name: [] for name in books}
    with tempfile.TemporaryDirectory(prefix="hft-bench-") as directory:
        for run in range(runs):
            count = kill_runs // runs + (run < kill_runs % runs)
            if not count:
                continue
            for name, symbols in books.items():
                journal = Path(directory) / f"{name}-{run + 1}.sqlite"
                async with _engine_on(symbols, model, journal, quoting=True) as node:
                    first = len(outcomes[name]) + 1
                    outcomes[name] += await _kill_round(node, count, first, report)
    return {name: _kill_figures(books[name], outcomes[name]) for name in books}


def _kill_figures(symbols: tuple[str, ...], outcomes: list[_KillRun]) -> KillFigures:
    elapsed = tuple(run.elapsed_ms for run in outcomes)
    failures = tuple(run.failure for run in outcomes if run.failure is not None)
    ordered = sorted(elapsed)
    return KillFigures(
        symbols,
        len(outcomes),
        len(outcomes) - len(failures),
        min(run.positions for run in outcomes),
        min(run.quoted for run in outcomes),
        statistics.median(ordered),
        ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)],
        ordered[-1],
        max(run.attempts for run in outcomes),
        elapsed,
        failures,
    )


# The figures, for people


def _quoted_label(symbols: tuple[str, ...]) -> str:
    """A book by its number of quoted symbols (all but the hedge, the last)."""
    return str(len(symbols) - 1)


def _books_line(symbols_of: list[tuple[str, ...]]) -> str:
    return "; ".join(
        f"{_quoted_label(symbols)} quoted: {', '.join(symbols[:-1])}, hedge {symbols[-1]}"
        for symbols in symbols_of
    )


def format_reaction(figures: dict[str, BookReaction]) -> str:
    books = list(figures.values())
    lines = [
        "reaction: books15 receive -> EMERGENCY -> cancel-all bytes on the socket (sim, loopback)",
        f"  {_books_line([book.symbols for book in books])}",
        f"{'quoted':>6} {'path':>8} {'samples':>8} {'p50 us':>8} {'p99 us':>8} {'max us':>8}"
        f" {'median run p50':>15} {'median run p99':>15}",
    ]
    for book in books:
        for item in (book.lane, book.client):
            lines.append(
                f"{_quoted_label(book.symbols):>6} {item.path:>8} {item.samples:>8}"
                f" {item.p50_us:>8.1f} {item.p99_us:>8.1f} {item.max_us:>8.1f}"
                f" {item.median_p50_us:>15.1f} {item.median_p99_us:>15.1f}"
            )
    for book in books:
        lane, client = book.lane, book.client
        ratio = lane.p50_us / client.p50_us if client.p50_us else float("nan")
        verdict = (
            "meets"
            if lane.p50_us <= REACTION_TARGET_P50_US and lane.p99_us <= REACTION_TARGET_P99_US
            else "MISSES"
        )
        lines.append(
            f"{_quoted_label(book.symbols)} quoted: lane/client p50 ratio {ratio:.2f}; the lane "
            f"{verdict} the target (p50 <= {REACTION_TARGET_P50_US:g} us, "
            f"p99 <= {REACTION_TARGET_P99_US:g} us)"
        )
    ratios = lane_p99_ratios(figures)
    if ratios is not None:
        pooled, by_round = ratios
        verdict = "meets" if pooled <= REACTION_BOOK_RATIO_TARGET else "MISSES"
        lines.append(
            f"the book's lane p99 over one symbol's: x{pooled:.2f} (rounds "
            f"{', '.join(f'x{ratio:.2f}' for ratio in by_round)}); {verdict} the target "
            f"(<= {REACTION_BOOK_RATIO_TARGET:g})"
        )
    return "\n".join(lines)


def format_kill(figures: dict[str, KillFigures]) -> str:
    books = list(figures.values())
    lines = [
        "kill switch: command -> venue confirms no open orders and flat on every symbol "
        "(sim, loopback)",
        f"  {_books_line([book.symbols for book in books])}",
    ]
    for name, book in figures.items():
        target = KILL_TARGET_P99_MS if name == "one" else BOOK_KILL_TARGET_P99_MS
        verdict = "meets" if book.p99_ms <= target and book.ok == book.runs else "MISSES"
        lines.append(
            f"{_quoted_label(book.symbols)} quoted: runs {book.runs}, confirmed flat "
            f"{book.ok}, p50 {book.p50_ms:.1f} ms, p99 {book.p99_ms:.1f} ms, max "
            f"{book.max_ms:.1f} ms, most attempts {book.attempts_max}; {verdict} the target "
            f"(p99 <= {target:g} ms, every run confirmed flat); each kill pressed with "
            f"positions on {book.positions_at_kill} symbols and quotes on {book.quoted_at_kill} "
            "at least"
        )
        lines += [f"  {failure}" for failure in book.failures]
    return "\n".join(lines)
