"""The fast path, timed while Kev is busy and while it is idle.

One event loop runs both: a MarketPipeline fed frames of the simulated market (parse -> book ->
features -> Laya -> decision, and for a non-HOLD verdict the snapshot and `KevHub.offer`, timed
frame by frame) and a KevHub consulting a real llama-server. The recording is cut into short
rounds that alternate between Kev busy (a request in flight, the server computing, replies
arriving and being judged) and Kev idle (the server frozen with SIGSTOP, so that it stops at
once; cancelling a request does not stop llama-server mid-prompt). Such fine interleaving makes
both kinds of round sample the same moments of a noisy shared VM. The book frames' p99 is taken
per round and compared as the median over the 50 rounds of each kind (the p99 of all of a
kind's frames together is printed too: a single burst of the VM's neighbours moves it more).
The ratio against its target (MAX_P99_RATIO) is printed, not asserted: speed targets are judged
from figures on a quiet machine, never by a timed test on a shared one.

llama-server runs on one thread at the lowest CPU priority, as on a CPU-only box that it shares
with the engine (on a GPU box it hardly uses the CPU at all). Under autogroup scheduling that
takes lowering its session's priority, which the launcher does; without it, the server's
session gets an equal share of the CPU and the engine's p99 grows tenfold on this VM.
"""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time

import pytest
from support.kev import make_gateway, tiny_llama_server

from engine.config import MarketPipelineConfig
from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import iter_recording
from engine.kev.client import KevClient
from engine.kev.command import KevCommandSpec
from engine.kev.config import KevClientConfig, KevHubConfig
from engine.kev.context import snapshot_of
from engine.kev.hub import KevHub
from engine.laya.classifier import LayaClassifier
from engine.laya.config import LayaClassifierConfig
from engine.laya.decide import QuoteIntent
from engine.pipeline import MarketPipeline
from engine.sim.market import MarketGeneratorConfig
from engine.sim.recording import simulate_recording

SYMBOLS = ("BTCUSDT", "ETHUSDT")
PASSES = 10
ROUNDS_PER_PASS = 10
FRAMES_PER_YIELD = 20
MAX_P99_RATIO = 1.2
PROBABILITIES = [0.1, 0.2, 0.2, 0.5]
"""Stand-in class probabilities for the snapshots: the pipeline does not expose its row, and
what Kev is told does not change what the fast path costs."""


def p99(samples: list[int]) -> float:
    ordered = sorted(samples)
    return ordered[int(0.99 * len(ordered))] / 1e3


@pytest.fixture(scope="module")
def frames(tmp_path_factory):
    folder = tmp_path_factory.mktemp("kev-fast-path")
    market = MarketGeneratorConfig(burst_rate_per_min=3.0)
    recording = simulate_recording(folder / "market.gz", 2.0, seed=5, market=market)
    return list(iter_recording(recording.path))


@pytest.fixture(scope="module")
def niced_server(tmp_path_factory):
    """The tiny model on one thread at the lowest CPU priority: how llama-server is run on a
    CPU-only box that it shares with the engine (`hft-console kev serve --nice 19`)."""
    server = tiny_llama_server(
        tmp_path_factory.mktemp("niced-llama-server"),
        niceness=19,
        stop_timeout_s=2,  # it may be mid-request at the lowest priority: no need to wait
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def classifier(laya_model):
    laya = LayaClassifier(LayaClassifierConfig(model_path=laya_model, prefer_gpu=False))
    laya.start()
    return laya


class Rounds:
    """Book-frame times per kind of round, and how often a request really was in flight."""

    def __init__(self) -> None:
        self.samples: dict[bool, list[int]] = {False: [], True: []}
        self.round_p99: dict[bool, list[float]] = {False: [], True: []}
        self.busy_checks = 0
        self.busy_in_flight = 0


async def run_pass(frames, classifier, hub: KevHub, server_pid: int, first_busy: bool, rounds):
    """One pass over the recording through a fresh pipeline, in alternating rounds."""
    parser = FrameParser(SYMBOLS)
    pipeline = MarketPipeline(MarketPipelineConfig(symbols=SYMBOLS), parser.tape, classifier)
    intents = pipeline.intents
    books = pipeline.books
    clock = time.perf_counter_ns
    size = len(frames) // ROUNDS_PER_PASS
    for number in range(ROUNDS_PER_PASS):
        busy = (number % 2 == 0) == first_busy
        os.kill(server_pid, signal.SIGCONT if busy else signal.SIGSTOP)
        round_ns: list[int] = []
        for index, (recv_ns, raw) in enumerate(frames[number * size : (number + 1) * size]):
            started = clock()
            event = parser.parse(raw, recv_ns)
            if event is not None:
                pipeline.on_market(event)
                if type(event) is BookSnapshot:
                    symbol = event.symbol
                    intent = intents[symbol]
                    if intent is not QuoteIntent.KEEP_QUOTING:
                        snapshot = snapshot_of(
                            symbol,
                            event.exchange_ts_ms,
                            int(intent),  # an intent's value is its verdict's
                            PROBABILITIES,
                            books[symbol].mid(),
                            pipeline.features.features,
                        )
                        if busy:
                            hub.offer(snapshot)
            elapsed = clock() - started
            if type(event) is BookSnapshot:
                round_ns.append(elapsed)
            if index % FRAMES_PER_YIELD == 0:
                if busy:
                    rounds.busy_checks += 1
                    rounds.busy_in_flight += hub.status().in_flight > 0
                await asyncio.sleep(0)
        rounds.samples[busy].extend(round_ns)
        rounds.round_p99[busy].append(p99(round_ns))


async def test_the_fast_path_is_timed_while_kev_is_busy_and_while_idle(
    niced_server, frames, classifier
):
    # Requests and probes outlast any idle round (tens of ms), so freezing the server never
    # fails one: Kev stays online throughout.
    config = KevClientConfig(
        base_url=niced_server.url, request_timeout_s=300.0, probe_timeout_s=5.0
    )
    rounds = Rounds()
    async with KevClient(config, KevCommandSpec()) as client:
        hub = KevHub(KevHubConfig(), client, make_gateway())
        await hub.start()
        try:
            async with asyncio.timeout(120):  # the warm-up first: a cold cache, a niced server
                while hub.status().state != "online":
                    await asyncio.sleep(0.02)
            await run_pass(frames, classifier, hub, niced_server.pid, True, Rounds())  # warm-up
            for number in range(PASSES):
                await run_pass(frames, classifier, hub, niced_server.pid, number % 2 == 0, rounds)
        finally:
            os.kill(niced_server.pid, signal.SIGCONT)
            await hub.stop()
    pooled = p99(rounds.samples[True]) / p99(rounds.samples[False])
    medians = statistics.median(rounds.round_p99[True]) / statistics.median(rounds.round_p99[False])
    print(
        f"\nbook frames: {len(rounds.samples[False])} idle, {len(rounds.samples[True])} busy; "
        f"p99 idle {p99(rounds.samples[False]):.1f} us, busy {p99(rounds.samples[True]):.1f} us, "
        f"ratio {pooled:.3f}; median of round p99s: ratio {medians:.3f}; "
        f"request in flight at {rounds.busy_in_flight}/{rounds.busy_checks} busy checks; "
        f"decisions {sum(hub.status().outcomes.values())}"
    )
    print(f"target: median round p99 busy / idle <= {MAX_P99_RATIO}")
    assert rounds.busy_in_flight / rounds.busy_checks > 0.9  # Kev really was busy
    assert (
        len(rounds.round_p99[True]) == len(rounds.round_p99[False]) == PASSES * ROUNDS_PER_PASS // 2
    )
    assert medians > 0 and pooled > 0
