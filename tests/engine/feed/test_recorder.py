"""FrameRecorder: the line format, the writer thread's flushing, and disk faults."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import time
import zlib
from pathlib import Path

import pytest
from support.waiting import eventually_blocking

from engine.feed.recorder import FrameRecorder
from engine.feed.recording import (
    RecordingReadStats,
    encode_line,
    iter_recording,
    recording_instruments,
)
from engine.market.instruments import Instrument

# Frames the format must carry byte for byte: spaces, non-UTF-8, carriage returns, empty.
AWKWARD_FRAMES = [
    (1_723_161_254_087_896_568, b'{"action":"snapshot","data":[{"a b":"c d"}]}'),
    (1_723_161_254_087_896_569, b"pong"),
    (1_723_161_254_087_896_570, b"\x00\xff\xfe not utf-8 \x80"),
    (1_723_161_254_087_896_571, b"carriage\rreturn"),
    (1_723_161_254_087_896_572, b""),
    (1, b"  leading spaces kept"),
]


def decompress_available(path: Path) -> bytes:
    """Whatever a still-growing gzip file decodes to so far, as `gzip -dc` would print."""
    return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(path.read_bytes())


@pytest.mark.parametrize("name", ["frames.gz", "frames.txt"])
def test_round_trip_gives_back_identical_frames_and_receive_times(tmp_path, name):
    path = tmp_path / name
    recorder = FrameRecorder(path)
    recorder.start()
    for recv_ns, raw in AWKWARD_FRAMES:
        recorder.write(recv_ns, raw)
    recorder.stop()

    assert recorder.fault is None
    stats = RecordingReadStats()
    assert list(iter_recording(path, stats)) == AWKWARD_FRAMES
    assert stats.malformed_lines == 0
    recorded = recorder.stats
    assert recorded.frames == recorded.frames_written == len(AWKWARD_FRAMES)
    expected_bytes = sum(len(encode_line(recv_ns, raw)) for recv_ns, raw in AWKWARD_FRAMES)
    assert recorded.bytes_written == expected_bytes
    assert recorded.file_bytes == path.stat().st_size


@pytest.mark.parametrize("name", ["frames.gz", "frames.txt"])
def test_the_contracts_are_the_first_line_and_read_back(tmp_path, name):
    path = tmp_path / name
    instruments = (
        Instrument("XRPUSDT", 0.0001, 1.0, 5.0, maker_fee_rate=0.0002, taker_fee_rate=0.0006),
        Instrument("BTCUSDT", 0.1, 0.001),
    )
    recorder = FrameRecorder(path, instruments=instruments)
    recorder.start()
    for recv_ns, raw in AWKWARD_FRAMES:
        recorder.write(recv_ns, raw)
    recorder.stop()

    assert recorder.fault is None
    content = gzip.decompress(path.read_bytes()) if name.endswith(".gz") else path.read_bytes()
    first = content.split(b"\n", 1)[0]
    assert first.partition(b" ")[2].startswith(b'{"hft":"contracts","data":[{"symbol":"XRPUSDT"')
    assert recording_instruments(path) == {i.symbol: i for i in instruments}
    stats = RecordingReadStats()
    assert list(iter_recording(path, stats)) == AWKWARD_FRAMES
    assert (stats.metadata_lines, stats.malformed_lines) == (1, 0)
    assert recorder.stats.frames_written == len(AWKWARD_FRAMES)
    assert recorder.stats.bytes_written == len(content)


def test_gzip_output_is_a_complete_gzip_stream_after_stop(tmp_path):
    path = tmp_path / "frames.gz"
    recorder = FrameRecorder(path)
    recorder.start()
    recorder.write(5, b"hello")
    recorder.stop()
    with gzip.open(path, "rb") as lines:  # raises EOFError if the trailer were missing
        assert lines.read() == b"5 hello\n"


@pytest.mark.parametrize("name", ["growing.gz", "growing.txt"])
def test_frames_reach_the_disk_within_a_second_while_recording(tmp_path, name):
    path = tmp_path / name
    recorder = FrameRecorder(path)  # the default flush interval: one second
    recorder.start()
    try:
        recorder.write(42, b'{"first":1}')
        written_at = time.monotonic()
        while b'42 {"first":1}\n' not in (
            decompress_available(path) if name.endswith(".gz") else path.read_bytes()
        ):
            assert time.monotonic() - written_at < 2.5, "frame not on disk while recording"
            time.sleep(0.02)
        assert recorder.stats.frames_written == 1
        if name.endswith(".gz") and shutil.which("gzip"):
            # gzip -dc complains that the stream has no end yet, but prints what is there.
            printed = subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=False)
            assert printed.stdout == b'42 {"first":1}\n'
    finally:
        recorder.stop()


def test_frames_containing_a_newline_are_counted_and_skipped(tmp_path):
    path = tmp_path / "frames.gz"
    recorder = FrameRecorder(path)
    recorder.start()
    recorder.write(1, b"before")
    recorder.write(2, b'{"pretty":\n 1}')
    recorder.write(3, b"after")
    recorder.stop()
    assert list(iter_recording(path)) == [(1, b"before"), (3, b"after")]
    assert recorder.stats.skipped_newline == 1
    assert recorder.stats.frames == 2


def test_an_unwritable_path_becomes_a_fault_not_an_exception(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_bytes(b"")
    recorder = FrameRecorder(blocker / "frames.gz")  # a path under a regular file
    recorder.start()
    recorder.write(1, b"lost")
    recorder.stop()
    assert recorder.fault is not None
    assert recorder.fault.startswith(f"cannot open {blocker / 'frames.gz'}")
    assert recorder.stats.dropped_inactive == 1
    assert recorder.stats.frames_written == 0


def test_an_existing_recording_is_never_overwritten(tmp_path):
    path = tmp_path / "precious.gz"
    path.write_bytes(b"irreplaceable")
    recorder = FrameRecorder(path)
    recorder.start()
    recorder.stop()
    assert recorder.fault == f"{path} already exists; refusing to overwrite a recording"
    assert path.read_bytes() == b"irreplaceable"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (Linux)")
def test_a_full_disk_while_recording_becomes_a_fault(tmp_path):
    recorder = FrameRecorder("/dev/full", flush_interval_s=0.05, overwrite=True)
    recorder.start()
    recorder.write(1, b"x" * 100_000)
    eventually_blocking(lambda: recorder.fault is not None, 3.0, "a fault", interval_s=0.01)
    recorder.write(2, b"after the fault")
    recorder.stop()
    assert recorder.fault.startswith("write to /dev/full failed:")
    assert "No space left on device" in recorder.fault
    assert recorder.stats.dropped_inactive == 1


def test_a_full_queue_drops_new_frames_and_counts_them(tmp_path):
    path = tmp_path / "frames.txt"
    recorder = FrameRecorder(path, max_pending_frames=3)
    for recv_ns in range(5):  # before start() nothing drains the queue
        recorder.write(recv_ns, b"frame")
    recorder.start()
    recorder.stop()
    assert [recv_ns for recv_ns, _ in iter_recording(path)] == [0, 1, 2]
    assert recorder.stats.dropped_overflow == 2


def test_writes_after_stop_are_counted_as_dropped(tmp_path):
    recorder = FrameRecorder(tmp_path / "frames.txt")
    recorder.start()
    recorder.stop()
    recorder.write(1, b"late")
    assert recorder.stats.dropped_inactive == 1
    recorder.stop()  # idempotent
    with pytest.raises(RuntimeError, match="only once"):
        recorder.start()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"flush_interval_s": 0}, "flush_interval_s"),
        ({"max_pending_frames": 0}, "max_pending_frames"),
        ({"compress_level": 10}, "compress_level"),
    ],
)
def test_bad_settings_are_rejected(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        FrameRecorder(tmp_path / "x.gz", **kwargs)
