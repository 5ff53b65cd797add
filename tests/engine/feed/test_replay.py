"""Reading recordings back, and ReplayFeed: same parse path, recorded times, pacing."""

from __future__ import annotations

import asyncio
import gzip
import time
from pathlib import Path

import pytest
from support.recordings import write_lines

from engine.clock import MarketClock
from engine.feed.events import BookSnapshot, ChannelError, FeedState, FeedStateChanged
from engine.feed.parse import FrameParser
from engine.feed.recording import RecordingReadStats, contracts_line, iter_recording
from engine.feed.replay import ReplayFeed, replay_clock
from engine.feed.tape import Trades
from engine.market.instruments import ETHUSDT, Instrument
from engine.market_loop import MarketTimeLoop

SHARED_RECORDING = (
    Path(__file__).resolve().parents[3]
    / ".."
    / "shared"
    / "data"
    / "replay"
    / "spot_btc_eth_20240808.bitget.gz"
)
MS = 1_000_000
T0 = 1_726_000_000_000_000_000


def session_frames(frames) -> list[tuple[int, bytes]]:
    """A small live-like session: acks, books and trades for two symbols, a pong, an error,
    and a garbage frame, with realistic receive-time gaps."""
    ack = (
        b'{"event":"subscribe","arg":{"instType":"USDT-FUTURES","channel":"books15","instId":"%s"}}'
    )
    error = (
        b'{"event":"error","arg":{"instType":"USDT-FUTURES","channel":"books15",'
        b'"instId":"NOPEUSDT"},"code":30001,"msg":"NOPEUSDT doesn\'t exist","op":"subscribe"}'
    )
    return [
        (T0, ack % b"BTCUSDT"),
        (T0 + 1 * MS, ack % b"ETHUSDT"),
        (T0 + 2 * MS, error),
        (T0 + 100 * MS, frames.books15("BTCUSDT", 1_726_000_000_100, bid=64010.0, seq=1)),
        (T0 + 150 * MS, frames.trade("BTCUSDT", 1_726_000_000_140, "1", price=64010.5)),
        (T0 + 250 * MS, frames.books15("ETHUSDT", 1_726_000_000_240, bid=3366.0, seq=2)),
        (T0 + 260 * MS, b"garbage"),
        (T0 + 400 * MS, b"pong"),
        (T0 + 1_000 * MS, frames.books15("BTCUSDT", 1_726_000_000_990, bid=64011.0, seq=3)),
        (T0 + 1_000 * MS, frames.trade("ETHUSDT", 1_726_000_000_995, "2", price=3366.5)),
        (T0 + 3_000 * MS, frames.books15("ETHUSDT", 1_726_000_002_990, bid=3367.0, seq=4)),
    ]


def replay(path: Path, sink, speed: float | None = None, parser: FrameParser | None = None):
    """Play `path` into `sink` on its market clock; the final stats and the clock."""
    clock = replay_clock(path, speed)
    feed = ReplayFeed(path, parser or FrameParser(), sink, clock)
    return clock.run(feed.run()), clock


class ClockedSink:
    """Notes, for each market frame, the market time and the real time at which it arrived."""

    def __init__(self) -> None:
        self.clock: MarketClock | None = None
        self.arrivals: list[tuple[int, int, float]] = []  # (recorded recv_ns, market ns, real s)

    def on_market(self, frame) -> None:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, MarketTimeLoop)
        self.arrivals.append((frame.recv_ns, loop.clock.time_ns(), time.perf_counter()))

    def on_feed_event(self, event) -> None:
        return


# Reading


@pytest.mark.parametrize("suffix", [".gz", ".txt"])
def test_malformed_lines_are_skipped_and_counted(tmp_path, suffix):
    content = (
        b"100 good-1\n"
        b"no-separator\n"
        b"-5 negative time\n"
        b"12x3 not a number\n"
        b"\n"
        b" 7 empty time\n"
        b"200 good-2\n"
        b"300 cut short by a crash"
    )
    path = tmp_path / f"bad{suffix}"
    path.write_bytes(gzip.compress(content) if suffix == ".gz" else content)
    stats = RecordingReadStats()
    assert list(iter_recording(path, stats)) == [(100, b"good-1"), (200, b"good-2")]
    assert (stats.lines, stats.frames, stats.malformed_lines) == (8, 2, 6)
    assert stats.unterminated_tail
    assert stats.stream_error is None


def test_a_missing_recording_is_a_clear_error_at_once(tmp_path):
    missing = tmp_path / "nowhere.gz"
    with pytest.raises(FileNotFoundError, match="recording not found") as raised:
        iter_recording(missing)  # not only when iterated
    assert raised.value.filename == str(missing)
    with pytest.raises(FileNotFoundError, match="recording not found"):
        ReplayFeed(missing, FrameParser(), ClockedSink(), MarketClock(T0))


def test_concatenated_gzip_members_are_read_as_one_recording(tmp_path):
    path = tmp_path / "appended.gz"
    path.write_bytes(gzip.compress(b"1 first\n") + gzip.compress(b"2 second\n"))
    assert list(iter_recording(path)) == [(1, b"first"), (2, b"second")]


def test_a_gzip_stream_cut_short_yields_its_complete_lines(tmp_path):
    lines = [(T0 + i, b'{"frame":%d,"padding":"%s"}' % (i, b"x" * 50)) for i in range(2000)]
    whole = write_lines(tmp_path / "whole.gz", lines).read_bytes()
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    stats = RecordingReadStats()
    recovered = list(iter_recording(cut, stats))
    assert 0 < len(recovered) < len(lines)
    assert recovered == lines[: len(recovered)]
    assert stats.stream_error is None


def test_corrupt_gzip_data_stops_reading_with_a_recorded_error(tmp_path):
    path = tmp_path / "corrupt.gz"
    path.write_bytes(gzip.compress(b"1 kept\n") + b"this is not gzip")
    stats = RecordingReadStats()
    assert list(iter_recording(path, stats)) == [(1, b"kept")]
    assert stats.stream_error.startswith("corrupt gzip data")


# Replaying


def test_replay_delivers_what_parsing_the_file_directly_gives(tmp_path, frames, make_sink):
    path = write_lines(tmp_path / "session.gz", session_frames(frames))
    direct = make_sink()
    parser = FrameParser()
    for recv_ns, raw in iter_recording(path):
        frame = parser.parse(raw, recv_ns)
        if isinstance(frame, BookSnapshot | Trades):
            direct.on_market(frame)

    replayed = make_sink()
    clock = replay_clock(path)
    replay = ReplayFeed(path, FrameParser(), replayed, clock)
    stats = clock.run(replay.run())

    assert replayed.market == direct.market
    assert [type(frame) for frame in replayed.market] == [
        BookSnapshot,
        Trades,
        BookSnapshot,
        BookSnapshot,
        Trades,
        BookSnapshot,
    ]
    # Events carry the recorded receive time, not the replay's.
    assert [frame.recv_ns for frame in replayed.market] == [
        T0 + 100 * MS,
        T0 + 150 * MS,
        T0 + 250 * MS,
        T0 + 1_000 * MS,
        T0 + 1_000 * MS,
        T0 + 3_000 * MS,
    ]
    assert [
        (e.symbol, e.state, e.at_ns) for e in replayed.events if type(e) is FeedStateChanged
    ] == [
        ("BTCUSDT", FeedState.LIVE, T0 + 100 * MS),
        ("ETHUSDT", FeedState.LIVE, T0 + 250 * MS),
        ("BTCUSDT", FeedState.STOPPED, T0 + 3_000 * MS),
        ("ETHUSDT", FeedState.STOPPED, T0 + 3_000 * MS),
    ]
    assert replayed.last_state_event("ETHUSDT").reason == "end of recording"
    (error,) = [event for event in replayed.events if isinstance(event, ChannelError)]
    assert (error.code, error.symbol) == (30001, "NOPEUSDT")
    assert replay.state("BTCUSDT") is FeedState.STOPPED
    assert stats.finished
    assert (stats.frames, stats.market_frames) == (11, 6)
    assert stats.recorded_span_s == pytest.approx(3.0)
    assert stats.parser["rejected"] == {"not_json": 1}
    assert stats.recording.malformed_lines == 0


@pytest.mark.parametrize("speed", [None, 10.0, 40.0])
def test_each_frame_plays_at_its_recorded_time_on_the_market_clock(tmp_path, frames, speed):
    path = write_lines(tmp_path / "session.gz", session_frames(frames))
    sink = ClockedSink()
    started_s = time.perf_counter()
    stats, clock = replay(path, sink, speed)
    assert [market for _, market, _ in sink.arrivals] == [recv for recv, _, _ in sink.arrivals]
    assert stats.finished
    if speed is None:
        assert clock.paced_waits == 0  # max speed never waits on the real clock
        return
    for recv_ns, _, real_s in sink.arrivals:
        # Paced from the start: never before its time divided by the speed (a replay that
        # fell behind catches up, as a live engine works off a backlog, but never runs ahead).
        assert real_s - started_s >= (recv_ns - T0) / 1e9 / speed - 0.001
    assert clock.paced_waits > 0


def test_receive_times_that_go_backwards_do_not_stall_the_replay(tmp_path, frames):
    lines = [
        (T0, frames.books15("BTCUSDT", 1_726_000_000_100, seq=1)),
        (T0 - 5_000 * MS, frames.books15("BTCUSDT", 1_726_000_000_200, seq=2)),
        (T0 + 10 * MS, frames.books15("BTCUSDT", 1_726_000_000_300, seq=3)),
    ]
    sink = ClockedSink()
    replay(write_lines(tmp_path / "backwards.txt", lines), sink, 1.0)
    # Market time never runs backwards: the late frame plays at once, at the time reached.
    assert [market for _, market, _ in sink.arrivals] == [T0, T0, T0 + 10 * MS]


def test_stop_ends_a_paced_replay_and_stops_every_symbol_seen(
    tmp_path, frames, make_sink, eventually
):
    lines = [
        (T0, frames.books15("BTCUSDT", 1_726_000_000_100)),
        (T0 + 60_000 * MS, frames.books15("BTCUSDT", 1_726_000_060_100)),
    ]
    path = write_lines(tmp_path / "slow.gz", lines)
    sink = make_sink()
    clock = replay_clock(path, 1.0)
    replay = ReplayFeed(path, FrameParser(), sink, clock)

    async def main() -> None:
        await replay.start()
        await eventually(lambda: len(sink.market) == 1, what="the first frame")
        await replay.stop()
        assert [t for t in asyncio.all_tasks() if t.get_name() == "replay-feed"] == []
        assert not (await replay.wait()).finished
        with pytest.raises(RuntimeError, match="only once"):
            await replay.start()

    clock.run(main())
    assert sink.states("BTCUSDT") == [FeedState.LIVE, FeedState.STOPPED]
    assert sink.last_state_event("BTCUSDT").reason == "replay stopped"
    assert clock.time_ns() < T0 + 60_000 * MS  # stopped before the second frame was due


def test_start_then_wait_returns_the_final_stats(tmp_path, frames, make_sink):
    path = write_lines(tmp_path / "session.txt", session_frames(frames))
    clock = replay_clock(path)
    replay = ReplayFeed(path, FrameParser(), make_sink(), clock)

    async def main():
        await replay.start()
        stats = await replay.wait()
        with pytest.raises(RuntimeError, match="only once"):
            await replay.run()
        return stats

    stats = clock.run(main())
    assert stats.finished
    assert stats.frames == 11


async def test_a_replay_refuses_a_loop_that_does_not_run_on_its_clock(tmp_path, frames, make_sink):
    path = write_lines(tmp_path / "session.txt", session_frames(frames))
    replay = ReplayFeed(path, FrameParser(), make_sink(), replay_clock(path))
    with pytest.raises(RuntimeError, match="MarketClock's loop"):
        await replay.start()


@pytest.mark.parametrize("speed", [0.0, -1.0, float("inf"), float("nan")])
def test_speed_must_be_positive_and_finite(tmp_path, speed):
    path = write_lines(tmp_path / "x.txt", [(1, b"pong")])
    with pytest.raises(ValueError, match="speed"):
        replay_clock(path, speed)


def test_a_recording_without_frames_has_no_clock_to_start(tmp_path):
    with pytest.raises(ValueError, match="no frame to replay"):
        replay_clock(write_lines(tmp_path / "empty.txt", []))


@pytest.mark.skipif(
    not SHARED_RECORDING.exists(), reason="shared recording not present beside the project"
)
@pytest.mark.parametrize("contracts", [False, True], ids=["as shipped", "with contracts"])
def test_the_shared_recording_replays_with_its_documented_counts(tmp_path, contracts):
    class CountingSink:
        def __init__(self) -> None:
            self.books = 0
            self.trade_frames = 0
            self.trades = 0
            self.states: list[tuple[str, FeedState]] = []

        def on_market(self, frame) -> None:
            if isinstance(frame, BookSnapshot):
                self.books += 1
            else:
                self.trade_frames += 1
                self.trades += len(frame.prints)

        def on_feed_event(self, event) -> None:
            self.states.append((event.symbol, event.state))

    path = SHARED_RECORDING
    if contracts:  # its contracts line first, in a gzip member of its own, as `import` writes
        path = tmp_path / SHARED_RECORDING.name
        line = contracts_line(T0, [Instrument("BTCUSDT", 0.01, 0.00001), ETHUSDT])
        path.write_bytes(gzip.compress(line) + SHARED_RECORDING.read_bytes())
    sink = CountingSink()
    stats, _ = replay(path, sink)
    assert stats.frames == 47_380
    assert stats.recording.metadata_lines == contracts
    assert (sink.books, sink.trade_frames, sink.trades) == (12_961, 34_419, 34_419)
    assert stats.recording.malformed_lines == 0
    assert not stats.recording.unterminated_tail
    assert stats.parser["rejected"] == {}
    assert sorted(sink.states) == [
        ("BTCUSDT", FeedState.LIVE),
        ("BTCUSDT", FeedState.STOPPED),
        ("ETHUSDT", FeedState.LIVE),
        ("ETHUSDT", FeedState.STOPPED),
    ]
    assert stats.recorded_span_s == pytest.approx(10.8 * 60, rel=0.05)
