"""Reading recordings back, and ReplayFeed: same parse path, recorded times, pacing."""

from __future__ import annotations

import asyncio
import gzip
from pathlib import Path

import pytest

from engine.feed.events import BookSnapshot, ChannelError, FeedState, FeedStateChanged, Trades
from engine.feed.parse import FrameParser
from engine.feed.recording import RecordingReadStats, encode_line
from engine.feed.replay import ReplayFeed, iter_recording

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


def write_recording(path: Path, lines: list[tuple[int, bytes]]) -> Path:
    content = b"".join(encode_line(recv_ns, raw) for recv_ns, raw in lines)
    path.write_bytes(gzip.compress(content) if path.suffix == ".gz" else content)
    return path


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


class VirtualClock:
    """A clock that only moves when the replay sleeps on it."""

    def __init__(self) -> None:
        self.now_ns = 0
        self.sleeps: list[float] = []

    def clock_ns(self) -> int:
        return self.now_ns

    async def sleep(self, delay_s: float) -> None:
        self.sleeps.append(delay_s)
        self.now_ns += round(delay_s * 1e9)
        await asyncio.sleep(0)


class ClockedSink:
    """Notes the virtual time at which each market frame arrived."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.arrivals: list[tuple[int, int]] = []  # (recorded recv_ns, virtual ns)

    def on_market(self, frame) -> None:
        self.arrivals.append((frame.recv_ns, self.clock.now_ns))

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
        ReplayFeed(missing, FrameParser(), ClockedSink(VirtualClock()))


def test_concatenated_gzip_members_are_read_as_one_recording(tmp_path):
    path = tmp_path / "appended.gz"
    path.write_bytes(gzip.compress(b"1 first\n") + gzip.compress(b"2 second\n"))
    assert list(iter_recording(path)) == [(1, b"first"), (2, b"second")]


def test_a_gzip_stream_cut_short_yields_its_complete_lines(tmp_path):
    lines = [(T0 + i, b'{"frame":%d,"padding":"%s"}' % (i, b"x" * 50)) for i in range(2000)]
    whole = write_recording(tmp_path / "whole.gz", lines).read_bytes()
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


async def test_replay_delivers_what_parsing_the_file_directly_gives(tmp_path, frames, make_sink):
    path = write_recording(tmp_path / "session.gz", session_frames(frames))
    direct = make_sink()
    parser = FrameParser()
    for recv_ns, raw in iter_recording(path):
        frame = parser.parse(raw, recv_ns)
        if isinstance(frame, BookSnapshot | Trades):
            direct.on_market(frame)

    replayed = make_sink()
    replay = ReplayFeed(path, FrameParser(), replayed, speed=None)
    stats = await replay.run()

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


@pytest.mark.parametrize("speed", [1.0, 10.0, 0.5])
async def test_pacing_follows_the_recorded_gaps_divided_by_speed(tmp_path, frames, speed):
    path = write_recording(tmp_path / "session.gz", session_frames(frames))
    clock = VirtualClock()
    sink = ClockedSink(clock)
    await ReplayFeed(
        path, FrameParser(), sink, speed=speed, clock_ns=clock.clock_ns, sleep=clock.sleep
    ).run()
    first_recv_ns = session_frames(frames)[0][0]
    for recv_ns, arrived_ns in sink.arrivals:
        expected_ns = (recv_ns - first_recv_ns) / speed
        assert abs(arrived_ns - expected_ns) <= 1 * MS  # frames due within 1 ms go at once
    assert clock.now_ns == pytest.approx(3e9 / speed, abs=1 * MS)


async def test_as_fast_as_possible_never_sleeps(tmp_path, frames):
    path = write_recording(tmp_path / "session.gz", session_frames(frames))
    clock = VirtualClock()
    sink = ClockedSink(clock)
    await ReplayFeed(
        path, FrameParser(), sink, speed=None, clock_ns=clock.clock_ns, sleep=clock.sleep
    ).run()
    assert clock.sleeps == []
    assert len(sink.arrivals) == 6


async def test_receive_times_that_go_backwards_do_not_stall_the_replay(tmp_path, frames):
    lines = [
        (T0, frames.books15("BTCUSDT", 1_726_000_000_100, seq=1)),
        (T0 - 5_000 * MS, frames.books15("BTCUSDT", 1_726_000_000_200, seq=2)),
        (T0 + 10 * MS, frames.books15("BTCUSDT", 1_726_000_000_300, seq=3)),
    ]
    clock = VirtualClock()
    sink = ClockedSink(clock)
    path = write_recording(tmp_path / "backwards.txt", lines)
    await ReplayFeed(
        path, FrameParser(), sink, speed=1.0, clock_ns=clock.clock_ns, sleep=clock.sleep
    ).run()
    assert [arrived for _, arrived in sink.arrivals] == [0, 0, 10 * MS]


async def test_stop_ends_a_paced_replay_and_stops_every_symbol_seen(
    tmp_path, frames, make_sink, eventually
):
    lines = [
        (T0, frames.books15("BTCUSDT", 1_726_000_000_100)),
        (T0 + 60_000 * MS, frames.books15("BTCUSDT", 1_726_000_060_100)),
    ]
    sink = make_sink()
    replay = ReplayFeed(write_recording(tmp_path / "slow.gz", lines), FrameParser(), sink, 1.0)
    await replay.start()
    await eventually(lambda: len(sink.market) == 1, what="the first frame")
    await replay.stop()
    assert [t for t in asyncio.all_tasks() if t.get_name() == "replay-feed"] == []
    assert sink.states("BTCUSDT") == [FeedState.LIVE, FeedState.STOPPED]
    assert sink.last_state_event("BTCUSDT").reason == "replay stopped"
    assert not (await replay.wait()).finished
    with pytest.raises(RuntimeError, match="only once"):
        await replay.start()


async def test_start_then_wait_returns_the_final_stats(tmp_path, frames, make_sink):
    path = write_recording(tmp_path / "session.txt", session_frames(frames))
    replay = ReplayFeed(path, FrameParser(), make_sink())
    await replay.start()
    stats = await replay.wait()
    assert stats.finished
    assert stats.frames == 11
    with pytest.raises(RuntimeError, match="only once"):
        await replay.run()


@pytest.mark.parametrize("speed", [0.0, -1.0, float("inf"), float("nan")])
def test_speed_must_be_positive_and_finite(tmp_path, speed, make_sink):
    path = write_recording(tmp_path / "x.txt", [(1, b"pong")])
    with pytest.raises(ValueError, match="speed"):
        ReplayFeed(path, FrameParser(), make_sink(), speed=speed)


@pytest.mark.skipif(
    not SHARED_RECORDING.exists(), reason="shared recording not present beside the project"
)
async def test_the_shared_recording_replays_with_its_documented_counts():
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

    sink = CountingSink()
    stats = await ReplayFeed(SHARED_RECORDING, FrameParser(), sink, speed=None).run()
    assert stats.frames == 47_380
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
