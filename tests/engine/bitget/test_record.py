"""record(): live feed -> FrameRecorder -> file, and the file replayed byte for byte; the
contracts of what is recorded, from the venue's table, first."""

from __future__ import annotations

import asyncio
import gzip

import pytest
from support.sim import running_sim, sim_config

from engine.bitget.contracts import parse_contracts
from engine.bitget.public_ws import BitgetPublicFeedConfig
from engine.bitget.record import RecordProgress, record, recorded_contracts, rest_url_of
from engine.feed.events import BookSnapshot, ChannelError, FeedState
from engine.feed.parse import FrameParser
from engine.feed.recorder import FrameRecorder
from engine.feed.recording import RecordingReadStats, iter_recording, recording_instruments
from engine.feed.replay import ReplayFeed, replay_clock
from engine.sim.contracts import SIM_CONTRACTS


async def test_live_recording_replays_to_byte_identical_frames_and_identical_events(
    tmp_path, bitget_server, make_feed, make_sink, make_config, frames, eventually
):
    path = tmp_path / "session.gz"
    bitget_server.unknown_symbols = {"NOPEUSDT"}
    live = make_sink()
    recorder = FrameRecorder(path)
    recorder.start()
    config = make_config(bitget_server.url, symbols=("BTCUSDT", "ETHUSDT", "NOPEUSDT"))
    feed = make_feed(config, live, recorder)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("trade", "ETHUSDT"), what="subscribed")
    await eventually(lambda: feed.state("NOPEUSDT") is FeedState.FAILED, what="refusal")
    for step in range(40):
        ts_ms = bitget_server.next_ts_ms()
        symbol = ("BTCUSDT", "ETHUSDT")[step % 2]
        await bitget_server.push(frames.books15(symbol, ts_ms, bid=100.0 + step, seq=step))
        await bitget_server.push(frames.trade(symbol, ts_ms, str(step), price=100.25 + step))
    await bitget_server.push(b"not json at all")
    await eventually(lambda: len(live.market) == 80, what="every frame delivered")
    await feed.stop()
    await asyncio.to_thread(recorder.stop)
    assert recorder.fault is None

    read_stats = RecordingReadStats()
    recorded = list(iter_recording(path, read_stats))
    assert [raw for _, raw in recorded] == bitget_server.sent  # byte for byte, in order
    assert read_stats.malformed_lines == 0

    replayed = make_sink()
    clock = replay_clock(path)
    replay = ReplayFeed(path, FrameParser(config.symbols), replayed, clock)
    stats = await asyncio.to_thread(clock.run, replay.run())  # its own loop, on market time
    assert replayed.market == live.market  # same values, same recorded recv_ns
    assert [e for e in replayed.events if isinstance(e, ChannelError)] == [
        e for e in live.events if isinstance(e, ChannelError)
    ]
    assert stats.parser == feed.stats.parser


async def test_a_book_over_two_connections_is_recorded_whole(tmp_path, bitget_server, make_config):
    path = tmp_path / "book.gz"
    bitget_server.streaming = True
    symbols = tuple(f"S{i:02d}USDT" for i in range(17))  # x 3 channels: two connections
    config = make_config(bitget_server.url, symbols=symbols, channels=("books15", "trade", "books"))
    final = await record(config, str(path), 0.5, lambda _: None, progress_interval_s=0.1)
    assert final.fault is None
    assert bitget_server.connections_accepted == 2
    parser = FrameParser(symbols)
    parsed = [parser.parse(raw, recv_ns) for recv_ns, raw in iter_recording(path)]
    assert {frame.symbol for frame in parsed if isinstance(frame, BookSnapshot)} == set(symbols)


async def test_record_reports_progress_and_leaves_a_complete_file(
    tmp_path, bitget_server, make_config
):
    path = tmp_path / "recorded.gz"
    bitget_server.streaming = True
    reports: list[RecordProgress] = []
    final = await record(
        make_config(bitget_server.url), str(path), 0.5, reports.append, progress_interval_s=0.1
    )
    assert final.finished
    assert reports[-1] is final
    assert len(reports) >= 3
    assert not any(report.finished for report in reports[:-1])
    assert [report.frames for report in reports] == sorted(report.frames for report in reports)
    assert final.fault is None
    assert final.market_frames > 0
    assert dict(final.states) == {"BTCUSDT": FeedState.STOPPED, "ETHUSDT": FeedState.STOPPED}
    assert any(dict(r.states).get("BTCUSDT") is FeedState.LIVE for r in reports)
    with gzip.open(path, "rb") as lines:  # a closed gzip stream, trailer included
        assert len(lines.read().splitlines()) == final.frames
    assert final.bytes_written > 0


async def test_cancelling_a_recording_still_flushes_and_closes_the_file(
    tmp_path, bitget_server, make_config, eventually
):
    path = tmp_path / "cancelled.gz"
    bitget_server.streaming = True
    reports: list[RecordProgress] = []
    recording = asyncio.create_task(
        record(make_config(bitget_server.url), str(path), None, reports.append, 0.05)
    )
    await eventually(lambda: reports and reports[-1].market_frames >= 5, what="frames")
    recording.cancel()
    with pytest.raises(asyncio.CancelledError):
        await recording
    assert reports[-1].finished
    with gzip.open(path, "rb") as lines:
        assert len(lines.read().splitlines()) == reports[-1].frames
    await eventually(lambda: not bitget_server.subscriptions, what="the connection closed")


async def test_a_file_that_cannot_be_written_ends_the_recording_at_once(tmp_path, make_config):
    existing = tmp_path / "taken.gz"
    existing.write_bytes(b"someone else's")
    reports: list[RecordProgress] = []
    final = await record(make_config("ws://127.0.0.1:9"), str(existing), 30.0, reports.append)
    assert final.fault == f"{existing} already exists; refusing to overwrite a recording"
    assert final.finished
    assert final.elapsed_s < 5.0  # it did not wait out the 30 s duration
    assert reports == [final]
    assert existing.read_bytes() == b"someone else's"


@pytest.mark.parametrize(
    ("duration_s", "interval_s", "message"),
    [(0.0, 1.0, "duration_s"), (-1.0, 1.0, "duration_s"), (None, 0.0, "progress_interval_s")],
)
async def test_bad_durations_are_rejected(tmp_path, make_config, duration_s, interval_s, message):
    with pytest.raises(ValueError, match=message):
        await record(
            make_config("ws://127.0.0.1:9"),
            str(tmp_path / "x.gz"),
            duration_s,
            lambda _: None,
            interval_s,
        )


@pytest.mark.parametrize(
    ("ws_url", "rest_url"),
    [
        ("wss://ws.bitget.com/v2/ws/public", "https://api.bitget.com"),
        ("wss://wspap.bitget.com/v2/ws/public", "https://api.bitget.com"),
        ("ws://127.0.0.1:8765/v2/ws/public", "http://127.0.0.1:8765"),
        ("wss://venue.example:443/v2/ws/public", "https://venue.example:443"),
    ],
)
def test_the_contracts_come_from_the_rest_base_behind_the_websocket(ws_url, rest_url):
    assert rest_url_of(ws_url) == rest_url


async def test_a_recording_from_the_simulator_starts_with_its_tables_contracts(tmp_path):
    path = tmp_path / "sim.bitget.gz"
    table = parse_contracts(list(SIM_CONTRACTS)).specs
    async with running_sim(sim_config(29)) as sim:
        instruments = await recorded_contracts(sim.rest_url, ("XRPUSDT", "BTCUSDT"), print)
        assert instruments == (table["XRPUSDT"].instrument, table["BTCUSDT"].instrument)
        source = BitgetPublicFeedConfig(url=sim.ws_url, symbols=("BTCUSDT",))
        final = await record(source, str(path), 0.5, lambda _: None, instruments=instruments)
    assert final.fault is None
    assert recording_instruments(path) == {i.symbol: i for i in instruments}
    assert gzip.decompress(path.read_bytes()).partition(b" ")[2].startswith(b'{"hft":"contracts"')
    stats = RecordingReadStats()
    assert sum(1 for _ in iter_recording(path, stats)) == final.frames
    assert (stats.metadata_lines, stats.malformed_lines) == (1, 0)


async def test_a_symbol_the_table_lacks_is_one_line_naming_it():
    async with running_sim(sim_config(29)) as sim:
        with pytest.raises(ValueError) as raised:
            await recorded_contracts(sim.rest_url, ("BTCUSDT", "NEXOUSDT"), print)
    assert str(raised.value) == (
        f"no contract for NEXOUSDT in the contract table of {sim.rest_url}: record the symbols "
        f"it lists (hft-console instruments --url {sim.rest_url})"
    )
