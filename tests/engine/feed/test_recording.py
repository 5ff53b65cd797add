"""Judging what was read from a recording: unreadable, truncated, malformed lines, or clean;
the cheap check before a run; and the contracts a recording carries."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import pytest
from support.recordings import write_recording

from engine.feed.recording import (
    RecordingContractsError,
    RecordingReadStats,
    RecordingUnreadable,
    check_recording,
    contracts_line,
    encode_line,
    iter_recording,
    recording_instruments,
    recording_symbols,
    require_distinct_recordings,
    require_recording_symbols,
)
from engine.market.instruments import Instrument
from engine.user_files import content_digest

T0 = 1_726_000_000_000_000_000
GZIP_HEADER_BYTES = 10


def lines(count: int, width: int = 60) -> bytes:
    return b"".join(encode_line(T0 + n, b"frame-%06d-" % n + b"x" * width) for n in range(count))


def read(path: Path) -> tuple[list[tuple[int, bytes]], RecordingReadStats]:
    stats = RecordingReadStats()
    return list(iter_recording(path, stats)), stats


def test_a_clean_recording_has_no_problem(tmp_path):
    path = tmp_path / "clean.gz"
    path.write_bytes(gzip.compress(lines(100)))
    frames, stats = read(path)
    assert len(frames) == 100 and stats.complete
    assert stats.problem(path) is None
    check_recording(path)


def test_a_gz_file_that_is_not_gzip_is_unreadable_and_says_so(tmp_path):
    path = tmp_path / "notgzip.gz"
    path.write_bytes(lines(5))  # plain recording lines under a .gz name
    frames, stats = read(path)
    assert frames == []
    problem = stats.problem(path)
    assert problem is not None and problem.unreadable
    assert (
        problem.text == f"{path}: unreadable recording: not gzip data, though its name ends in .gz"
    )
    with pytest.raises(RecordingUnreadable, match="not gzip data") as raised:
        problem.raise_if_unreadable()
    assert str(raised.value) == problem.text
    with pytest.raises(RecordingUnreadable, match="not gzip data"):
        check_recording(path)


@pytest.mark.parametrize("name", ["empty.gz", "empty.bitget"])
def test_an_empty_file_is_unreadable(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"")
    _, stats = read(path)
    expected = f"{path}: unreadable recording: the file is empty"
    assert stats.problem(path).text == expected
    with pytest.raises(RecordingUnreadable) as raised:
        check_recording(path)
    assert str(raised.value) == expected


def test_random_bytes_are_unreadable(tmp_path):
    path = tmp_path / "random.bin"
    path.write_bytes(b"\x00\xff garbage\nmore \x9c garbage\nand no end")
    frames, stats = read(path)
    assert frames == []
    problem = stats.problem(path)
    assert problem.unreadable
    assert problem.text == (
        f"{path}: unreadable recording: none of its 3 lines is '<receive time ns> <frame>'"
    )


def test_gzip_holding_no_lines_is_unreadable(tmp_path):
    path = tmp_path / "nothing.gz"
    path.write_bytes(gzip.compress(b""))
    _, stats = read(path)
    assert stats.problem(path).text == f"{path}: unreadable recording: it holds no lines"


def test_a_gzip_cut_in_half_is_truncated_at_its_size_after_the_frames_it_holds(tmp_path):
    whole = gzip.compress(lines(4_000))
    path = tmp_path / "half.gz"
    path.write_bytes(whole[: len(whole) // 2])  # what `head -c` leaves
    frames, stats = read(path)
    assert 0 < len(frames) < 4_000
    problem = stats.problem(path)
    assert problem.truncated and not problem.unreadable and problem.malformed_lines == 0
    assert problem.text == (
        f"{path}: truncated at byte {len(whole) // 2:,} after {len(frames):,} frames (the gzip "
        "data stops mid-stream: a copy cut short, or a recorder that stopped mid-write); the "
        "frames before it were read"
    )
    check_recording(path)  # its start is fine: the run finds the cut


def test_a_gzip_cut_before_its_first_line_ends_is_unreadable(tmp_path):
    path = tmp_path / "stub.gz"
    path.write_bytes(gzip.compress(lines(100))[:12])
    _, stats = read(path)
    assert stats.problem(path).text == (
        f"{path}: unreadable recording: the gzip data stops at byte 12, before the end of a line"
    )


def test_corrupt_gzip_names_the_first_bad_byte_and_keeps_what_came_before(tmp_path):
    content = lines(3_000)
    data = bytearray(gzip.compress(content, compresslevel=0))
    # Level 0 writes stored blocks after the gzip header: per block 1 header byte, LEN and
    # NLEN (2 bytes each, little-endian) and LEN bytes. Break the second block's NLEN.
    first_length = int.from_bytes(data[GZIP_HEADER_BYTES + 1 : GZIP_HEADER_BYTES + 3], "little")
    second_block = GZIP_HEADER_BYTES + 5 + first_length
    data[second_block + 3] ^= 0xFF
    path = tmp_path / "corrupt.gz"
    path.write_bytes(bytes(data))
    frames, stats = read(path)
    complete_lines = content[:first_length].count(b"\n")
    assert len(frames) == complete_lines
    assert second_block + 3 <= stats.stream_error_at <= second_block + 4
    problem = stats.problem(path)
    assert problem.truncated and not problem.unreadable
    assert problem.text == (
        f"{path}: corrupt gzip data (invalid stored block lengths) at byte "
        f"{stats.stream_error_at:,} after {complete_lines:,} frames; the frames before it were "
        "read"
    )


def test_corrupt_gzip_before_any_frame_is_unreadable(tmp_path):
    path = tmp_path / "broken.gz"
    data = bytearray(gzip.compress(lines(10), compresslevel=0))
    data[GZIP_HEADER_BYTES + 3] ^= 0xFF  # the first block's NLEN
    path.write_bytes(bytes(data))
    _, stats = read(path)
    problem = stats.problem(path)
    assert problem.unreadable
    assert problem.text.startswith(
        f"{path}: unreadable recording: corrupt gzip data (invalid stored block lengths) at byte "
    )
    with pytest.raises(RecordingUnreadable, match="invalid stored block lengths"):
        check_recording(path)


def test_a_plain_recording_whose_last_line_has_no_end_is_truncated(tmp_path):
    content = lines(10)
    path = tmp_path / "crashed.bitget"
    path.write_bytes(content + b"1726000000000000999 cut sho")
    frames, stats = read(path)
    assert len(frames) == 10
    assert stats.problem(path).text == (
        f"{path}: truncated at byte {len(content) + 27:,} after 10 frames (the last line has no "
        "end: a recorder that stopped mid-write); the frames before it were read"
    )


def test_malformed_lines_are_counted_from_the_first_one(tmp_path):
    content = lines(3) + b"no time here\n" + lines(2) + b"12x4 bad time\n"
    path = tmp_path / "some-bad.gz"
    path.write_bytes(gzip.compress(content))
    frames, stats = read(path)
    assert len(frames) == 5
    problem = stats.problem(path)
    assert not problem.unreadable and not problem.truncated and problem.malformed_lines == 2
    assert problem.text == (
        f"{path}: 2 malformed lines skipped of 7 (the first is line 4; each must be "
        "'<receive time ns> <frame>')"
    )


def test_truncation_and_malformed_lines_are_said_together(tmp_path):
    whole = gzip.compress(b"junk\n" + lines(4_000))
    path = tmp_path / "both.gz"
    path.write_bytes(whole[: len(whole) // 2])
    _, stats = read(path)
    text = stats.problem(path).text
    assert "truncated at byte" in text
    assert text.endswith(
        "; 1 malformed line skipped (the first is line 1; each must be '<receive time ns> <frame>')"
    )


def test_gzip_data_is_read_whatever_the_file_is_called(tmp_path):
    path = tmp_path / "recording.bitget"
    path.write_bytes(gzip.compress(lines(20)))
    frames, stats = read(path)
    assert len(frames) == 20 and stats.problem(path) is None


def test_a_read_stopped_early_judges_only_the_lines_seen(tmp_path):
    path = tmp_path / "long.gz"
    path.write_bytes(gzip.compress(lines(1_000))[:-100])  # truncated, but not read that far
    stats = RecordingReadStats()
    frames = iter_recording(path, stats)
    next(frames)
    assert not stats.complete and stats.problem(path) is None


def test_the_check_reads_only_the_start(tmp_path):
    path = tmp_path / "junk-first.bitget"
    path.write_bytes(b"junk\n" * 50 + lines(10))
    check_recording(path)
    with pytest.raises(RecordingUnreadable) as raised:
        check_recording(path, max_lines=20)
    assert str(raised.value) == (
        f"{path}: unreadable recording: none of its first 20 lines is '<receive time ns> <frame>'"
    )


def test_the_check_of_a_missing_file_says_not_found(tmp_path):
    missing = tmp_path / "nowhere.gz"
    with pytest.raises(FileNotFoundError, match="recording not found") as raised:
        check_recording(missing)
    assert raised.value.filename == os.fspath(missing)


def test_a_folder_is_named_a_folder_by_the_check_and_the_reader(tmp_path):
    for read_it in (check_recording, iter_recording):
        with pytest.raises(IsADirectoryError, match="is a folder, not a recording") as raised:
            read_it(tmp_path)
        assert raised.value.filename == os.fspath(tmp_path)


@pytest.mark.parametrize(
    "first_line",
    [
        b'{"stream":"btcusdt@trade","data":{"e":"trade","T":1,"t":2,"p":"1","q":"1","m":true}}',
        b'{"lastUpdateId":5,"E":1,"T":1,"bids":[["1","1"]],"asks":[["2","1"]]}',
    ],
    ids=["stream", "depth-snapshot"],
)
def test_a_binance_raw_capture_is_refused_with_the_import_to_run(tmp_path, first_line):
    capture = tmp_path / "usdm_btcusdt_20230404.dat.gz"
    capture.write_bytes(gzip.compress(encode_line(1_680_652_700_423_575, first_line)))
    with pytest.raises(RecordingUnreadable) as raised:
        check_recording(capture)
    assert str(raised.value) == (
        f"{capture}: looks like a Binance raw capture, not a recording: import it first "
        f"(hft-console import --from binance-raw {capture} --out REC)"
    )


def test_the_symbols_are_those_with_books_or_trades_busiest_first(tmp_path):
    frames = [
        b'{"event":"subscribe","arg":{"channel":"books15","instId":"ACKONLY"}}',  # no data
        b'{"action":"snapshot","arg":{"channel":"trade","instId":"TRADEONLY"},"data":[]}',
        b'{"action":"snapshot","arg":{"channel":"ticker","instId":"TICKER"},"data":[]}',
        b'{"action":"snapshot","arg": {"channel":"books15","instId":"ETHUSDT"},"data":[]}',
        *[b'{"action":"snapshot","arg":{"channel":"books15","instId":"BTCUSDT"},"data":[]}'] * 3,
        # Not the flat object first: read from the whole frame.
        b'{"data":[{"asks":[]}],"arg":{"channel":"books","instId":"ETHUSDT","x":"}"}}',
        b'{"action":"snapshot","arg":{"channel":"books","instId":"ETH}USDT"},"data":[]}',
        b'{"action":"snapshot","arg":"books15","data":[{"instId":"NOTANARG"}]}',
        b'{"arg":{"channel":"books15","instId":"BROKEN"},"data":[',
        b"not json at all, instId data",
    ]
    path = tmp_path / "symbols.gz"
    path.write_bytes(gzip.compress(b"".join(encode_line(T0 + n, f) for n, f in enumerate(frames))))
    assert recording_symbols(path) == ("BTCUSDT", "ETHUSDT", "ETH}USDT", "TRADEONLY")
    assert recording_symbols(path, max_lines=4) == ("ETHUSDT", "TRADEONLY")


def test_a_recording_is_given_once_by_its_bytes_whatever_its_name(tmp_path):
    first, copy, other = tmp_path / "a.gz", tmp_path / "copy.gz", tmp_path / "b.gz"
    first.write_bytes(lines(3))
    copy.write_bytes(lines(3))
    other.write_bytes(lines(4))
    assert require_distinct_recordings([first, other]) == [
        content_digest(first),
        content_digest(other),
    ]
    with pytest.raises(ValueError, match=f"{copy} is a copy of {first}: give each recording once"):
        require_distinct_recordings([first, other, copy])
    with pytest.raises(ValueError, match=f"{first} is given twice"):
        require_distinct_recordings([first, first])


# The contracts line

NEXO = Instrument("NEXOUSDT", 0.001, 0.1, 5.0)
DOGE = Instrument("DOGEUSDT", 0.00001, 1.0, 5.0, maker_fee_rate=0.0002, taker_fee_rate=-0.0001)
SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"


def nexo_book(n: int, price: str = "1.215") -> bytes:
    return (
        b'{"action":"snapshot","arg":{"instType":"SPOT","channel":"books15","instId":"NEXOUSDT"},'
        b'"data":[{"asks":[["%b","10.5"]],"bids":[["1.2","3"]],"seq":%d,"ts":"1"}],"ts":1}'
        % (price.encode(), n)
    )


def with_contracts(path: Path, frames: list[bytes], contracts: bytes) -> Path:
    body = b"".join(encode_line(T0 + n, frame) for n, frame in enumerate(frames, 1))
    path.write_bytes(gzip.compress(contracts + body))
    return path


def test_the_contracts_line_stores_each_contract_as_decimal_text():
    line = contracts_line(T0, [NEXO, DOGE])
    assert line == (
        b"%d " % T0 + b'{"hft":"contracts","data":['
        b'{"symbol":"NEXOUSDT","tick":"0.001","lot":"0.1","min_notional":"5",'
        b'"maker_fee_rate":null,"taker_fee_rate":null},'
        b'{"symbol":"DOGEUSDT","tick":"0.00001","lot":"1","min_notional":"5",'
        b'"maker_fee_rate":"0.0002","taker_fee_rate":"-0.0001"}]}\n'
    )


def test_readers_pass_over_the_contracts_and_read_them_back(tmp_path):
    frames = [nexo_book(n) for n in range(3)]
    path = with_contracts(tmp_path / "nexo.gz", frames, contracts_line(T0, [NEXO, DOGE]))
    read_frames, stats = read(path)
    assert [raw for _, raw in read_frames] == frames
    assert (stats.frames, stats.metadata_lines, stats.malformed_lines) == (3, 1, 0)
    assert stats.problem(path) is None
    check_recording(path)
    assert recording_instruments(path) == {"NEXOUSDT": NEXO, "DOGEUSDT": DOGE}
    assert recording_symbols(path) == ("NEXOUSDT",)


def test_a_later_contracts_line_before_the_first_frame_replaces_a_symbols_contract(tmp_path):
    finer = Instrument("NEXOUSDT", 0.0005, 0.1, 5.0)
    after_frame = Instrument("NEXOUSDT", 0.005, 0.1, 5.0)
    header = contracts_line(T0, [NEXO, DOGE]) + contracts_line(T0, [finer])
    path = with_contracts(tmp_path / "nexo.gz", [nexo_book(0)], header)
    path.write_bytes(
        gzip.compress(gzip.decompress(path.read_bytes()) + contracts_line(T0 + 9, [after_frame]))
    )
    assert recording_instruments(path) == {"NEXOUSDT": finer, "DOGEUSDT": DOGE}
    assert read(path)[1].metadata_lines == 3


def test_a_recording_without_contracts_reads_as_before(tmp_path):
    path = tmp_path / "old.gz"
    path.write_bytes(gzip.compress(lines(5)))
    frames, stats = read(path)
    assert len(frames) == 5 and stats.metadata_lines == 0
    assert recording_instruments(path) == {}


@pytest.mark.parametrize(
    "replay",
    [
        "spot_btc_eth_20240808.bitget.gz",
        "cm_btc_eth_20240808.bitget.gz",
        "usdm_btc_20230405.bitget.gz",
    ],
)
def test_the_shared_recordings_carry_no_contracts_and_read_whole(replay):
    path = SHARED / "replay" / replay
    if not path.is_file():
        pytest.skip(f"needs ../shared/data/replay/{replay}")
    frames, stats = read(path)
    raw_lines = gzip.decompress(path.read_bytes()).count(b"\n")
    assert len(frames) == stats.frames == stats.lines == raw_lines
    assert stats.metadata_lines == stats.malformed_lines == 0
    assert recording_instruments(path) == {}


def test_a_recording_of_contracts_and_no_frame_is_unreadable_and_says_so(tmp_path):
    path = with_contracts(tmp_path / "empty.gz", [], contracts_line(T0, [NEXO]))
    with pytest.raises(RecordingUnreadable, match=r"it holds its contracts and no frame$"):
        check_recording(path)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (b'{"hft":"contracts","data":[', "not JSON"),
        (b'{"hft":"contracts","data":{}}', "its data is not a list"),
        (b'{"hft":"contracts","data":[7]}', "entry 0: not an object"),
        (
            b'{"hft":"contracts","data":[{"symbol":"NEXOUSDT","tick":"0.001"}]}',
            "entry 0: lacks lot, min_notional, maker_fee_rate, taker_fee_rate",
        ),
        (
            b'{"hft":"contracts","data":[{"symbol":"NEXOUSDT","tick":0.001,"lot":"0.1",'
            b'"min_notional":"5","maker_fee_rate":null,"taker_fee_rate":null}]}',
            "entry 0: NEXOUSDT tick: expected decimal text, got 0.001",
        ),
        (
            b'{"hft":"contracts","data":[{"symbol":"NEXOUSDT","tick":"0.001","lot":"0.1",'
            b'"min_notional":"5","maker_fee_rate":"cheap","taker_fee_rate":null}]}',
            "entry 0: NEXOUSDT maker_fee_rate: expected decimal text or null, got 'cheap'",
        ),
        (
            b'{"hft":"contracts","data":[{"symbol":"NEXOUSDT","tick":"-1","lot":"0.1",'
            b'"min_notional":"5","maker_fee_rate":null,"taker_fee_rate":null}]}',
            "entry 0: NEXOUSDT: tick_size must be a positive number, got -1.0",
        ),
    ],
)
def test_a_malformed_contracts_line_is_one_line_naming_the_file_and_the_line(
    tmp_path, document, problem
):
    path = with_contracts(tmp_path / "bad.gz", [nexo_book(0)], encode_line(T0, document))
    expected = f"{path}: line 1: contracts line: {problem}"
    for reader in (check_recording, recording_instruments):
        with pytest.raises(RecordingContractsError) as raised:
            reader(path)
        assert str(raised.value) == expected
    assert len(read(path)[0]) == 1  # the frames still read


def test_a_price_off_the_stored_tick_is_refused_naming_the_line(tmp_path):
    frames = [nexo_book(0), nexo_book(1), nexo_book(2, price="1.2155")]
    path = with_contracts(tmp_path / "off.gz", frames, contracts_line(T0, [NEXO]))
    with pytest.raises(RecordingContractsError) as raised:
        recording_instruments(path)
    assert str(raised.value) == (
        f"{path}: line 4: NEXOUSDT price 1.2155 is not on the recording's stored tick 0.001 "
        f"(its contracts line does not fit its frames)"
    )


def test_a_replay_names_each_symbol_of_its_book_the_recording_lacks(tmp_path):
    """A book's market symbols, any number: the hedge and the leader named as such, beside
    what the recording has; none given: its two busiest, the traded one and its hedge."""
    path = write_recording(tmp_path / "pair.bitget.gz", books=4)
    assert require_recording_symbols(path, None) == ("BTCUSDT", "ETHUSDT")
    book = ("BTCUSDT", "SOLUSDT", "ETHUSDT", "XRPUSDT")
    with pytest.raises(
        ValueError, match=r"has no SOLUSDT, XRPUSDT \(the hedge\): it has BTCUSDT, ETHUSDT$"
    ):
        require_recording_symbols(path, book, hedge="XRPUSDT")
    with pytest.raises(ValueError, match=r"has no SOLUSDT \(the leader\): it has"):
        require_recording_symbols(path, ("BTCUSDT", "ETHUSDT", "SOLUSDT"), leader="SOLUSDT")
    assert require_recording_symbols(path, ("ETHUSDT", "BTCUSDT"), hedge="BTCUSDT") == (
        "ETHUSDT",
        "BTCUSDT",
    )
