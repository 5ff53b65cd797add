"""The soak: the looped recording (continuous time, fresh trade ids, every frame admitted), the
targets' evaluation (each one can fail), and a CI-sized run on simulated data through the real
paper-trading engine, with Kev on (offline) so its queue is measured too."""

from __future__ import annotations

import dataclasses
import json
import socket

import pytest

from engine.feed.parse import FrameParser
from engine.feed.recording import RecordingUnreadable, iter_recording, recording_instruments
from engine.laya.config import LayaClassifierConfig
from engine.sim.market import MarketGenerator, MarketGeneratorConfig
from engine.sim.recording import simulate_recording
from engine.tools.soak import (
    QueueFigures,
    SoakConfig,
    SoakFigures,
    SoakTargets,
    evaluate,
    find_recordings,
    format_table,
    soak,
    write_looped_recording,
)


@pytest.fixture(scope="module")
def market(tmp_path_factory):
    """One simulated minute (about 1,800 frames: books15 and trades for BTC and ETH)."""
    path = tmp_path_factory.mktemp("soak") / "sim.bitget.gz"
    return simulate_recording(path, 1, seed=3)


def test_the_looped_recording_is_one_continuous_market(market, tmp_path):
    frames = 3 * market.frames + 100
    looped = write_looped_recording([market.path], tmp_path / "looped.gz", frames)
    assert looped.frames == frames and looped.source_frames == market.frames
    assert looped.passes == pytest.approx(frames / market.frames)
    parser = FrameParser(("BTCUSDT", "ETHUSDT"))
    last_recv = 0
    for recv_ns, raw in iter_recording(looped.path):
        assert recv_ns > last_recv
        last_recv = recv_ns
        parser.parse(raw, recv_ns)
    stats = parser.stats
    assert stats.frames == frames
    assert dict(stats.rejected) == {}, "a shifted pass must not look stale or duplicated"
    assert stats.trades > 0
    span_ns = last_recv - next(iter(iter_recording(market.path)))[0]
    assert span_ns / 1e9 == pytest.approx(looped.passes * looped.pass_span_s, rel=0.01)
    # The simulated market's contracts, its first line, are the looped recording's too.
    simulated = MarketGenerator(MarketGeneratorConfig(seed=3))
    assert (
        recording_instruments(looped.path)
        == recording_instruments(market.path)
        == {symbol: simulated.instrument(symbol) for symbol in simulated.symbols}
    )


def test_recordings_follow_one_another_then_loop(market, tmp_path):
    frames = 2 * market.frames + 10
    looped = write_looped_recording([market.path, market.path], tmp_path / "two.gz", frames)
    parser = FrameParser(("BTCUSDT", "ETHUSDT"))
    for recv_ns, raw in iter_recording(looped.path):
        parser.parse(raw, recv_ns)
    # The same minute twice: the second copy moves on in time and in trade ids, else the
    # parser would reject its trades as duplicates.
    assert parser.stats.frames == frames and dict(parser.stats.rejected) == {}
    assert looped.pass_span_s > 2 * 60


def test_a_recording_without_frames_is_refused(tmp_path):
    empty = tmp_path / "empty.bitget"
    empty.write_bytes(b"not a frame\n")
    with pytest.raises(RecordingUnreadable) as raised:
        write_looped_recording([empty], tmp_path / "out.gz", 10)
    assert str(raised.value) == (
        f"{empty}: unreadable recording: none of its 1 lines is '<receive time ns> <frame>'"
    )


def test_a_recording_cut_short_is_looped_as_far_as_it_reads_and_noted(market, tmp_path):
    whole = market.path.read_bytes()
    cut = tmp_path / "cut.bitget.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    looped = write_looped_recording([cut], tmp_path / "looped.gz", market.frames)
    assert 0 < looped.source_frames < market.frames and looped.frames == market.frames
    (problem,) = looped.problems
    assert problem.startswith(f"{cut}: truncated at byte {len(whole) // 2:,} after ")
    clean = write_looped_recording([market.path], tmp_path / "clean.gz", market.frames)
    assert clean.problems == ()


def test_config_refuses_what_cannot_run(market, tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        SoakConfig(())
    with pytest.raises(ValueError, match="not found"):
        SoakConfig((tmp_path / "missing.gz",))
    with pytest.raises(ValueError, match=">= 10,000"):
        SoakConfig((market.path,), frames=500)
    with pytest.raises(ValueError, match="max_p99_ratio"):
        SoakTargets(max_p99_ratio=0.5)


def test_find_recordings_skips_hidden_files_and_a_missing_directory(tmp_path):
    assert find_recordings(tmp_path / "nowhere") == ()
    (tmp_path / "b.bitget.gz").write_bytes(b"")
    (tmp_path / "a.bitget").write_bytes(b"")
    (tmp_path / ".partial").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    assert [path.name for path in find_recordings(tmp_path)] == ["a.bitget", "b.bitget.gz"]


def healthy_figures() -> SoakFigures:
    return SoakFigures(
        frames=1_000_000,
        book_frames=270_000,
        wall_s=60.0,
        frames_per_s=16_666.0,
        rss_kb=((100_000, 400_000), (1_000_000, 420_000)),
        first_tenth_frames=100_096,
        last_tenth_frames=99_840,
        p99_first_us=400.0,
        p99_last_us=420.0,
        total_us={"p50": 100.0, "p99": 410.0, "p999": 900.0, "max": 9_000.0},
        queues=(QueueFigures("event log", 4096, 4096, "drop oldest", 12),),
        orders_placed=800,
        orders_denied=40,
        cancels_sent=300,
        fills=200,
        denials={"ENDPOINT_RATE": 40},
        journal_entries=3_000,
        journal_refused=0,
        handler_errors=0,
        rejected_frames={},
        verdicts={"HOLD": 270_000},
        trading_state="ACTIVE",
        asyncio_tasks_max=11,
    )


def failed(figures: SoakFigures) -> list[str]:
    return [c.name for c in evaluate(figures, SoakTargets(), 1_000_000) if not c.passed]


def test_healthy_figures_pass_every_check():
    assert failed(healthy_figures()) == []


@pytest.mark.parametrize(
    ("changes", "check"),
    [
        ({"rss_kb": ((100_000, 400_000), (1_000_000, 480_000))}, "RSS growth"),
        ({"p99_last_us": 500.0}, "fast path p99"),
        ({"p99_first_us": float("nan")}, "fast path p99"),
        ({"queues": (QueueFigures("journal writer", 8, 9, "refuse", 0),)}, "queue depth"),
        ({"journal_refused": 1}, "journal entries refused"),
        ({"handler_errors": 2}, "pipeline errors"),
        ({"fills": 0}, "order flow exercised"),
        ({"frames": 999_000}, "frames replayed"),
    ],
)
def test_each_check_fails_past_its_target(changes, check):
    names = failed(dataclasses.replace(healthy_figures(), **changes))
    assert len(names) == 1 and names[0].startswith(check)


def test_rss_growth_is_measured_from_the_first_tenth_to_the_end():
    figures = dataclasses.replace(
        healthy_figures(), rss_kb=((100_000, 500_000), (500_000, 900_000), (1_000_000, 550_000))
    )
    assert figures.rss_growth == pytest.approx(0.10)
    assert failed(figures) == []  # a peak in between is not growth that stayed


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_ci_sized_soak_trades_on_paper_and_reports_every_figure(market, laya_model, tmp_path):
    journal = tmp_path / "journal.sqlite"
    lines: list[str] = []
    config = SoakConfig(
        (market.path,),
        frames=20_000,
        laya=LayaClassifierConfig(model_path=laya_model, prefer_gpu=False),
        journal_path=journal,
        kev_url=f"http://127.0.0.1:{_closed_port()}",
    )
    result = soak(config, notes=("a test run",), progress=lines.append)
    figures = result.figures
    assert figures.frames == 20_000 and figures.book_frames > 5_000
    assert figures.frames_per_s > 0 and figures.wall_s > 0
    assert len(figures.rss_kb) == 10  # nine tenths sampled on the way, and the end
    assert [frames for frames, _ in figures.rss_kb] == sorted(f for f, _ in figures.rss_kb)
    assert all(kb > 10_000 for _, kb in figures.rss_kb)
    assert 2_000 <= figures.first_tenth_frames < 3_000
    assert 1_000 < figures.last_tenth_frames <= 2_000
    assert 0 < figures.p99_first_us < 1e6 and 0 < figures.p99_last_us < 1e6
    queues = {queue.name: queue for queue in figures.queues}
    assert set(queues) == {
        "event log",
        "journal writer",
        "verdict stream",
        "finished orders kept",
        "open orders",
        "Kev queue",
    }
    assert all(queue.bound > 0 for queue in queues.values())
    assert queues["event log"].max_depth > 0
    assert figures.orders_placed > 0 and figures.fills > 0, "the soak must trade"
    assert figures.journal_entries >= figures.orders_placed
    assert figures.verdicts["HOLD"] == figures.book_frames
    assert figures.trading_state == "ACTIVE"
    assert journal.is_file()  # --journal is honoured, not the temporary one
    assert lines[0].startswith("soak: 20,000 frames ready in") and len(lines) == 10
    assert result.prepare_s > 0
    checks = {check.name: check for check in result.checks}
    assert checks["frames replayed"].passed and checks["pipeline errors"].passed
    assert checks["order flow exercised"].passed
    assert result.passed == all(check.passed for check in result.checks)
    table = format_table(result)
    assert "a test run" in table and "held at HOLD" in table and "Kev queue" in table
    assert table.splitlines()[-1] == f"soak {'PASSED' if result.passed else 'FAILED'}"
    encoded = json.loads(json.dumps(result.as_dict()))
    assert encoded["frames"] == 20_000 and len(encoded["checks"]) == len(result.checks)
    assert encoded["passed"] is result.passed


def test_the_table_marks_a_failed_target(market):
    from engine.tools.soak import LoopedRecording, SoakResult

    figures = dataclasses.replace(healthy_figures(), p99_last_us=900.0)
    result = SoakResult(
        1_000_000,
        LoopedRecording(market.path, 1_000_000, 21.1, 47_380, 651.0),
        (str(market.path),),
        (),
        30.0,
        figures,
        evaluate(figures, SoakTargets(), 1_000_000),
    )
    table = format_table(result)
    row = next(line for line in table.splitlines() if line.startswith("fast path p99"))
    assert row.endswith("FAIL") and "2.25x" in row
    assert table.splitlines()[-1] == "soak FAILED" and not result.passed
