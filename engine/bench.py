"""`hft-console bench`: the fast path, headless, over a recording, as fast as it goes.

Frames are loaded into memory first so disk and gzip stay out of the figures. A warm-up pass
compiles the numba scanner; then one timed pass records per-stage latencies into fixed
histograms, and a separate untimed pass measures throughput (so the clock reads do not count
against frames/s).
"""

from __future__ import annotations

import time
from itertools import islice
from pathlib import Path

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.replay import iter_recording
from engine.latency import LatencyHistogram
from engine.pipeline import MarketPipeline, MarketPipelineConfig

WARMUP_FRAMES = 2000


def load_frames(path: str | Path, limit: int | None = None) -> list[tuple[int, bytes]]:
    frames = iter_recording(path)
    return list(islice(frames, limit) if limit else frames)


def _fresh_path(symbols: tuple[str, ...]) -> tuple[FrameParser, MarketPipeline]:
    return FrameParser(), MarketPipeline(MarketPipelineConfig(symbols=symbols))


def _symbols(frames: list[tuple[int, bytes]]) -> tuple[str, ...]:
    parser = FrameParser()
    seen: dict[str, None] = {}
    for recv_ns, raw in frames:
        event = parser.parse(raw, recv_ns)
        symbol = getattr(event, "symbol", None)
        if symbol is not None:
            seen.setdefault(symbol)
    return tuple(seen) or ("BTCUSDT",)


def run_bench(path: str | Path, limit: int | None = None) -> dict[str, object]:
    """Run the fast path over a recording; the figures as a JSON-ready dict."""
    frames = load_frames(path, limit)
    if not frames:
        raise ValueError(f"{path}: no frames to benchmark")
    symbols = _symbols(frames)

    parser, pipeline = _fresh_path(symbols)
    for recv_ns, raw in frames[:WARMUP_FRAMES]:
        event = parser.parse(raw, recv_ns)
        if event is not None:
            pipeline.on_market(event)

    parse_depth = LatencyHistogram()
    parse_trade = LatencyHistogram()
    book = LatencyHistogram()
    total = LatencyHistogram()
    clock = time.perf_counter_ns
    parser, pipeline = _fresh_path(symbols)
    for recv_ns, raw in frames:
        start = clock()
        event = parser.parse(raw, recv_ns)
        parsed = clock()
        if type(event) is BookSnapshot:
            pipeline.on_market(event)
            booked = clock()
            parse_depth.record(parsed - start)
            book.record(booked - parsed)
            total.record(booked - start)
        else:
            if event is not None:
                pipeline.on_market(event)
            parse_trade.record(parsed - start)

    parser, pipeline = _fresh_path(symbols)
    on_market = pipeline.on_market
    parse = parser.parse
    started = clock()
    for recv_ns, raw in frames:
        event = parse(raw, recv_ns)
        if event is not None:
            on_market(event)
    elapsed_s = (clock() - started) / 1e9

    return {
        "frames": len(frames),
        "frames_per_s": len(frames) / elapsed_s,
        "provider": "none",
        "depth_frames": parse_depth.count,
        "stages_us": {
            "parse": parse_depth.summary_us(),
            "book": book.summary_us(),
            "total": total.summary_us(),
            "parse_trade": parse_trade.summary_us(),
        },
        "parser": parser.stats.as_dict(),
    }


def format_table(result: dict[str, object]) -> str:
    """The human-readable form of `run_bench`'s result."""
    lines = [
        f"frames {result['frames']:,}  depth frames {result['depth_frames']:,}  "
        f"throughput {result['frames_per_s']:,.0f} frames/s  provider {result['provider']}",
        f"{'stage (us)':<12}{'p50':>9}{'p99':>9}{'p99.9':>9}{'max':>10}",
    ]
    for stage, figures in result["stages_us"].items():
        lines.append(
            f"{stage:<12}{figures['p50']:>9.2f}{figures['p99']:>9.2f}"
            f"{figures['p999']:>9.2f}{figures['max']:>10.1f}"
        )
    rejected = result["parser"]["rejected"]
    if rejected:
        lines.append("rejected: " + ", ".join(f"{k} {v}" for k, v in sorted(rejected.items())))
    return "\n".join(lines)
