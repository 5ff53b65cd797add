"""`hft-console bench --reaction` and `--kill`: the order path's two latency figures, measured
end to end against the simulated exchange on loopback.

The exchange runs in its own process (as a real one would be elsewhere); this process runs the
whole engine: `BitgetPublicFeed` -> parser -> `MarketPipeline` (book, features, the Laya model,
the decision) -> `TradingDesk` -> executor -> venue.

Reaction: from the receive of a books15 frame (`recv_ns`, stamped where the websocket frame is
read) that yields EMERGENCY to the cancel-all request's bytes being handed to the socket. Laya
runs the real model on every frame; only its decision thresholds are switched: HOLD while one
resting order is placed and acknowledged, then EMERGENCY for every verdict, so the next frame
cancels it. Samples are paced under Bitget's place-order limit. Two paths are timed, run by run
in turn so both see the same machine: the pre-connected cancel lane (`transport.write` on the
reaction's stack) and the REST client (aiohttp), stamped by aiohttp's chunk-sent hook just
before its write.

Kill: from the `kill` command to the venue confirming (its own REST: open orders, positions)
no open order and no position. Before each run the engine holds resting quotes and positions
on both symbols; runs are a little over a second apart (close-positions allows one a second).
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
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import aiohttp

from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.config import EngineConfig
from engine.latency import LatencyHistogram
from engine.laya.config import LayaClassifierConfig
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.node import EngineNode
from engine.risk.events import TradingState
from engine.risk.intents import OrderIntent, Source
from engine.sim.market import MarketGeneratorConfig
from engine.sim.server import SimExchangeConfig
from engine.trading.commands import Command, Kill, Rearm, Resume
from engine.trading.config import QuotingStrategyConfig, TradingConfig, default_risk_config
from engine.trading.desk import TradingDesk
from engine.trading.rest_venue import RestVenue
from engine.trading.tracked_order import OrderRole

REACTION_TARGET_P50_US = 300.0
REACTION_TARGET_P99_US = 600.0
KILL_TARGET_P99_MS = 50.0
ALWAYS_EMERGENCY = (1.0, 1.0, 1.0, 0.0)
"""Laya thresholds under which every verdict is EMERGENCY (the model still runs)."""
NEVER_EMERGENCY = (0.0, 1.0, 1.0, 1.0)
"""Thresholds under which every verdict is HOLD: the strategy quotes undisturbed."""
_SAMPLE_PERIOD_S = 0.13
"""Under 8 placements a second: the gateway's own pace and Bitget's 10/s place-order limit."""
_KILL_SPACING_S = 1.15
_WARMUP_FRAMES = 60
_SIM_BOOK_INTERVAL_MS = 20
_UNREACHABLE_NOTIONAL = 1e12
"""USDT: a minimum notional no quote reaches (the reaction bench quotes nothing)."""


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
class KillFigures:
    runs: int
    ok: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    attempts_max: int
    elapsed_ms: tuple[float, ...]


def python_loop_ns(iterations: int = 2_000_000) -> float:
    """Nanoseconds per iteration of a trivial Python loop: how fast this machine runs Python
    right now, to read the figures against (a busy VM host slows every figure alike)."""
    total = 0
    started = time.perf_counter_ns()
    for number in range(iterations):
        total += number
    return (time.perf_counter_ns() - started) / iterations


# The simulator, in a process of its own


def _serve_sim(port: int, seed: int) -> None:
    from engine.sim.standalone import run_standalone

    config = SimExchangeConfig(
        port=port,
        book_interval_ms=_SIM_BOOK_INTERVAL_MS,
        warmup_ms=3_000,
        market=MarketGeneratorConfig(seed=seed),
    )
    with open(os.devnull, "w") as quiet:
        run_standalone(config, [], status_interval_s=3_600, out=quiet)


class SimProcess:
    """The simulated exchange in a child process, on a free loopback port."""

    def __init__(self, seed: int = 7) -> None:
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
            f"_serve_sim({self.port}, {self._seed})"
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
                    raise RuntimeError("the simulated exchange did not start")
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
    laya = LayaClassifierConfig(prefer_gpu=False, thresholds=NEVER_EMERGENCY)
    if model is not None:
        laya = replace(laya, model_path=model)
    risk = replace(default_risk_config(), max_mark_age_ms=5_000)
    # Without quoting (the reaction bench), no quote reaches BTCUSDT's minimum notional: only
    # the bench's own order rests, so each sample cancels exactly one known order.
    unquoted = replace(BTCUSDT, min_notional=_UNREACHABLE_NOTIONAL)
    trading = TradingConfig(
        strategies=(QuotingStrategyConfig(emergency_cooldown_ms=0),),
        risk=risk,
        instruments=(BTCUSDT if quoting else unquoted, ETHUSDT),
        journal_path=journal,
        rest_url=sim.rest_url,
    )
    return EngineConfig(live_url=sim.ws_url, laya=laya, trading=trading)


async def _until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"bench: timed out waiting for {what}")
        await asyncio.sleep(0.001)


async def _warm(node: EngineNode) -> None:
    """Until numba has compiled and every symbol has marks."""
    await _until(lambda: node.parser.stats.frames >= _WARMUP_FRAMES, 60, "market frames")


# Reaction


async def _one_reaction(node: EngineNode, symbol: str, into: LatencyHistogram) -> bool:
    """Rest one far-away bid under HOLD verdicts, then switch Laya's thresholds so the next
    frame's verdict is EMERGENCY; that cancel's reaction goes `into` the histogram (True), or
    the order went otherwise (False)."""
    desk = node.desk
    assert desk is not None
    node.classifier.thresholds = NEVER_EMERGENCY
    executor = desk.executor
    await _until(lambda: not executor.has_open_orders(), 5, "the previous order to go")
    risk = executor.risk_view()
    mark = next(p.mark_price for p in risk.positions if p.symbol == symbol)
    grid = desk.strategies[symbol].grid
    intent = OrderIntent(
        symbol,
        OrderSide.BUY,
        grid.lot * max(1, math.ceil(6.0 / (mark * grid.lot))),
        grid.floor_price(mark * 0.995),
        OrderType.LIMIT,
        executor.new_client_oid(OrderRole.OPERATOR),
        Source.OPERATOR,
        TimeInForce.POST_ONLY,
        False,
        "bench: something to cancel",
    )
    executor.invalidate_risk_view()
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


async def bench_reaction(
    samples: int = 60,
    runs: int = 3,
    model: str | Path | None = None,
    report: Callable[[str], None] = print,
) -> dict[str, PathFigures]:
    """Reaction latency through the lane and through the REST client, `runs` alternating runs
    of `samples` each per path; see the module docstring."""
    sim = SimProcess()
    await sim.start()
    with tempfile.TemporaryDirectory(prefix="hft-bench-") as directory:
        config = _engine_config(sim, model, Path(directory) / "journal.sqlite", quoting=False)
        node = EngineNode(config)
        try:
            await node.start()
            await _warm(node)
            desk = node.desk
            assert desk is not None and isinstance(desk.venue, RestVenue)
            venue = desk.venue
            await _until(lambda: venue.lane is not None and venue.lane.ready, 10, "the lane")
            symbol = desk.config.quoted[0]
            pooled = {"lane": LatencyHistogram(), "client": LatencyHistogram()}
            per_run: dict[str, list[tuple[float, float]]] = {"lane": [], "client": []}
            for _ in range(5):  # warm-up samples, not counted
                await _one_reaction(node, symbol, LatencyHistogram())
            for run in range(runs):
                for path in ("lane", "client"):
                    venue.lane_enabled = path == "lane"
                    histogram = LatencyHistogram()
                    while histogram.count < samples:
                        started = time.monotonic()
                        await _one_reaction(node, symbol, histogram)
                        await asyncio.sleep(max(0.0, _SAMPLE_PERIOD_S - time.monotonic() + started))
                    pooled[path].merge(histogram)
                    p50, p99 = histogram.percentile_ns(50) / 1e3, histogram.percentile_ns(99) / 1e3
                    per_run[path].append((p50, p99))
                    report(f"  run {run + 1} {path:>6}: p50 {p50:7.1f} us  p99 {p99:7.1f} us")
            venue.lane_enabled = True
        finally:
            await node.stop()
            sim.stop()
    return {
        path: PathFigures(
            path,
            pooled[path].count,
            pooled[path].percentile_ns(50) / 1e3,
            pooled[path].percentile_ns(99) / 1e3,
            pooled[path].max_ns / 1e3,
            tuple(p50 for p50, _ in per_run[path]),
            tuple(p99 for _, p99 in per_run[path]),
        )
        for path in pooled
    }


# Kill


async def _open_risk(desk: TradingDesk) -> None:
    """Positions on both symbols and resting quotes, as a running engine would hold."""
    executor = desk.executor
    risk = executor.risk_view()
    marks = {p.symbol: p for p in risk.positions}
    takers = (
        ("BTCUSDT", OrderSide.BUY, 0.004, 1.0005),
        ("ETHUSDT", OrderSide.SELL, 0.06, 0.9995),
    )
    placed = []
    for symbol, side, size, factor in takers:
        mark = marks[symbol].mark_price
        grid = desk.strategies[symbol].grid if symbol == "BTCUSDT" else desk.hedger.grid
        price = (
            grid.floor_price(mark * factor)
            if side is OrderSide.BUY
            else grid.ceil_price(mark * factor)
        )
        intent = OrderIntent(
            symbol,
            side,
            size,
            price,
            OrderType.LIMIT,
            executor.new_client_oid(OrderRole.OPERATOR),
            Source.OPERATOR,
            TimeInForce.IOC,
            False,
            "bench: open a position",
        )
        if executor.submit(intent, OrderRole.OPERATOR).approved:
            placed.append(intent.client_oid)
    await _until(lambda: all(executor.order(oid) is None for oid in placed), 5, "the takers")
    await _until(lambda: executor.has_open_orders(), 5, "resting quotes")


async def bench_kill(
    runs: int = 20,
    model: str | Path | None = None,
    report: Callable[[str], None] = print,
) -> KillFigures:
    """The kill switch, `runs` times; see the module docstring."""
    sim = SimProcess()
    await sim.start()
    elapsed: list[float] = []
    attempts: list[int] = []
    ok = 0
    with tempfile.TemporaryDirectory(prefix="hft-bench-") as directory:
        config = _engine_config(sim, model, Path(directory) / "journal.sqlite", quoting=True)
        node = EngineNode(config)
        try:
            await node.start()
            await _warm(node)
            desk = node.desk
            assert desk is not None
            for run in range(runs):
                await _open_risk(desk)
                result = await node.execute(Command(Kill()))
                snapshot = await desk.venue.snapshot()
                flat = not snapshot.orders and not any(p.size for p in snapshot.positions)
                ok += result.ok and flat
                elapsed.append(result.elapsed_ms)
                sequence = desk.last_sequence
                attempts.append(sequence.attempts if sequence is not None else 0)
                report(f"  kill {run + 1:2d}: {result.elapsed_ms:6.1f} ms  {result.message}")
                await asyncio.sleep(_KILL_SPACING_S)
                await node.execute(Command(Rearm(desk.gateway.config.rearm_confirmation)))
                await node.execute(Command(Resume()))
                await _until(lambda: desk.gateway.state is TradingState.ACTIVE, 5, "resume")
        finally:
            await node.stop()
            sim.stop()
    ordered = sorted(elapsed)
    return KillFigures(
        runs,
        ok,
        statistics.median(ordered),
        ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)],
        ordered[-1],
        max(attempts, default=0),
        tuple(elapsed),
    )


def format_reaction(figures: dict[str, PathFigures]) -> str:
    lane, client = figures["lane"], figures["client"]
    lines = [
        "reaction: books15 receive -> EMERGENCY -> cancel-all bytes on the socket (sim, loopback)",
        f"{'path':>8} {'samples':>8} {'p50 us':>8} {'p99 us':>8} {'max us':>8}"
        f" {'median run p50':>15} {'median run p99':>15}",
    ]
    for item in (lane, client):
        lines.append(
            f"{item.path:>8} {item.samples:>8} {item.p50_us:>8.1f} {item.p99_us:>8.1f}"
            f" {item.max_us:>8.1f} {item.median_p50_us:>15.1f} {item.median_p99_us:>15.1f}"
        )
    ratio = lane.p50_us / client.p50_us if client.p50_us else float("nan")
    verdict = (
        "meets"
        if lane.p50_us <= REACTION_TARGET_P50_US and lane.p99_us <= REACTION_TARGET_P99_US
        else "MISSES"
    )
    lines.append(
        f"lane/client p50 ratio {ratio:.2f}; the lane {verdict} the target "
        f"(p50 <= {REACTION_TARGET_P50_US:g} us, p99 <= {REACTION_TARGET_P99_US:g} us)"
    )
    return "\n".join(lines)


def format_kill(figures: KillFigures) -> str:
    verdict = "meets" if figures.p99_ms <= KILL_TARGET_P99_MS else "MISSES"
    return "\n".join(
        (
            "kill switch: command -> venue confirms no open orders and flat (sim, loopback)",
            f"runs {figures.runs}, confirmed flat {figures.ok}, p50 {figures.p50_ms:.1f} ms, "
            f"p99 {figures.p99_ms:.1f} ms, max {figures.max_ms:.1f} ms, "
            f"most attempts {figures.attempts_max}",
            f"{verdict} the target (p99 <= {KILL_TARGET_P99_MS:g} ms)",
        )
    )
