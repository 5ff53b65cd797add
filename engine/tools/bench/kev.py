"""`hft-console kev bench`: what Kev costs the fast path, and how fast and short its answers are.

1. Enqueue: `KevHub.offer` timed call by call, on its two paths: a symbol already waiting
   (coalesced, the steady state of a burst) and a full queue where every offer evicts (the
   slowest path); and `snapshot_of`, the fast path's cost of building what it offers.
2. Decisions: a real hub, client, llama-server and risk gateway. Contexts come from the
   simulated market through Laya's own features and classifier (the non-HOLD verdicts), with
   the pair's hedge analytics fed along the way and positions on both symbols. One request at a
   time; before each the operator restores the gateway (ACTIVE, full risk), so every command
   meets the same starting point. The first `WARMUP_DECISIONS` fill the prompt cache and are
   not counted.
Figures: offer p50/p99/max in us; decision round trip p50/p90/max in ms; prompt tokens taken
from the cache; output tokens; outcomes; three sample decisions with the raw JSON.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import iter_recording
from engine.kev.client import KevClient
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig, LlamaServerConfig
from engine.kev.context import snapshot_of
from engine.kev.hedge import HedgeAnalytics, HedgeAnalyticsConfig
from engine.kev.hub import KevDecision, KevHub, KevLink
from engine.kev.model_fetch import tiny_model_path
from engine.kev.queue import KevQueueOverflow, KevSnapshot
from engine.kev.server import LlamaServerProcess, free_port
from engine.latency import LatencyHistogram, timer_cost_ns
from engine.laya.classifier import LayaClassifier, choose_verdict
from engine.laya.config import LayaClassifierConfig
from engine.laya.feature_set import FEATURE_COUNT
from engine.laya.verdict import Verdict
from engine.pipeline import book_shelf, feature_extractor
from engine.risk.commands import KevAction
from engine.risk.gateway import RiskGateway
from engine.risk.limits import OverrideBounds, RiskGatewayConfig, RiskLimits, SymbolLimits
from engine.risk.overrides import RiskOverrides
from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording

TRADED = "BTCUSDT"
HEDGE = "ETHUSDT"
WARMUP_DECISIONS = 2
TARGET_OFFER_P99_US = 2.0
TARGET_DECISION_P50_MS = 600.0
TARGET_OUTPUT_TOKENS_P50 = 64
SAMPLE_DECISIONS = 3


class MarketContext(NamedTuple):
    """A non-HOLD verdict's snapshot and both symbols' touch (bid, ask) at that moment."""

    snapshot: KevSnapshot
    touches: dict[str, tuple[float, float]]


def market_contexts(
    minutes: float = 2.0, seed: int = 3, laya: LayaClassifierConfig | None = None
) -> tuple[list[MarketContext], HedgeAnalytics]:
    """Non-HOLD verdicts of the simulated market (with informed bursts), through the same
    parser, features and classifier as the live path, and the pair's analytics over the run."""
    classifier = LayaClassifier(laya or LayaClassifierConfig(prefer_gpu=False))
    classifier.start()
    symbols = (TRADED, HEDGE)
    parser = FrameParser(symbols)
    extractor = feature_extractor(symbols, parser.tape)
    books = book_shelf(symbols)
    hedge = HedgeAnalytics(HedgeAnalyticsConfig())
    contexts: list[MarketContext] = []
    with tempfile.TemporaryDirectory(prefix="kev-bench-") as folder:
        recording = simulate_recording(
            Path(folder) / "market.gz",
            minutes,
            seed,
            market=MarketGeneratorConfig(burst_rate_per_min=3.0),
        )
        for recv_ns, raw in iter_recording(recording.path):
            event = parser.parse(raw, recv_ns)
            if type(event) is not BookSnapshot:
                continue
            books[event.symbol].apply(event)
            if books[TRADED].ready and books[HEDGE].ready:
                hedge.on_mids(event.exchange_ts_ms, books[TRADED].mid(), books[HEDGE].mid())
            features = extractor.on_book(event)
            if features is None:
                continue
            probabilities = classifier.infer(features).tolist()[0]
            verdict = choose_verdict(probabilities, classifier.thresholds)
            if verdict is Verdict.HOLD or not books[HEDGE].ready or not books[TRADED].ready:
                continue
            touches = {}
            for symbol, book in books.items():
                bid, _, ask, _ = book.best()
                touches[symbol] = (bid, ask)
            snapshot = snapshot_of(
                event.symbol,
                event.exchange_ts_ms,
                int(verdict),
                probabilities,
                books[event.symbol].mid(),
                features,
            )
            contexts.append(MarketContext(snapshot, touches))
    return contexts, hedge


def bench_gateway_config() -> RiskGatewayConfig:
    """BTCUSDT traded and ETHUSDT as its hedge, with limits of a small desk."""
    limits = RiskLimits(
        symbols=(
            SymbolLimits(TRADED, max_position=0.5, max_notional=40_000, max_order_size=0.05),
            SymbolLimits(HEDGE, max_position=10.0, max_notional=40_000, max_order_size=1.0),
        ),
        max_net_delta=20_000,
        daily_loss_soft=400,
        daily_loss_hard=800,
    )
    bounds = OverrideBounds({TRADED: 1.0, HEDGE: 20.0}, 40_000, 20, 10, 400)
    return RiskGatewayConfig(
        limits, bounds, hedge_symbol=HEDGE, hedge_ratio=0.8, hedge_ratio_band=(0.5, 1.0)
    )


def _percentiles_us(histogram: LatencyHistogram, timer_ns: int) -> dict[str, float]:
    return {
        "p50": max(histogram.percentile_ns(50) - timer_ns, 0.0) / 1e3,
        "p99": max(histogram.percentile_ns(99) - timer_ns, 0.0) / 1e3,
        "max": max(histogram.max_ns - timer_ns, 0) / 1e3,
    }


def time_offers(snapshots: list[KevSnapshot], offers: int) -> dict[str, dict[str, float]]:
    """`offer` on a hub that is not consuming (nothing else runs): coalescing into waiting
    symbols, then a full queue where every offer is a new symbol that evicts the oldest."""
    timer_ns = timer_cost_ns()
    clock = time.perf_counter_ns
    spec = KevCommandSpec()
    gateway = RiskGateway(bench_gateway_config())
    figures: dict[str, dict[str, float]] = {}

    coalescing = KevHub(KevHubConfig(), KevClient(KevClientConfig(), spec), gateway)
    histogram = LatencyHistogram()
    count = len(snapshots)
    for k in range(offers):
        snapshot = snapshots[k % count]
        started = clock()
        coalescing.offer(snapshot)
        histogram.record(clock() - started)
    figures["coalesce"] = _percentiles_us(histogram, timer_ns)

    capacity = 8
    evicting = KevHub(
        KevHubConfig(queue_capacity=capacity, overflow=KevQueueOverflow.DROP_OLDEST),
        KevClient(KevClientConfig(), spec),
        gateway,
    )
    renamed = [
        snapshots[k % count]._replace(symbol=f"SYM{k}USDT", verdict=int(Verdict.LEAN_BUY))
        for k in range(capacity + 1)
    ]
    histogram = LatencyHistogram()
    for k in range(offers):
        snapshot = renamed[k % (capacity + 1)]
        started = clock()
        evicting.offer(snapshot)
        histogram.record(clock() - started)
    figures["full_queue_evict"] = _percentiles_us(histogram, timer_ns)
    return figures


def time_snapshot_build(offers: int) -> dict[str, float]:
    """`snapshot_of` from a (1, 128) feature row, as the fast path would call it."""
    timer_ns = timer_cost_ns()
    clock = time.perf_counter_ns
    features = np.linspace(-1, 1, FEATURE_COUNT, dtype=np.float32).reshape(1, -1)
    probabilities = [0.1, 0.2, 0.3, 0.4]
    histogram = LatencyHistogram()
    for k in range(offers):
        started = clock()
        snapshot_of(TRADED, k, 3, probabilities, 60_000.5, features)
        histogram.record(clock() - started)
    return _percentiles_us(histogram, timer_ns)


def _prepare(gateway: RiskGateway, context: MarketContext, now_ns: int) -> None:
    """The reset before each request: the operator's (ACTIVE, full risk), Kev's hedge ratio
    back as configured through Kev's one way in, fresh marks, a long BTC position hedged by a
    short ETH one."""
    gateway.resume(now_ns)
    gateway.set_limits(RiskOverrides(risk_scale=1.0), now_ns)
    gateway.apply_kev_command(KevAction.HOLD, None, gateway.config.hedge_ratio, now_ns)
    for symbol, (bid, ask) in context.touches.items():
        mid = 0.5 * (bid + ask)
        gateway.on_mark(symbol, mid, mid, bid, ask, now_ns)
    traded_mid = sum(context.touches[TRADED]) / 2
    hedge_mid = sum(context.touches[HEDGE]) / 2
    gateway.on_position_sync(TRADED, 0.2, traded_mid * 0.999, now_ns)
    gateway.on_position_sync(HEDGE, -0.2 * traded_mid / hedge_mid, hedge_mid * 1.001, now_ns)
    gateway.drain_events()


async def run_decisions(
    url: str,
    contexts: list[MarketContext],
    hedge: HedgeAnalytics,
    requests: int,
    client_config: KevClientConfig | None = None,
) -> tuple[list[KevDecision], dict[str, object]]:
    """`requests` decisions (after the warm-up) one at a time; the decisions and the server's
    model and build."""
    gateway_config = bench_gateway_config()
    gateway = RiskGateway(gateway_config)
    spec = KevCommandSpec().for_gateway(gateway_config)
    config = client_config or KevClientConfig(base_url=url, request_timeout_s=10.0)
    decisions: list[KevDecision] = []
    async with KevClient(config, spec) as client:
        props = await client.props()
        hub_config = KevHubConfig(health_interval_s=0.5)
        hub = KevHub(hub_config, client, gateway, hedge={TRADED: hedge})
        await hub.start()
        try:
            await _online(hub, (hub_config.warmup_timeout_s or 0) + 30)
            for k in range(WARMUP_DECISIONS + requests):
                context = contexts[k % len(contexts)]
                _prepare(gateway, context, time.time_ns())
                before = sum(hub.status().outcomes.values())
                if not hub.offer(context.snapshot):
                    raise RuntimeError("the bench's offer was dropped")
                async with asyncio.timeout(config.request_timeout_s + 30):
                    while sum(hub.status().outcomes.values()) == before:
                        await asyncio.sleep(0.002)
                if k >= WARMUP_DECISIONS:
                    decisions.append(hub.decisions(1)[0])
        finally:
            await hub.stop()
    server = {"model": props.model if props else "", "build": props.build if props else ""}
    return decisions, server


async def _online(hub: KevHub, timeout_s: float) -> None:
    """Wait for the hub to be online: it warms the server's prompt cache first, for up to its
    warm-up limit, longer than a decision may take on a busy CPU."""
    try:
        async with asyncio.timeout(timeout_s):
            while hub.status().state != KevLink.ONLINE.value:
                await asyncio.sleep(0.01)
    except TimeoutError:
        status = hub.status()
        raise RuntimeError(
            f"Kev is not online after {timeout_s:g} s: {status.state}, {status.detail}"
        ) from None


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {"p50": float("nan"), "p90": float("nan"), "max": float("nan")}
    return {
        "p50": statistics.median(ordered),
        "p90": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "max": ordered[-1],
    }


def _sample(decision: KevDecision) -> dict[str, object]:
    return {
        "symbol": decision.symbol,
        "verdict": decision.verdict,
        "raw": decision.raw,
        "outcome": decision.outcome.value,
        "reason": decision.reason,
        "wall_ms": round(decision.wall_ms, 1),
        "output_tokens": decision.timings.predicted_n if decision.timings else None,
    }


def _samples(decisions: list[KevDecision]) -> list[dict[str, object]]:
    """Up to three decisions, of different outcomes where the run had them."""
    chosen: list[KevDecision] = []
    for decision in decisions:
        if decision.outcome not in {d.outcome for d in chosen}:
            chosen.append(decision)
    for decision in decisions:
        if len(chosen) >= SAMPLE_DECISIONS:
            break
        if decision not in chosen:
            chosen.append(decision)
    return [_sample(decision) for decision in chosen[:SAMPLE_DECISIONS]]


def run_kev_bench(
    url: str | None = None,
    *,
    model: str | None = None,
    binary: str | None = None,
    threads: int = 1,
    requests: int = 30,
    offers: int = 200_000,
    minutes: float = 2.0,
    laya: LayaClassifierConfig | None = None,
) -> dict[str, object]:
    """The whole Kev bench. Without `url`, llama-server is started for it with `model` (the
    tiny one by default) on `threads` threads and stopped after. One thread by default: on a
    2-core box the other core is the engine's, and llama.cpp's threads wait on each other
    whenever a neighbour takes a core (on the development VM a second thread made prompt
    evaluation slower, 45 instead of 65 tokens/s)."""
    contexts, hedge = market_contexts(minutes, laya=laya)
    if not contexts:
        raise RuntimeError("the simulated market gave Laya no non-HOLD verdict to ask Kev about")
    snapshots = [context.snapshot for context in contexts]
    result: dict[str, object] = {
        "contexts": len(contexts),
        "enqueue_us": time_offers(snapshots, offers),
        "snapshot_build_us": time_snapshot_build(min(offers, 100_000)),
    }
    server: LlamaServerProcess | None = None
    if url is None:
        model_path = model or str(tiny_model_path())
        with tempfile.TemporaryDirectory(prefix="kev-bench-server-") as folder:
            server = LlamaServerProcess(
                LlamaServerConfig(
                    model=model_path,
                    binary=binary,
                    port=free_port(),
                    threads=threads,
                    pid_path=str(Path(folder) / "llama-server.pid"),
                    log_path=str(Path(folder) / "llama-server.log"),
                )
            )
            server.start()
            try:
                decisions, props = asyncio.run(run_decisions(server.url, contexts, hedge, requests))
            finally:
                server.stop()
        url = server.url
    else:
        decisions, props = asyncio.run(run_decisions(url, contexts, hedge, requests))
    timings = [d.timings for d in decisions if d.timings is not None]
    outcomes: dict[str, int] = {}
    for decision in decisions:
        outcomes[decision.outcome.value] = outcomes.get(decision.outcome.value, 0) + 1
    result.update(
        {
            "server": {"url": url, "started_by_bench": server is not None, **props},
            "decisions": len(decisions),
            "decision_ms": _summary([d.wall_ms for d in decisions]),
            "prompt_ms": _summary([t.prompt_ms for t in timings]),
            "predicted_ms": _summary([t.predicted_ms for t in timings]),
            "prompt_tokens_evaluated": _summary([float(t.prompt_n) for t in timings]),
            "prompt_tokens_cached": _summary([float(t.cache_n) for t in timings]),
            "cache_hit_share": (
                sum(1 for t in timings if t.cache_n > 0) / len(timings) if timings else 0.0
            ),
            "output_tokens": _summary([float(t.predicted_n) for t in timings]),
            "outcomes": outcomes,
            "samples": _samples(decisions),
        }
    )
    return result


def format_kev_bench(result: dict[str, object]) -> str:
    enqueue = result["enqueue_us"]
    build = result["snapshot_build_us"]
    decision = result["decision_ms"]
    tokens = result["output_tokens"]
    server = result["server"]

    def mark(ok: bool) -> str:
        return "ok" if ok else "MISSED"

    lines = [
        f"Kev bench: {result['contexts']} market contexts, {result['decisions']} decisions "
        f"against {server['model'] or '?'} at {server['url']}",
        "",
        f"{'figure':<34}{'p50':>10}{'p99/p90':>10}{'max':>10}  target",
    ]
    for path, figures in enqueue.items():
        lines.append(
            f"{'offer, ' + path + ' (us)':<34}{figures['p50']:>10.2f}{figures['p99']:>10.2f}"
            f"{figures['max']:>10.1f}  p99 <= {TARGET_OFFER_P99_US:g} "
            f"{mark(figures['p99'] <= TARGET_OFFER_P99_US)}"
        )
    lines.append(
        f"{'snapshot_of (us)':<34}{build['p50']:>10.2f}{build['p99']:>10.2f}{build['max']:>10.1f}"
    )
    lines.append(
        f"{'decision round trip (ms)':<34}{decision['p50']:>10.0f}{decision['p90']:>10.0f}"
        f"{decision['max']:>10.0f}  p50 <= {TARGET_DECISION_P50_MS:g} "
        f"{mark(decision['p50'] <= TARGET_DECISION_P50_MS)}"
    )
    for key, label in (
        ("prompt_ms", "prompt eval (ms)"),
        ("predicted_ms", "generation (ms)"),
        ("prompt_tokens_evaluated", "prompt tokens evaluated"),
        ("prompt_tokens_cached", "prompt tokens from cache"),
    ):
        figures = result[key]
        lines.append(
            f"{label:<34}{figures['p50']:>10.0f}{figures['p90']:>10.0f}{figures['max']:>10.0f}"
        )
    lines.append(
        f"{'output tokens':<34}{tokens['p50']:>10.0f}{tokens['p90']:>10.0f}{tokens['max']:>10.0f}"
        f"  p50 <= {TARGET_OUTPUT_TOKENS_P50} {mark(tokens['p50'] <= TARGET_OUTPUT_TOKENS_P50)}"
    )
    lines.append(f"{'cache hits':<34}{result['cache_hit_share']:>10.0%}")
    lines.append(
        "outcomes: " + ", ".join(f"{name} {count}" for name, count in result["outcomes"].items())
    )
    lines.append("")
    lines.append("sample decisions:")
    for sample in result["samples"]:
        # The model's raw text, newlines dropped (`why` cannot hold one).
        raw = sample["raw"].replace("\n", "")
        lines.append(
            f"  {sample['symbol']} {sample['verdict']}: {raw}\n"
            f"    -> {sample['outcome']}: {sample['reason']} "
            f"({sample['wall_ms']} ms, {sample['output_tokens']} tokens)"
        )
    return "\n".join(lines)
