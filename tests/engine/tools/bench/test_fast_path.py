"""`run_bench` on a small recording made here: JSON shape, counts, and the table; `run_book_bench`
on the simulator's book."""

from __future__ import annotations

import json
import time

import pytest
from support.recordings import MS_NS, book_frame, trade_frame, write_lines

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.recording import RecordingUnreadable
from engine.laya.classifier import LayaClassifier
from engine.laya.config import LayaClassifierConfig
from engine.laya.features import FeatureExtractor
from engine.laya.scorecard import ScorecardQueue
from engine.sim.market import sim_book
from engine.sim.recording import simulate_recording
from engine.tools.bench import fast_path
from engine.tools.bench.fast_path import (
    DRAINED_BOOKS,
    RISK_CHECK_TARGET_P50_US,
    _Bench,
    book_symbols,
    extended_frames,
    format_book_table,
    format_table,
    load_frames,
    run_bench,
    run_book_bench,
)


def depth(symbol: str, ts: int, mid: float) -> bytes:
    asks = [[f"{mid + 0.5 + i:.1f}", "1.5"] for i in range(15)]
    bids = [[f"{mid - 0.5 - i:.1f}", "2"] for i in range(15)]
    return book_frame(symbol, ts, asks, bids, seq=ts, checksum=0, pseq=0)


@pytest.fixture
def recording(tmp_path):
    lines = []
    for k in range(300):
        ts = 1_726_000_000_000 + 100 * k
        lines.append((ts * MS_NS, depth("BTCUSDT", ts, 100.0 + k % 7)))
        lines.append((ts * MS_NS + 1, trade_frame("BTCUSDT", ts, k, "100.5", "0.1")))
        lines.append((ts * MS_NS + 2, depth("ETHUSDT", ts, 50.0)))
    lines.append((2_000_000_000_000_000_000, b"garbage"))
    return write_lines(tmp_path / "small.bitget.gz", lines)


def test_bench_reports_every_stage_and_the_counts(recording, laya_model):
    result = run_bench(
        recording,
        laya=LayaClassifierConfig(model_path=laya_model),
        memory_frames=2000,
        risk_iterations=2_000,
    )
    json.dumps(result)  # the --json output must serialize
    assert result["frames"] == 901
    assert result["depth_frames"] == 600
    assert result["trade_frames"] == 301  # the garbage line counts with the non-book frames
    assert result["frames_per_s"] > 0
    assert result["provider"] == "CPUExecutionProvider"
    assert result["memory"]["frames"] == 2703
    assert set(result["stages_us"]) == {
        "parse",
        "book",
        "features",
        "infer",
        "decide",
        "total",
        "trade",
    }
    for figures in result["stages_us"].values():
        assert set(figures) == {"p50", "p99", "p999", "max"}
        assert 0 <= figures["p50"] <= figures["p99"] <= figures["p999"] <= figures["max"]
    assert result["parser"]["rejected"] == {"not_json": 1}
    assert result["parser"]["trades"] == 300
    risk = result["risk_check_us"]
    assert risk["checks"] == 2_000 and risk["target_p50"] == RISK_CHECK_TARGET_P50_US == 3.0
    assert 0 < risk["p50"] <= risk["p99"] and 0 < risk["denied_p50"] <= risk["denied_p99"]
    assert risk["denied_share"] == pytest.approx(0.1)


def test_bench_limit_and_table(recording, laya_model):
    result = run_bench(
        recording,
        limit=30,
        laya=LayaClassifierConfig(model_path=laya_model),
        memory_frames=0,
        risk_iterations=1_000,
    )
    assert result["frames"] == 30
    table = format_table(result)
    assert "parse" in table and "frames/s" in table
    assert "  Laya on CPU native kernel  " in table  # the start line's and status bar's words
    lines = table.splitlines()
    (number,) = [n for n, line in enumerate(lines) if line.startswith("risk check")]
    risk = result["risk_check_us"]
    assert f"p50 {risk['p50']:.2f} us" in lines[number] and "1,000 checks" in lines[number]
    assert "(target p50 <= 3 us: " in lines[number]
    assert lines[number + 1].startswith(f"  denials   p50 {risk['denied_p50']:.2f} us")
    assert "(10% of the checks" in lines[number + 1]
    result["risk_check_us"] = {**risk, "p50": 4.5, "target_p50": 3.0}
    assert "risk check  p50 4.50 us  " in format_table(result)
    assert "(target p50 <= 3 us: MISSED;" in format_table(result)
    result["risk_check_us"]["p50"] = 2.5
    assert "(target p50 <= 3 us: met;" in format_table(result)


def test_too_few_risk_checks_are_refused(recording):
    with pytest.raises(ValueError, match="risk_iterations must be >= 1000"):
        run_bench(recording, risk_iterations=999)


def test_extended_frames_continue_in_time_with_fresh_trade_ids(recording):
    frames = load_frames(recording)
    extended = extended_frames(frames, 2 * len(frames) + 1)
    assert len(extended) == 3 * len(frames)
    parser = FrameParser()
    events = [parser.parse(raw, recv_ns) for recv_ns, raw in extended]
    assert not parser.stats.rejected.get("ts_backwards")
    assert not parser.stats.rejected.get("duplicate_trade")
    assert sum(isinstance(event, BookSnapshot) for event in events) == 3 * 600
    recv_times = [recv_ns for recv_ns, _ in extended]
    assert recv_times == sorted(recv_times)


def test_bench_of_an_empty_recording_is_an_error(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(RecordingUnreadable) as raised:
        run_bench(empty)
    assert str(raised.value) == f"{empty}: unreadable recording: the file is empty"


def test_the_timed_pass_drains_the_scorecards_queue_between_frames(
    recording, laya_model, monkeypatch
):
    """The engine's scorer drains its queue off the fast path: so does the timed pass, between
    frames, so no timed frame starts on a full queue (its append would free the oldest book
    inside the frame's timing, which the engine's path never does)."""
    queues: list[ScorecardQueue] = []

    def queue(capacity: int, features: FeatureExtractor) -> ScorecardQueue:
        queues.append(ScorecardQueue(capacity, features))
        return queues[-1]

    lengths: list[int] = []

    def clock() -> int:
        lengths.append(len(queues[-1]))
        return time.perf_counter_ns()

    monkeypatch.setattr(fast_path, "ScorecardQueue", queue)
    classifier = LayaClassifier(LayaClassifierConfig(model_path=laya_model, prefer_gpu=False))
    classifier.start()
    try:
        _Bench(load_frames(recording), classifier, clock).timed_pass()
    finally:
        classifier.stop()
    full = [read for read, length in enumerate(lengths[:-1]) if length == DRAINED_BOOKS]
    assert len(full) == 600 // DRAINED_BOOKS
    assert all(lengths[read + 1] == 0 for read in full)


def test_the_book_bench_times_a_frame_with_one_and_with_n_quoted_symbols(laya_model):
    result = run_book_bench(
        2, minutes=0.05, rounds=2, laya=LayaClassifierConfig(model_path=laya_model)
    )
    json.dumps(result)  # the --json output must serialize
    one, book = result["one"], result["book"]
    assert one["symbols"] == ["ETHUSDT", "BTCUSDT"]
    assert book["symbols"] == ["ETHUSDT", "SOLUSDT", "BTCUSDT"]
    # As many books either way, and every one of every symbol gets features and a verdict.
    assert one["depth_frames"] == book["depth_frames"] == 3 * 30
    assert one["inferred"] == book["inferred"] == 3 * 30
    for stage in ("parse", "book", "features", "infer", "decide", "total", "trade"):
        for percentile in ("p50", "p99"):
            ratio = result["ratio"][stage][percentile]
            smaller = one["stages_us"][stage][percentile]
            assert ratio == (book["stages_us"][stage][percentile] / smaller if smaller else None)
    table = format_book_table(result)
    assert "1 vs 2 quoted symbols" in table and "ETHUSDT, SOLUSDT, BTCUSDT (90 books15)" in table
    assert f"p50 x{result['ratio']['total']['p50']:.2f}" in table


def test_a_book_is_the_simulators_contracts_then_the_hedge():
    assert book_symbols(1) == ("ETHUSDT", "BTCUSDT")
    assert book_symbols(2, "ETHUSDT") == ("BTCUSDT", "SOLUSDT", "ETHUSDT")
    assert len(book_symbols(9)) == 10
    for quoted in (0, 10):
        with pytest.raises(
            ValueError, match=f"1 to 9 symbols besides its hedge BTCUSDT, got {quoted}"
        ):
            book_symbols(quoted)


def test_the_bench_runs_every_symbol_of_a_recording(tmp_path):
    market = sim_book(("ETHUSDT", "SOLUSDT"), seed=3, hedge="BTCUSDT")
    recording = simulate_recording(tmp_path / "book.bitget", 0.05, seed=3, market=market)
    assert set(fast_path._symbols(load_frames(recording.path))) == {"ETHUSDT", "SOLUSDT", "BTCUSDT"}
