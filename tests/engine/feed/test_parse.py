"""FrameParser on frames shaped exactly as in shared/docs/bitget-v2.md, bad input, and fuzzing."""

from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.feed.parse as parse_module
from engine.feed.events import (
    AggressorSide,
    BookSnapshot,
    BookUpdate,
    ChannelAck,
    ChannelError,
    Pong,
)
from engine.feed.parse import FrameParser, RejectReason
from engine.feed.tape import Trades

RECORDING = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "replay"
RECORDING_FILE = RECORDING / "spot_btc_eth_20240808.bitget.gz"

# The documented examples, verbatim (bitget-v2.md §2 and §3).
BOOKS15_DOC = (
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books15",'
    b'"instId":"BTCUSDT"},"data":[{"asks":[["64010.5","1.203"],["64011.0","0.550"]],'
    b'"bids":[["64010.0","2.118"],["64009.5","0.900"]],"checksum":0,"seq":1234567950,'
    b'"pseq":0,"ts":"1726000000150"}],"ts":1726000000160}'
)
BOOKS_SNAPSHOT_DOC = (
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"BTCUSDT"},'
    b'"data":[{"asks":[["64010.5","1.203"],["64011.0","0.550"]],"bids":[["64010.0","2.118"],'
    b'["64009.5","0.900"]],"checksum":0,"seq":1234567890,"pseq":0,"ts":"1726000000000"}],'
    b'"ts":1726000000012}'
)
BOOKS_UPDATE_DOC = (
    b'{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"BTCUSDT"},'
    b'"data":[{"asks":[["64010.5","0"],["64012.0","0.300"]],"bids":[["64010.0","2.500"]],'
    b'"checksum":-579006200,"seq":1234567901,"pseq":1234567890,"ts":"1726000000100"}],'
    b'"ts":1726000000105}'
)
TRADE_DOC = (
    b'{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"trade","instId":"BTCUSDT"},'
    b'"data":[{"ts":"1726000000321","price":"64010.5","size":"0.015","side":"buy",'
    b'"tradeId":"1220000000000000001"}],"ts":1726000000330}'
)
ERROR_DOC = (
    b'{"event":"error","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"NOPEUSDT"},'
    b'"code":30001,"msg":"instType:USDT-FUTURES,channel:books,instId:NOPEUSDT,precision:null '
    b'doesn\'t exist","op":"subscribe"}'
)
ACK_DOC = (
    b'{"event":"subscribe","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"BTCUSDT"}}'
)


def depth_frame(
    bids, asks, *, ts="1726000000150", symbol="BTCUSDT", channel="books15", seq=1
) -> bytes:
    return orjson.dumps(
        {
            "action": "snapshot",
            "arg": {"instType": "USDT-FUTURES", "channel": channel, "instId": symbol},
            "data": [{"asks": asks, "bids": bids, "checksum": 0, "seq": seq, "pseq": 0, "ts": ts}],
            "ts": 1726000000160,
        }
    )


def trade_frame(trades, symbol="BTCUSDT", action="update") -> bytes:
    return orjson.dumps(
        {
            "action": action,
            "arg": {"instType": "USDT-FUTURES", "channel": "trade", "instId": symbol},
            "data": trades,
            "ts": 1726000000330,
        }
    )


def trade(trade_id: str, ts: str, price="100.5", size="0.1", side="buy") -> dict:
    return {"ts": ts, "price": price, "size": size, "side": side, "tradeId": trade_id}


def test_documented_books15_snapshot_becomes_a_book_snapshot():
    parser = FrameParser()
    snapshot = parser.parse(BOOKS15_DOC, 42)
    assert isinstance(snapshot, BookSnapshot)
    assert snapshot.symbol == "BTCUSDT"
    assert snapshot.channel == "books15"
    assert snapshot.bid_prices.tolist() == [64010.0, 64009.5]
    assert snapshot.bid_sizes.tolist() == [2.118, 0.9]
    assert snapshot.ask_prices.tolist() == [64010.5, 64011.0]
    assert snapshot.ask_sizes.tolist() == [1.203, 0.55]
    assert (snapshot.exchange_ts_ms, snapshot.seq, snapshot.recv_ns) == (
        1726000000150,
        1234567950,
        42,
    )
    assert parser.stats.depth_snapshots == 1


def test_second_frame_of_a_symbol_takes_the_fast_path_with_identical_results():
    parser = FrameParser()
    first = parser.parse(BOOKS15_DOC, 1)
    first_levels = first.levels.copy()
    second = parser.parse(BOOKS15_DOC, 2)
    assert parser.stats.fast_path == 1
    assert np.array_equal(second.levels[:, :2], first_levels[:, :2])
    assert second[3:] == (2, 2, 1726000000150, 1234567950, 2)


def test_documented_incremental_frames_keep_the_wire_strings():
    parser = FrameParser()
    snapshot = parser.parse(BOOKS_SNAPSHOT_DOC, 1)
    update = parser.parse(BOOKS_UPDATE_DOC, 2)
    assert isinstance(snapshot, BookUpdate) and snapshot.is_snapshot
    assert snapshot.asks == (("64010.5", "1.203"), ("64011.0", "0.550"))
    assert isinstance(update, BookUpdate) and not update.is_snapshot
    assert update.asks == (("64010.5", "0"), ("64012.0", "0.300"))
    assert (update.checksum, update.seq, update.pseq) == (-579006200, 1234567901, 1234567890)


def test_documented_trade_frame():
    trades = FrameParser().parse(TRADE_DOC, 7)
    assert isinstance(trades, Trades)
    (only,) = trades.prints
    assert (only.price, only.size, only.aggressor) == (64010.5, 0.015, AggressorSide.BUY)
    assert (only.trade_id, only.exchange_ts_ms, only.recv_ns) == (
        "1220000000000000001",
        1726000000321,
        7,
    )


def test_control_frames():
    parser = FrameParser()
    error = parser.parse(ERROR_DOC, 1)
    assert isinstance(error, ChannelError)
    assert (error.code, error.channel, error.symbol, error.op) == (
        30001,
        "books",
        "NOPEUSDT",
        "subscribe",
    )
    assert "doesn't exist" in error.message
    assert parser.parse(ACK_DOC, 2) == ChannelAck("subscribe", "books", "BTCUSDT")
    assert parser.parse(b"pong", 3) == Pong(3)
    assert parser.stats.control == 3


def test_trades_come_oldest_first_and_duplicates_are_dropped():
    parser = FrameParser()
    first = parser.parse(trade_frame([trade("3", "1002"), trade("2", "1001")]), 1)
    assert [t.trade_id for t in first.prints] == ["2", "3"]
    again = parser.parse(
        trade_frame([trade("4", "1003"), trade("3", "1002")], action="snapshot"), 2
    )
    assert [t.trade_id for t in again.prints] == ["4"]
    assert parser.parse(trade_frame([trade("4", "1003")]), 3) is None
    assert parser.stats.rejected[RejectReason.DUPLICATE_TRADE] == 2
    older = parser.parse(trade_frame([trade("1", "999")]), 4)
    assert older is None
    assert parser.stats.rejected[RejectReason.TS_BACKWARDS] == 1


def test_trade_frame_with_one_bad_trade_keeps_the_good_ones():
    parser = FrameParser()
    trades = parser.parse(
        trade_frame([trade("2", "1001", side="sideways"), trade("1", "1000", price="NaN")]), 1
    )
    assert trades is None
    trades = parser.parse(trade_frame([trade("4", "1003"), trade("3", "1002", size="-1")]), 2)
    assert [t.trade_id for t in trades.prints] == ["4"]
    assert parser.stats.rejected == {"bad_field": 1, "bad_price": 1, "bad_size": 1}


GOOD_BIDS = [["100.0", "1"], ["99.5", "2"]]
GOOD_ASKS = [["100.5", "1"], ["101.0", "2"]]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"not json at all", RejectReason.NOT_JSON),
        (b'{"action":"snapshot","arg":{', RejectReason.NOT_JSON),
        (b"[1,2,3]", RejectReason.NOT_OBJECT),
        (b'{"event":"mystery"}', RejectReason.UNKNOWN_EVENT),
        (depth_frame(GOOD_BIDS, GOOD_ASKS, channel="books50"), RejectReason.UNKNOWN_CHANNEL),
        (b'{"action":"snapshot","data":[{}]}', RejectReason.MISSING_FIELD),
        (
            orjson.dumps({"arg": {"channel": "books15", "instId": 5}, "data": [{}]}),
            RejectReason.BAD_FIELD,
        ),
        (depth_frame(GOOD_BIDS, GOOD_ASKS, ts="yesterday"), RejectReason.BAD_FIELD),
        (depth_frame([["100.0"]], GOOD_ASKS), RejectReason.BAD_FIELD),
        (depth_frame([["abc", "1"]], GOOD_ASKS), RejectReason.BAD_FIELD),
        (depth_frame([["-100.0", "1"]], GOOD_ASKS), RejectReason.BAD_PRICE),
        (depth_frame([["NaN", "1"]], GOOD_ASKS), RejectReason.BAD_PRICE),
        (depth_frame([["100.0", "0"]], GOOD_ASKS), RejectReason.BAD_SIZE),
        (depth_frame([["100.0", "-2"]], GOOD_ASKS), RejectReason.BAD_SIZE),
        (depth_frame([["100.0", "nan"]], GOOD_ASKS), RejectReason.BAD_SIZE),
        (depth_frame([["100.0", "inf"]], GOOD_ASKS), RejectReason.BAD_SIZE),
        (depth_frame([], GOOD_ASKS), RejectReason.EMPTY_BOOK),
        (depth_frame(GOOD_BIDS, []), RejectReason.EMPTY_BOOK),
        (depth_frame([["99.5", "1"], ["100.0", "2"]], GOOD_ASKS), RejectReason.UNSORTED_BOOK),
        (depth_frame(GOOD_BIDS, [["101.0", "1"], ["100.5", "2"]]), RejectReason.UNSORTED_BOOK),
        (depth_frame([["100.5", "1"]], GOOD_ASKS), RejectReason.CROSSED_BOOK),
        (depth_frame([["101.0", "1"]], GOOD_ASKS), RejectReason.CROSSED_BOOK),
        (
            depth_frame([[str(200 - i), "1"] for i in range(16)], [["201", "1"]]),
            RejectReason.TOO_MANY_LEVELS,
        ),
    ],
)
def test_bad_frames_are_rejected_with_a_counted_reason(raw, reason):
    parser = FrameParser()
    assert parser.parse(raw, 1) is None
    assert parser.stats.rejected == {reason: 1}
    assert parser.stats.depth_snapshots == 0


def test_exchange_time_going_backwards_is_rejected_and_the_last_book_stands():
    parser = FrameParser()
    newer = parser.parse(depth_frame(GOOD_BIDS, GOOD_ASKS, ts="2000"), 1)
    kept = newer.levels.copy()
    assert parser.parse(depth_frame([["50", "1"]], [["51", "1"]], ts="1999"), 2) is None
    assert parser.parse(depth_frame([["50", "1"]], [["51", "1"]], ts="1999"), 3) is None
    assert parser.stats.rejected == {RejectReason.TS_BACKWARDS: 2}
    assert np.array_equal(newer.levels, kept)
    assert parser.parse(depth_frame(GOOD_BIDS, GOOD_ASKS, ts="2000"), 4) is not None


def test_symbols_outside_the_configured_set_are_rejected():
    parser = FrameParser(["ETHUSDT"])
    assert parser.parse(BOOKS15_DOC, 1) is None
    assert parser.stats.rejected == {RejectReason.UNKNOWN_SYMBOL: 1}


def test_every_symbol_named_is_parsed_however_many_they_are():
    symbols = [f"S{i:02d}USDT" for i in range(17)]  # a book of 16 and its hedge
    parser = FrameParser(symbols)
    books = [
        parser.parse(depth_frame([["100", "1"]], [["101", "1"]], symbol=s), 1) for s in symbols
    ]
    assert [book.symbol for book in books] == symbols
    assert parser.stats.rejected == {}


def test_more_symbols_named_than_the_parser_holds_is_refused_up_front():
    with pytest.raises(ValueError, match=r"^9 symbols named, over max_symbols \(8\)"):
        FrameParser([f"S{i}USDT" for i in range(9)], max_symbols=8)


def test_snapshot_buffers_are_reused_only_after_the_pool_wraps():
    parser = FrameParser(pool_size=4, max_symbols=2)
    books = [parser.parse(depth_frame([[str(100 + i), "1"]], [["500", "1"]]), i) for i in range(4)]
    assert [b.bid_prices[0] for b in books] == [100.0, 101.0, 102.0, 103.0]
    parser.parse(depth_frame([["104", "1"]], [["500", "1"]]), 5)
    assert books[0].bid_prices[0] == 104.0  # the documented contract: copy to keep longer


def test_a_quiet_symbols_latest_book_keeps_its_buffer_while_another_symbol_streams():
    parser = FrameParser(pool_size=8, max_symbols=2)
    quiet = parser.parse(depth_frame([["100", "1"]], [["101", "2"]], symbol="ETHUSDT"), 1)
    for n in range(50):  # the ring wraps six times over, through the scanner and orjson's path
        frame = orjson.loads(depth_frame([[str(60_000 + n), "1"]], [["70000", "1"]]))
        frame["data"][0]["ts"] = str(1726000000150 + n)
        if n % 7 == 0:  # `data` before `arg`: the scanner leaves it to orjson
            frame = {"data": frame.pop("data"), **frame}
        assert parser.parse(orjson.dumps(frame), 2 + n) is not None
    # orjson's path took the 8 with `data` first and ETHUSDT's first (it registers a symbol)
    assert parser.stats.fast_path == 50 - 8
    assert quiet.bid_prices[0] == 100.0 and quiet.ask_prices[0] == 101.0
    parser.parse(
        depth_frame([["99", "1"]], [["101", "2"]], symbol="ETHUSDT", ts="1726000000999"), 60
    )
    for n in range(8):  # no longer the latest: reused in its turn
        parser.parse(
            depth_frame([["50", "1"]], [["70000", "1"]], ts=str(1726000001000 + n)), 61 + n
        )
    assert quiet.bid_prices[0] == 50.0


@pytest.mark.parametrize("pool_size", [3, 6, 8])
def test_pool_size_must_be_a_power_of_two_above_the_symbols(pool_size: int):
    with pytest.raises(ValueError, match="power of two above max_symbols"):
        FrameParser(pool_size=pool_size, max_symbols=8)


def reference_trades(raw: bytes) -> list[tuple]:
    """Independent reading of a trade frame, oldest first."""
    return [
        (float(t["price"]), float(t["size"]), t["side"], t["tradeId"], int(t["ts"]))
        for t in reversed(orjson.loads(raw)["data"])
    ]


def trade_fields(trades: Trades) -> list[tuple]:
    return [
        (p.price, p.size, p.aggressor.name.lower(), p.trade_id, p.exchange_ts_ms)
        for p in trades.prints
    ]


def reference_levels(raw: bytes) -> tuple[list, list]:
    """Independent reading of a depth frame: orjson + float()."""
    data = orjson.loads(raw)["data"][0]
    return (
        [[float(p), float(s)] for p, s in data["bids"]],
        [[float(p), float(s)] for p, s in data["asks"]],
    )


@pytest.mark.skipif(
    not RECORDING_FILE.exists(), reason="shared recording not present beside the project"
)
def test_every_recorded_frame_parses_exactly_as_orjson_and_float_would():
    parser = FrameParser()
    depth_frames = trade_frames = 0
    with gzip.open(RECORDING_FILE, "rb") as lines:
        for line in lines:
            recv_ns, raw = line.rstrip(b"\n").split(b" ", 1)
            event = parser.parse(raw, int(recv_ns))
            if b'"books15"' in raw:
                bids, asks = reference_levels(raw)
                assert event.levels[0:2, : event.n_bids].T.tolist() == bids
                assert event.levels[2:4, : event.n_asks].T.tolist() == asks
                depth_frames += 1
            else:
                assert trade_fields(event) == reference_trades(raw)
                trade_frames += 1
    assert (depth_frames, trade_frames) == (12961, 34419)
    # Only the very first frame of each symbol goes the slow way (it creates the symbol state).
    assert parser.stats.fast_path == depth_frames + trade_frames - 2
    assert not parser.stats.rejected


def decimal_texts(max_whole: int, max_fraction_digits: int) -> st.SearchStrategy[str]:
    return st.builds(
        lambda whole, frac: f"{whole}.{frac}" if frac else str(whole),
        st.integers(1, max_whole),
        st.text("0123456789", max_size=max_fraction_digits),
    )


decimal_text = decimal_texts(10**9, 10)


@st.composite
def valid_depth_frames(draw):
    """Valid books15 frames with random numbers, key order and JSON whitespace."""
    n_bids = draw(st.integers(1, 15))
    n_asks = draw(st.integers(1, 15))
    mid = draw(st.integers(100, 10**7))
    step = draw(st.sampled_from(["0.5", "0.01", "1", "0.00001"]))
    tick = float(step)
    bids = [
        [f"{mid - (i + 1) * tick:.5f}".rstrip("0").rstrip("."), draw(decimal_text)]
        for i in range(n_bids)
    ]
    asks = [
        [f"{mid + i * tick:.5f}".rstrip("0").rstrip("."), draw(decimal_text)] for i in range(n_asks)
    ]
    data = {
        "asks": asks,
        "bids": bids,
        "checksum": 0,
        "seq": draw(st.integers(0, 2**60)),
        "pseq": 0,
        "ts": "1726000000150",
    }
    data_keys = draw(st.permutations(list(data)))
    message = {
        "action": "snapshot",
        "arg": {"instType": "USDT-FUTURES", "channel": "books15", "instId": "BTCUSDT"},
        "data": [{key: data[key] for key in data_keys}],
        "ts": 1726000000160,
    }
    keys = draw(st.permutations(list(message)))
    text = orjson.dumps({key: message[key] for key in keys}).decode()
    if draw(st.booleans()):
        text = text.replace(",", ", ").replace(":", " : ").replace("[", "[ \n")
    return text.encode()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(valid_depth_frames())
def test_fast_and_orjson_paths_agree_on_valid_frames(raw):
    parser = FrameParser()
    parser.parse(raw, 0)  # first frame of the symbol: orjson path
    fast = parser.parse(raw, 1)
    bids, asks = reference_levels(raw)
    assert isinstance(fast, BookSnapshot)
    assert fast.levels[0:2, : fast.n_bids].T.tolist() == bids
    assert fast.levels[2:4, : fast.n_asks].T.tolist() == asks


def assert_book_invariants(event) -> None:
    if isinstance(event, BookSnapshot):
        bids, asks = event.bid_prices, event.ask_prices
        assert event.n_bids >= 1 and event.n_asks >= 1
        assert np.all(np.diff(bids) < 0) and np.all(np.diff(asks) > 0)
        assert bids[0] < asks[0]
        for values in (bids, asks, event.bid_sizes, event.ask_sizes):
            assert np.all(np.isfinite(values)) and np.all(values > 0)
    elif isinstance(event, Trades):
        for print_ in event.prints:
            assert math.isfinite(print_.price) and print_.price > 0
            assert math.isfinite(print_.size) and print_.size > 0


def test_only_a_bytes_frame_takes_the_scanners_compiled_entry(monkeypatch):
    # The entry converts its arguments unchecked: anything but bytes goes through numba's
    # dispatch, which types it.
    parser = FrameParser()
    dispatched = []
    scan_frame = parse_module.scan_frame

    def dispatch(raw, *arrays):
        dispatched.append(type(raw))
        return scan_frame(bytes(raw), *arrays)

    monkeypatch.setattr(parse_module, "scan_frame", dispatch)
    from_bytes = parser.parse(BOOKS15_DOC, 1)
    assert dispatched == []
    from_bytearray = parser.parse(bytearray(BOOKS15_DOC.replace(b"150", b"151")), 2)
    assert dispatched == [bytearray]
    assert isinstance(from_bytes, BookSnapshot) and isinstance(from_bytearray, BookSnapshot)
    assert from_bytearray.exchange_ts_ms == from_bytes.exchange_ts_ms + 1
    assert from_bytearray.bid_prices.tolist() == [64010.0, 64009.5]


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_garbage_bytes_never_raise(raw):
    assert_book_invariants(FrameParser().parse(raw, 0))


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(
    valid_depth_frames(),
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=6),
    st.integers(0, 10**6),
)
def test_mutated_frames_never_raise_and_never_break_the_book(raw, flips, cut):
    mutated = bytearray(raw)
    for position, value in flips:
        mutated[position % len(mutated)] = value
    parser = FrameParser()
    for candidate in (bytes(mutated), bytes(mutated[: cut % len(mutated)]), raw, bytes(mutated)):
        assert_book_invariants(parser.parse(candidate, 0))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["books15", "books5", "books1", "books", "trade", "ticker"]),
    st.sampled_from(["snapshot", "update", 7]),
    json_values,
)
def test_mistyped_payloads_never_raise(channel, action, data):
    arg = {"instType": "USDT-FUTURES", "channel": channel, "instId": "X"}
    raw = orjson.dumps({"action": action, "arg": arg, "data": data})
    parser = FrameParser()
    assert_book_invariants(parser.parse(raw, 0))
    assert parser.stats.frames == 1


short_decimal_text = decimal_texts(10**6, 8)
"""At most 15 significant digits: always within the scanner's exact range."""


@st.composite
def valid_trade_frames(draw):
    """Valid trade frames (newest first) with random numbers, key order and whitespace."""
    count = draw(st.integers(1, 5))
    first_ts = draw(st.integers(10**12, 2 * 10**12))
    trades = []
    for k in range(count):
        fields = {
            "ts": str(first_ts + k),
            "price": draw(short_decimal_text),
            "size": draw(short_decimal_text),
            "side": draw(st.sampled_from(["buy", "sell"])),
            "tradeId": str(10**9 + k),
        }
        order = draw(st.permutations(list(fields)))
        trades.append({key: fields[key] for key in order})
    message = {
        "action": draw(st.sampled_from(["snapshot", "update"])),
        "arg": {"instType": "USDT-FUTURES", "channel": "trade", "instId": "ETHUSDT"},
        "data": trades[::-1],
        "ts": first_ts + count,
    }
    text = orjson.dumps(message).decode()
    if draw(st.booleans()):
        text = text.replace(",", " ,\t").replace(":", ": ")
    return text.encode()


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(valid_trade_frames())
def test_fast_and_orjson_paths_agree_on_trade_frames(raw):
    parser = FrameParser()
    parser.parse(b'{"event":"subscribe","arg":{"channel":"trade","instId":"ETHUSDT"}}', 0)
    parser.parse(trade_frame([trade("0", "1")], symbol="ETHUSDT"), 0)  # creates the symbol
    event = parser.parse(raw, 5)
    assert trade_fields(event) == reference_trades(raw)
    assert parser.stats.fast_path == 1


@pytest.mark.parametrize("field", ["msg", "op"])
def test_control_frame_text_nested_too_deep_for_str_is_dropped_not_raised(field: str) -> None:
    """Found by tests/fuzz: str() of a 1000-deep list raised RecursionError out of parse."""
    nested = b"[" * 1000 + b"]" * 1000
    raw = b'{"event":"error","code":30001,"' + field.encode() + b'":' + nested + b"}"
    event = FrameParser().parse(raw, 1)
    assert isinstance(event, ChannelError)
    assert getattr(event, "message" if field == "msg" else "op") == ""


@pytest.mark.parametrize("channel", ["trade", "books15"])
def test_an_empty_symbol_is_rejected_not_matched_to_a_free_row(channel: str) -> None:
    """Found by tests/fuzz (atheris): the scanner matched instId "" to the first unregistered
    tape row (its name length is 0), wrote that row, then parse raised IndexError."""
    parser = FrameParser(("BTCUSDT",), max_symbols=2)
    parser.parse(trade_frame([trade("1", "1")]), 0)  # BTCUSDT takes row 0; row 1 is free
    raw = (
        trade_frame([trade("2", "1")], symbol="")
        if channel == "trade"
        else depth_frame([["1", "1"]], [["2", "1"]], symbol="")
    )
    assert parser.parse(raw, 1) is None
    assert parser.stats.rejected[RejectReason.UNKNOWN_SYMBOL] == 1
    assert parser.tape.state[1].tolist() == FrameParser().tape.state[1].tolist()  # untouched


@pytest.mark.parametrize(
    ("channel", "field", "value"),
    [
        ("books5", "ts", b'"16367537542089498624"'),  # beyond int64: the tape's state is int64
        ("books5", "ts", b"16367537542089498624"),
        ("books5", "seq", b"99999999999999999999999"),
        ("books", "checksum", b"-99999999999999999999999"),
        ("books", "seq", b"99999999999999999999999"),
    ],
)
def test_numbers_beyond_int64_are_rejected_not_raised(
    channel: str, field: str, value: bytes
) -> None:
    """Found by scripts/fuzz (hypothesis, 100k frames): a 20-digit `ts` raised OverflowError
    from the general path's tape update."""
    data = {"ts": b'"1726000000160"', "seq": b"25", "checksum": b"0"}
    data[field] = value
    fields = b",".join(b'"' + key.encode() + b'":' + item for key, item in data.items())
    raw = (
        b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"'
        + channel.encode()
        + b'","instId":"ETHUSDT"},"data":[{"asks":[["2.8155","2.8155"]],"bids":[["0.0855",'
        b'"2.8155"]],' + fields + b'}],"ts":1726000000160}'
    )
    parser = FrameParser(("ETHUSDT",))
    assert parser.parse(raw, 1) is None
    assert parser.stats.rejected[RejectReason.BAD_FIELD] == 1
