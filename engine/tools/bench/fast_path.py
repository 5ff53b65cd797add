"""`hft-console bench`: the whole fast path, headless, over a recording, as fast as it goes.

Per books15 frame: parse -> book -> features -> infer -> decide (the live `MarketPipeline`,
with its own stage timers); per trade frame: parse and dispatch (`trade`). Frames are loaded
into memory first so disk and gzip stay out of the figures. Untimed warm-up passes compile the
numba kernels and let a virtual CPU settle (the first second of a process runs measurably
slower on the development VM); then timed passes, figures from the median one. A clock read
costs 0.05-0.3 us on that VM, as much as a stage: its median cost is measured and taken out of
every sample once (the clock reads inside `total` stay in: the live path pays them too).
A steady-state pass over at least `memory_frames` frames (the recording repeated with its
times and trade ids shifted forward) reports resident-memory growth. Last, always, the order
path's hot spot: `RiskGateway.check` (`engine.tools.bench.risk`), under a second per run.

`run_book_bench` (`bench --book N`) times the same path on the simulator's book with one quoted
symbol and with N, and their hedge: a frame's cost must not grow with the book.
"""

from __future__ import annotations

import re
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path

from engine.config import MarketPipelineConfig
from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser, ParseStats
from engine.feed.recording import RecordingReadStats, iter_recording
from engine.latency import LatencyHistogram, timer_cost_ns
from engine.laya.classifier import LayaClassifier, laya_runs_on
from engine.laya.config import LayaClassifierConfig
from engine.laya.scorecard import ScorecardQueue
from engine.pipeline import TIMED_STAGES, MarketPipeline, feature_extractor
from engine.sim.contracts import sim_instruments
from engine.sim.market import DEFAULT_HEDGE, sim_book
from engine.sim.recording import simulate_recording
from engine.tools.bench.risk import benchmark_check

WARMUP_PASSES = 2
DRAINED_BOOKS = 64
"""Books the scorecard's queue holds in the bench before the timed pass drains it between two
frames: the engine drains it each market second (`LayaScorecardConfig.drain_every_s`), some
20 books of two symbols at 100 ms."""
RISK_CHECK_TARGET_P50_US = 3.0
BOOK_RATIO_TARGET = 1.10
"""A frame's p50 and p99 with N quoted symbols over those with one (issue 30's benchmark)."""

Frames = list[tuple[int, bytes]]


def load_frames(
    path: str | Path, limit: int | None = None, stats: RecordingReadStats | None = None
) -> Frames:
    """The recording's frames (the first `limit`); raises RecordingUnreadable when it holds
    none, and `stats` says what else was wrong with it."""
    stats = stats if stats is not None else RecordingReadStats()
    frames = iter_recording(path, stats)
    loaded = list(islice(frames, limit) if limit else frames)
    problem = stats.problem(path)
    if problem is not None:
        problem.raise_if_unreadable()
    return loaded


def _symbols(frames: Frames) -> tuple[str, ...]:
    parser = FrameParser()
    seen: dict[str, None] = {}
    for recv_ns, raw in frames:
        symbol = getattr(parser.parse(raw, recv_ns), "symbol", None)
        if symbol is not None:
            seen.setdefault(symbol)
    return tuple(seen) or ("BTCUSDT",)


class _Bench:
    """The fast path over `frames`, on `symbols` (None: every one the frames have) with their
    cross features reading `leader` (None: `feature_extractor`'s)."""

    def __init__(
        self,
        frames: Frames,
        classifier: LayaClassifier,
        clock: Callable[[], int],
        symbols: tuple[str, ...] | None = None,
        leader: str | None = None,
    ):
        self.frames = frames
        self.symbols = symbols or _symbols(frames)
        self.leader = leader
        self.classifier = classifier
        self.clock = clock

    def fresh(self) -> tuple[FrameParser, MarketPipeline, ScorecardQueue]:
        """A pipeline as the engine's: its books go to a scorecard's queue too, as small as
        what the engine's scorer finds at a drain (its work is off the path)."""
        parser = FrameParser(self.symbols)
        features = feature_extractor(self.symbols, parser.tape, self.leader)
        scores = ScorecardQueue(DRAINED_BOOKS, features)
        pipeline = MarketPipeline(
            MarketPipelineConfig(symbols=self.symbols),
            parser.tape,
            self.classifier,
            clock=self.clock,
            scores=scores,
            features=features,
        )
        return parser, pipeline, scores

    def timed_pass(self) -> dict[str, LatencyHistogram]:
        clock = self.clock
        parser, pipeline, scores = self.fresh()
        parse, total, trade = LatencyHistogram(), LatencyHistogram(), LatencyHistogram()
        for recv_ns, raw in self.frames:
            # Between frames, as the engine's timer does: a full queue dropping its oldest
            # book would free it inside a frame's timing, which the engine's path never does.
            if len(scores) == DRAINED_BOOKS:
                scores.drain()
            start = clock()
            event = parser.parse(raw, recv_ns)
            parsed = clock()
            if type(event) is BookSnapshot:
                pipeline.on_market(event)
                done = clock()
                parse.record(parsed - start)
                total.record(done - start)
            else:
                if event is not None:
                    pipeline.on_market(event)
                trade.record(clock() - start)
        return {"parse": parse, **pipeline.latency, "total": total, "trade": trade}

    def throughput(self, frames: Frames) -> tuple[float, ParseStats, int]:
        """Frames/s with no per-frame clock reads, the parser's counts, and the growth of the
        resident set (kB) from a third of the frames to the end (the first third fills the
        bounded buffers: rings, logs, allocator pools)."""
        parser, pipeline, _ = self.fresh()
        parse, on_market = parser.parse, pipeline.on_market
        third = max(1, len(frames) // 3)
        rss_at_third = 0
        started = self.clock()
        for index, (recv_ns, raw) in enumerate(frames):
            event = parse(raw, recv_ns)
            if event is not None:
                on_market(event)
            if index == third:
                rss_at_third = _rss_kb()
        elapsed_s = (self.clock() - started) / 1e9
        return len(frames) / elapsed_s, parser.stats, _rss_kb() - rss_at_third


def _rss_kb() -> int:
    """Current resident set size in kB (Linux), else the peak."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * resource.getpagesize() // 1024
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


_TIMES = re.compile(rb'"ts":("?)(\d+)')
_TRADE_IDS = re.compile(rb'"tradeId":"(\d+)"')


def _shift(pattern: re.Pattern[bytes], amount: int, *, prefix: bool) -> Callable[[bytes], bytes]:
    """A rewriter adding `amount` to every number `pattern` captures."""
    if prefix:
        return lambda raw: pattern.sub(lambda m: b'"ts":%b%d' % (m[1], int(m[2]) + amount), raw)
    return lambda raw: pattern.sub(lambda m: b'"tradeId":"%d"' % (int(m[1]) + amount), raw)


def extended_frames(frames: Frames, at_least: int) -> Frames:
    """The recording repeated until `at_least` frames, each copy shifted forward in time (and
    trade ids) so the engine sees one continuous market."""
    if not frames:
        return []
    span_ns = frames[-1][0] - frames[0][0] + 1_000_000_000
    span_ms = span_ns // 1_000_000
    copies = -(-at_least // len(frames))
    extended = list(frames)
    for copy in range(1, copies):
        shift_times = _shift(_TIMES, copy * span_ms, prefix=True)
        shift_ids = _shift(_TRADE_IDS, copy * 10**9, prefix=False)
        for recv_ns, raw in frames:
            extended.append((recv_ns + copy * span_ns, shift_ids(shift_times(raw))))
    return extended


def run_bench(
    path: str | Path,
    limit: int | None = None,
    passes: int = 3,
    laya: LayaClassifierConfig | None = None,
    memory_frames: int = 100_000,
    risk_iterations: int = 100_000,
) -> dict[str, object]:
    """Run the fast path over a recording, then the risk check; the figures as a JSON-ready
    dict."""
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    if risk_iterations < 1_000:
        raise ValueError(f"risk_iterations must be >= 1000, got {risk_iterations}")
    read = RecordingReadStats()
    frames = load_frames(path, limit, read)
    problem = read.problem(path)
    classifier = LayaClassifier(laya or LayaClassifierConfig())
    classifier.start()
    try:
        bench = _Bench(frames, classifier, time.perf_counter_ns)
        for _ in range(WARMUP_PASSES):
            bench.throughput(frames)
        timer_cost = timer_cost_ns(bench.clock)
        timed = sorted(
            (bench.timed_pass() for _ in range(passes)),
            key=lambda stages: stages["total"].percentile_ns(50),
        )
        stages = timed[len(timed) // 2]
        runs = [bench.throughput(frames) for _ in range(passes)]
        rates = sorted(rate for rate, _, _ in runs)
        memory_run = extended_frames(frames, memory_frames) if memory_frames else []
        _, _, rss_growth_kb = bench.throughput(memory_run) if memory_run else (0.0, None, 0)
        provider = classifier.provider
        runner = classifier.runner
    finally:
        classifier.stop()
    risk = benchmark_check(risk_iterations)
    return {
        "frames": len(frames),
        "frames_per_s": rates[len(rates) // 2],
        "provider": provider,
        "runner": runner,
        "timer_overhead_ns": timer_cost,
        "depth_frames": stages["parse"].count,
        "trade_frames": stages["trade"].count,
        "passes": passes,
        "stages_us": {
            name: stages[name].summary_us(overhead_ns=timer_cost) for name in TIMED_STAGES
        },
        "memory": {"frames": len(memory_run), "rss_growth_kb": rss_growth_kb},
        "parser": runs[0][1].as_dict(),
        "recording_problem": problem.text if problem is not None else None,
        "risk_check_us": {
            "checks": risk_iterations,
            "p50": risk["p50_us"],
            "p99": risk["p99_us"],
            "denied_p50": risk["denied_p50_us"],
            "denied_p99": risk["denied_p99_us"],
            "denied_share": risk["denied_share"],
            "target_p50": RISK_CHECK_TARGET_P50_US,
        },
    }


def book_symbols(quoted: int, hedge: str = DEFAULT_HEDGE) -> tuple[str, ...]:
    """The first `quoted` contracts of the simulator's table besides `hedge`, then `hedge`: a
    book as the engine orders it; a one-line ValueError when the table has too few."""
    table = [symbol for symbol in sim_instruments() if symbol != hedge]
    if not 1 <= quoted <= len(table):
        raise ValueError(
            f"a book of the simulator quotes 1 to {len(table)} symbols besides its hedge "
            f"{hedge}, got {quoted}"
        )
    return (*table[:quoted], hedge)


def run_book_bench(
    quoted: int,
    minutes: float = 2.0,
    rounds: int = 3,
    laya: LayaClassifierConfig | None = None,
    seed: int = 7,
) -> dict[str, object]:
    """The fast path per books15 frame on the simulator's book of one quoted symbol and of
    `quoted`, each with the hedge (`book_symbols`) its cross features read: `minutes` of the
    larger book and as many books15 frames of the smaller, timed in `rounds` that alternate
    the two (a shared machine's noise hits both alike). Each stage's p50 and p99 are the
    median over the rounds; `ratio`: the larger book's over the smaller's."""
    if rounds < 1:
        raise ValueError(f"rounds (bench --passes) must be >= 1, got {rounds}")
    if not 0 < minutes <= 60:
        raise ValueError(f"minutes must be within (0, 60], got {minutes}")
    books = {"one": book_symbols(1), "book": book_symbols(quoted)}
    classifier = LayaClassifier(laya or LayaClassifierConfig())
    classifier.start()
    try:
        with tempfile.TemporaryDirectory(prefix="hft-bench-book-") as folder:
            benches = {}
            for name, symbols in books.items():
                # The same number of books either way: the percentiles rest on as many samples.
                span = minutes * len(books["book"]) / len(symbols)
                recording = simulate_recording(
                    Path(folder) / f"{name}.bitget",
                    span,
                    seed,
                    market=sim_book(symbols[:-1], seed, symbols[-1]),
                )
                frames = load_frames(recording.path)
                benches[name] = _Bench(
                    frames, classifier, time.perf_counter_ns, symbols, symbols[-1]
                )
        for bench in benches.values():
            for _ in range(WARMUP_PASSES):
                bench.throughput(bench.frames)
        timer_cost = timer_cost_ns(time.perf_counter_ns)
        passes: dict[str, list[dict[str, LatencyHistogram]]] = {name: [] for name in benches}
        for _ in range(rounds):
            for name, bench in benches.items():
                passes[name].append(bench.timed_pass())
        provider, runner = classifier.provider, classifier.runner
    finally:
        classifier.stop()
    result: dict[str, object] = {
        "quoted": quoted,
        "rounds": rounds,
        "provider": provider,
        "runner": runner,
        "timer_overhead_ns": timer_cost,
        "target_ratio": BOOK_RATIO_TARGET,
    }
    for name, bench in benches.items():
        figures = {}
        for stage in TIMED_STAGES:
            summaries = [
                stages[stage].summary_us(overhead_ns=timer_cost) for stages in passes[name]
            ]
            figures[stage] = {
                percentile: statistics.median(summary[percentile] for summary in summaries)
                for percentile in ("p50", "p99")
            }
        result[name] = {
            "symbols": list(bench.symbols),
            "depth_frames": passes[name][0]["parse"].count,
            "inferred": passes[name][0]["infer"].count,
            "stages_us": figures,
        }
    one, book = (result[name]["stages_us"] for name in books)
    result["ratio"] = {
        stage: {
            percentile: book[stage][percentile] / one[stage][percentile]
            if one[stage][percentile] > 0
            else None
            for percentile in ("p50", "p99")
        }
        for stage in TIMED_STAGES
    }
    return result


def format_book_table(result: dict[str, object]) -> str:
    """The human-readable form of `run_book_bench`'s result."""
    one, book, ratio = result["one"], result["book"], result["ratio"]
    lines = [
        f"a books15 frame's cost, 1 vs {result['quoted']} quoted symbols and their hedge on the "
        f"simulator's book (median of {result['rounds']} alternating rounds; Laya on "
        f"{laya_runs_on(str(result['provider']), str(result['runner']))}; clock read "
        f"{result['timer_overhead_ns']} ns, taken out of each stage)",
        f"  1: {', '.join(one['symbols'])} ({one['depth_frames']:,} books15)",
        f"  {result['quoted']}: {', '.join(book['symbols'])} ({book['depth_frames']:,} books15)",
        f"{'stage (us)':<12}{'p50 1':>9}{'p50 ' + str(result['quoted']):>9}{'ratio':>7}"
        f"{'p99 1':>9}{'p99 ' + str(result['quoted']):>9}{'ratio':>7}",
    ]
    for stage in TIMED_STAGES:
        cells = []
        for percentile in ("p50", "p99"):
            share = ratio[stage][percentile]
            cells.append(
                f"{one['stages_us'][stage][percentile]:>9.2f}"
                f"{book['stages_us'][stage][percentile]:>9.2f}{_times(share):>7}"
            )
        lines.append(f"{stage:<12}{''.join(cells)}")
    target = result["target_ratio"]
    total = ratio["total"]
    met = all(share is not None and share <= target for share in total.values())
    lines.append(
        f"total per frame with the book: p50 {_times(total['p50'])}, p99 {_times(total['p99'])} "
        f"(target <= x{target:g}: {'met' if met else 'MISSED'})"
    )
    return "\n".join(lines)


def _times(ratio: float | None) -> str:
    """A ratio as 'x1.02'; '-' where the smaller book's figure was 0."""
    return "-" if ratio is None else f"x{ratio:.2f}"


def format_table(result: dict[str, object]) -> str:
    """The human-readable form of `run_bench`'s result."""
    lines = [
        f"frames {result['frames']:,} (books15 {result['depth_frames']:,}, trade "
        f"{result['trade_frames']:,})  throughput {result['frames_per_s']:,.0f} frames/s  "
        f"Laya on {laya_runs_on(str(result['provider']), str(result['runner']))}  (clock read "
        f"{result['timer_overhead_ns']} ns, taken out of each stage)",
        f"{'stage (us)':<12}{'p50':>9}{'p99':>9}{'p99.9':>9}{'max':>10}",
    ]
    for stage, figures in result["stages_us"].items():
        lines.append(
            f"{stage:<12}{figures['p50']:>9.2f}{figures['p99']:>9.2f}"
            f"{figures['p999']:>9.2f}{figures['max']:>10.1f}"
        )
    memory = result["memory"]
    if memory["frames"]:
        lines.append(
            f"steady state: {memory['frames']:,} frames, resident memory grew "
            f"{memory['rss_growth_kb']:,} kB after the first third"
        )
    risk = result["risk_check_us"]
    verdict = "met" if risk["p50"] <= risk["target_p50"] else "MISSED"
    lines.append(
        f"risk check  p50 {risk['p50']:.2f} us  p99 {risk['p99']:.2f} us  (target p50 <= "
        f"{risk['target_p50']:g} us: {verdict}; {risk['checks']:,} checks)"
    )
    lines.append(
        f"  denials   p50 {risk['denied_p50']:.2f} us  p99 {risk['denied_p99']:.2f} us  "
        f"({risk['denied_share']:.0%} of the checks: a price through the slippage band)"
    )
    rejected = result["parser"]["rejected"]
    if rejected:
        lines.append("rejected: " + ", ".join(f"{k} {v}" for k, v in sorted(rejected.items())))
    return "\n".join(lines)
