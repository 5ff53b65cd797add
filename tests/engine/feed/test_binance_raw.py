"""Binance raw captures into recordings: the book rebuilt by Binance's rules, a books15 frame
after each applied update, trades, gaps, several files and symbols; bad input refused with
nothing written; and the shared replay files reproduced from their raw captures."""

from __future__ import annotations

import gzip
import re
from decimal import Decimal
from pathlib import Path

import orjson
import pytest

from engine.feed.binance_raw import (
    SNAPSHOT_WITHIN_LINES,
    Market,
    RawCaptureError,
    identify_capture,
    import_captures,
)
from engine.feed.increments import InstrumentOption
from engine.feed.parse import FrameParser
from engine.feed.recording import contracts_line, iter_recording, recording_instruments
from engine.market.instruments import Instrument
from engine.user_files import OutputRefused

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared" / "data"
T0_US = 1_680_652_700_000_000
"""A local time in microseconds, as the 2023 captures have them."""


def snapshot(last_update_id: int, bids, asks) -> dict:
    return {"lastUpdateId": last_update_id, "E": 1, "T": 1, "bids": bids, "asks": asks}


def depth(symbol: str, first: int, final: int, previous: int | None, bids=(), asks=(), ms=5):
    """A depthUpdate message; `previous` is futures' `pu` (None: a spot update)."""
    data = {"e": "depthUpdate", "E": ms + 1, "T": ms, "s": symbol.upper(), "U": first, "u": final}
    if previous is None:
        del data["T"]
        stream = f"{symbol}@depth@100ms"
    else:
        data["pu"] = previous
        stream = f"{symbol}@depth@0ms"
    data.update(b=[list(level) for level in bids], a=[list(level) for level in asks])
    return {"stream": stream, "data": data}


def trade(symbol: str, trade_id: int, price: str, quantity: str, seller_aggressor: bool, ms=7):
    """A futures trade message (spot's carries "M" where futures' carry "X")."""
    data = {"e": "trade", "E": ms + 2, "T": ms, "s": symbol.upper(), "t": trade_id}
    data.update(p=price, q=quantity, X="MARKET", m=seller_aggressor)
    return {"stream": f"{symbol}@trade", "data": data}


def spot_trade(symbol: str, trade_id: int, price: str, quantity: str, ms=7) -> dict:
    message = trade(symbol, trade_id, price, quantity, False, ms)
    del message["data"]["X"]
    message["data"]["M"] = True
    return message


def capture(path: Path, lines: list[tuple[int, dict]]) -> Path:
    with gzip.open(path, "wb") as file:
        for local_time, message in lines:
            file.write(b"%d %b\n" % (local_time, orjson.dumps(message)))
    return path


def frames(path: Path) -> list[tuple[int, dict]]:
    return [(recv_ns, orjson.loads(raw)) for recv_ns, raw in iter_recording(path)]


def book_of(frame: dict) -> tuple[list, list, int]:
    data = frame["data"][0]
    return data["bids"], data["asks"], data["seq"]


@pytest.fixture
def futures_session(tmp_path) -> Path:
    """A USD-M capture: an update the snapshot holds, a trade and an update in flight before
    the snapshot line, then an update that deletes a level and adds one."""
    return capture(
        tmp_path / "btcusdt_20230404.dat.gz",
        [
            (T0_US, depth("btcusdt", 90, 99, 89, [("100.00", "9.000")])),
            (T0_US + 1, trade("btcusdt", 1, "100.10", "0.020", True)),
            (T0_US + 2, depth("btcusdt", 95, 101, 99, [("100.10", "1.500")], [("100.20", "0.5")])),
            (
                T0_US + 3,
                snapshot(100, [["100.10", "1.000"], ["100.00", "2.000"]], [["100.20", "0.400"]]),
            ),
            (T0_US + 4, {"stream": "btcusdt@bookTicker", "data": {"e": "bookTicker"}}),
            (T0_US + 5, depth("btcusdt", 102, 103, 101, [("100.00", "0")], [("100.30", "3.10")])),
            (T0_US + 6, trade("btcusdt", 2, "100.20", "1.000", False)),
        ],
    )


def test_each_applied_update_is_a_books15_frame_and_each_trade_a_trade_frame(
    futures_session, tmp_path
):
    out = tmp_path / "session.bitget.gz"
    result = import_captures([futures_session], out)
    written = frames(out)
    assert [recv_ns for recv_ns, _ in written] == [(T0_US + n) * 1000 for n in (1, 2, 5, 6)]
    first_trade, first_book, second_book, second_trade = (frame for _, frame in written)
    assert first_trade["arg"] == {
        "instType": "USDT-FUTURES",
        "channel": "trade",
        "instId": "BTCUSDT",
    }
    assert first_trade["data"] == [
        {"ts": "7", "price": "100.1", "size": "0.02", "side": "sell", "tradeId": "1"}
    ]
    assert second_trade["data"][0]["side"] == "buy" and second_trade["data"][0]["size"] == "1"
    # The in-flight update applies on the snapshot; the one before it is older and dropped.
    assert book_of(first_book) == ([["100.1", "1.5"], ["100", "2"]], [["100.2", "0.5"]], 101)
    assert book_of(second_book) == ([["100.1", "1.5"]], [["100.2", "0.5"], ["100.3", "3.1"]], 103)
    assert first_book["data"][0]["ts"] == "5" and first_book["ts"] == 6
    assert first_book["arg"]["channel"] == "books15" and first_book["action"] == "snapshot"
    symbol = result.symbols[0]
    assert (symbol.books, symbol.trades, symbol.stale_updates, symbol.gaps) == (2, 2, 1, 0)
    assert symbol.skipped == {"bookTicker": 1} and result.notices == ()


def test_the_frames_are_what_the_engine_parses(futures_session, tmp_path):
    out = tmp_path / "session.bitget.gz"
    import_captures([futures_session], out)
    parser = FrameParser()
    parsed = [parser.parse(raw, recv_ns) for recv_ns, raw in iter_recording(out)]
    assert len(parsed) == 4 and all(frame is not None for frame in parsed)
    assert not parser.stats.rejected


def test_the_book_keeps_15_levels_a_side_best_first(tmp_path):
    bids = [[f"{100 - level}.00", "1.000"] for level in range(20)]
    asks = [[f"{101 + level}.00", "2.000"] for level in range(20)]
    path = capture(
        tmp_path / "btcusdt.gz",
        [
            (T0_US, snapshot(10, bids[::-1], asks[::-1])),
            (T0_US + 1, depth("btcusdt", 11, 12, 10, [("100.50", "4")])),
        ],
    )
    out = tmp_path / "out.gz"
    import_captures([path], out)
    ((_, frame),) = frames(out)
    book_bids, book_asks, _ = book_of(frame)
    assert [price for price, _ in book_bids] == ["100.5"] + [f"{100 - n}" for n in range(14)]
    assert [price for price, _ in book_asks] == [f"{101 + n}" for n in range(15)]


def test_a_chain_gap_stops_the_symbol_until_a_snapshot_resyncs_it(tmp_path):
    path = capture(
        tmp_path / "btcusdt.gz",
        [
            (T0_US, snapshot(10, [["100.0", "1"]], [["100.1", "1"]])),
            (T0_US + 1, depth("btcusdt", 11, 12, 10, [("99.9", "1")])),
            (T0_US + 2, depth("btcusdt", 15, 16, 14, [("99.8", "1")])),  # 13, 14 lost
            (T0_US + 3, trade("btcusdt", 1, "100.1", "0.5", False)),
            (T0_US + 4, depth("btcusdt", 17, 18, 16, [("99.7", "1")])),
            (T0_US + 5, depth("btcusdt", 19, 20, 18, [("99.6", "1")])),  # in flight
            (T0_US + 6, snapshot(19, [["100.0", "2"]], [["100.1", "2"]])),
            (T0_US + 7, depth("btcusdt", 21, 22, 20, [("99.5", "1")])),
        ],
    )
    notices = []
    out = tmp_path / "out.gz"
    result = import_captures([path], out, on_notice=notices.append)
    written = frames(out)
    assert [recv_ns // 1000 - T0_US for recv_ns, _ in written] == [1, 5, 7]
    assert book_of(written[1][1]) == ([["100", "2"], ["99.6", "1"]], [["100.1", "2"]], 20)
    assert [notice.at_ns // 1000 - T0_US for notice in notices] == [2, 6]
    assert notices[0].text.startswith("BTCUSDT: depth-chain gap at 2023-04-04 23:58:20.000 UTC")
    assert "update 15..16 does not follow the previous update's 12" in notices[0].text
    assert notices[1].text == "BTCUSDT: resynced from the snapshot at 2023-04-04 23:58:20.000 UTC"
    symbol = result.symbols[0]
    assert (symbol.gaps, symbol.dropped_trades, symbol.stale_updates) == (1, 1, 2)


def test_a_gap_without_a_later_snapshot_stops_the_symbol_there_and_says_so(tmp_path):
    path = capture(
        tmp_path / "btcusdt.gz",
        [
            (T0_US, snapshot(10, [["100.0", "1"]], [["100.1", "1"]])),
            (T0_US + 1, depth("btcusdt", 11, 12, 10, [("99.9", "1")])),
            (T0_US + 2, depth("btcusdt", 15, 16, 14, [("99.8", "1")])),
            (T0_US + 3, depth("btcusdt", 17, 18, 16, [("99.7", "1")])),
            (T0_US + 4, trade("btcusdt", 1, "100.1", "0.5", False)),
        ],
    )
    notices = []
    out = tmp_path / "out.gz"
    result = import_captures([path], out, on_notice=notices.append)
    assert len(frames(out)) == 1
    assert "depth-chain gap" in notices[0].text
    assert "no snapshot came after the gap" in notices[1].text
    assert "2 depth updates and 1 trades after it left out" in notices[1].text
    assert result.symbols[0].dropped_updates == 2


def test_a_malformed_message_is_left_out_whole_and_a_broken_chain_said(tmp_path):
    bad_levels = depth("btcusdt", 13, 14, 12)
    bad_levels["data"]["b"] = [["99.8", 1]]  # a number where Binance sends a string
    path = capture(
        tmp_path / "btcusdt.gz",
        [
            (T0_US, snapshot(10, [["100.0", "1"]], [["100.1", "1"]])),
            (T0_US + 1, depth("btcusdt", 11, 12, 10, [("99.9", "1")])),
            (T0_US + 2, bad_levels),
            (T0_US + 3, trade("btcusdt", 1, "100.1", "-0.5", False)),
            (T0_US + 4, depth("btcusdt", 15, 16, 14, [("99.7", "1")])),
        ],
    )
    notices = []
    out = tmp_path / "out.gz"
    result = import_captures([path], out, on_notice=notices.append)
    ((_, frame),) = frames(out)
    assert book_of(frame)[0] == [["100", "1"], ["99.9", "1"]]
    assert result.symbols[0].skipped == {"malformed depthUpdate": 1, "malformed trade": 1}
    assert "update 15..16 does not follow the previous update's 12" in notices[0].text


def test_a_capture_cut_short_is_refused_or_used_as_far_as_it_reads_and_said(
    futures_session, tmp_path
):
    cut = tmp_path / "cut.dat.gz"
    cut.write_bytes(futures_session.read_bytes()[:-30])
    out = tmp_path / "out.gz"
    refused([cut], out, f"{cut}: truncated at byte .*; nothing written")
    assert not out.exists()
    result = import_captures([cut], out, allow_truncated=True)
    (problem,) = result.symbols[0].problems
    assert "truncated" in problem and str(cut) in problem
    assert 0 < len(frames(out)) < 4


def test_spot_updates_chain_by_first_id(tmp_path):
    path = capture(
        tmp_path / "btcusdt_spot.gz",
        [
            (T0_US, snapshot(10, [["100.00000000", "1.00000000"]], [["100.01000000", "1"]])),
            (T0_US + 1, depth("btcusdt", 11, 12, None, [("99.99000000", "0.50000000")])),
            (T0_US + 2, depth("btcusdt", 13, 13, None, asks=[("100.01000000", "0.00000000")])),
            (T0_US + 3, depth("btcusdt", 15, 16, None, [("99.98", "1")])),
            (T0_US + 4, spot_trade("btcusdt", 3, "100.00000000", "0.00100000")),
        ],
    )
    out = tmp_path / "out.gz"
    notices = []
    result = import_captures([path], out, on_notice=notices.append)
    written = frames(out)
    assert len(written) == 2 and written[0][1]["arg"]["instType"] == "SPOT"
    assert book_of(written[1][1]) == ([["100", "1"], ["99.99", "0.5"]], [], 13)
    assert written[1][1]["data"][0]["ts"] == "6"  # spot updates have no T: the event time
    assert "update 15..16 does not follow the previous update's 13" in notices[0].text
    assert result.symbols[0].market is Market.SPOT


def test_coin_margined_contracts_become_coin(tmp_path):
    def cm_depth(first, final, previous, bids):
        message = depth("btcusd_perp", first, final, previous, bids)
        message["data"]["ps"] = "BTCUSD"
        return message

    message = trade("btcusd_perp", 9, "50000.0", "3", True)
    message["data"]["X"] = "MARKET"
    path = capture(
        tmp_path / "btcusd_perp.gz",
        [
            (T0_US, snapshot(10, [["50000.0", "100"]], [["50000.1", "1"]])),
            (T0_US + 1, cm_depth(11, 12, 10, [("49990.0", "7")])),
            (T0_US + 2, message),
        ],
    )
    out = tmp_path / "out.gz"
    import_captures([path], out)
    (_, book), (_, trade_frame) = frames(out)
    assert book["arg"] == {"instType": "COIN-FUTURES", "channel": "books15", "instId": "BTCUSD"}
    # contracts x 100 USD / price, to 6 decimals
    assert book_of(book)[:2] == ([["50000", "0.2"], ["49990", "0.014003"]], [["50000.1", "0.002"]])
    assert trade_frame["data"][0]["size"] == "0.006"


def test_a_sessions_files_continue_and_symbols_interleave_by_receive_time(tmp_path):
    """ns local times (the 2024 captures'), two days of BTC and one of ETH."""
    t0 = T0_US * 1000
    btc_day1 = capture(
        tmp_path / "btcusdt_20230404.gz",
        [
            (t0, snapshot(10, [["100.0", "1"]], [["100.1", "1"]])),
            (t0 + 10, depth("btcusdt", 11, 12, 10, [("99.9", "1")])),
        ],
    )
    btc_day2 = capture(
        tmp_path / "btcusdt_20230405.gz",
        [(t0 + 40, depth("btcusdt", 13, 14, 12, [("99.8", "1")]))],
    )
    eth = capture(
        tmp_path / "ethusdt_20230404.gz",
        [
            (t0 + 5, trade("ethusdt", 1, "10.00", "1.0", True)),
            (t0 + 20, snapshot(50, [["10.00", "1"]], [["10.01", "1"]])),
            (t0 + 30, depth("ethusdt", 51, 52, 50, [("9.99", "1")])),
        ],
    )
    assert identify_capture(btc_day1).ns_per_unit == 1
    assert identify_capture(btc_day2).symbol == "BTCUSDT"
    out = tmp_path / "out"
    result = import_captures([btc_day1, eth, btc_day2], out)
    written = frames(out)
    assert [(recv_ns - t0, frame["arg"]["instId"]) for recv_ns, frame in written] == [
        (5, "ETHUSDT"),
        (10, "BTCUSDT"),
        (30, "ETHUSDT"),
        (40, "BTCUSDT"),
    ]
    assert [symbol.symbol for symbol in result.symbols] == ["BTCUSDT", "ETHUSDT"]
    assert out.read_bytes()[:1] != b"\x1f"  # no .gz: plain text


def test_the_contract_stored_first_is_the_finest_price_and_size_steps_written(
    futures_session, tmp_path
):
    out = tmp_path / "session.bitget.gz"
    result = import_captures([futures_session], out)
    # Prices 100, 100.1 .. 100.3: 0.1; sizes 0.02 (a trade), 0.4, 0.5, 1.5, 2, 3.1: 0.02.
    stored = Instrument("BTCUSDT", 0.1, 0.02)
    assert recording_instruments(out) == {"BTCUSDT": stored}
    assert result.symbols[0].instrument == stored and result.symbols[0].given == ()
    first = gzip.decompress(out.read_bytes()).split(b"\n", 1)[0]
    assert first == contracts_line((T0_US + 1) * 1000, [stored]).rstrip(b"\n")
    assert len(frames(out)) == result.frames == 4  # the frames are as before, after it


def test_given_keys_replace_the_datas_and_must_fit_it(futures_session, tmp_path):
    out = tmp_path / "session.bitget.gz"
    given = [InstrumentOption("BTCUSDT", tick=Decimal("0.05"), min_notional=Decimal("1"))]
    result = import_captures([futures_session], out, instruments=given)
    stored = Instrument("BTCUSDT", 0.05, 0.02, 1.0)
    assert recording_instruments(out) == {"BTCUSDT": stored}
    assert result.symbols[0].given == ("tick", "min_notional")


@pytest.mark.parametrize(
    ("option", "match"),
    [
        (
            InstrumentOption("BTCUSDT", tick=Decimal("0.2")),
            "BTCUSDT: its prices are not all on --instrument tick=0.2: they move in steps of "
            "0.1; nothing written",
        ),
        (
            InstrumentOption("BTCUSDT", lot=Decimal("0.1")),
            "BTCUSDT: its sizes are not all on --instrument lot=0.1: they move in steps of "
            "0.02; nothing written",
        ),
        (
            InstrumentOption("ETHUSDT", tick=Decimal("0.01")),
            "--instrument ETHUSDT: the captures have no ETHUSDT: they have BTCUSDT",
        ),
    ],
)
def test_a_given_key_the_data_is_off_or_a_symbol_it_lacks_is_refused(
    futures_session, tmp_path, option, match
):
    refused([futures_session], tmp_path / "out.gz", re.escape(match), instruments=[option])
    assert not (tmp_path / "out.gz").exists()


def test_a_symbol_given_twice_is_refused(futures_session, tmp_path):
    twice = [InstrumentOption("BTCUSDT", tick=Decimal("0.1"))] * 2
    refused(
        [futures_session],
        tmp_path / "out.gz",
        "--instrument BTCUSDT is given twice: give its keys in one",
        instruments=twice,
    )


def test_a_step_with_more_decimals_than_a_contract_holds_names_the_option(tmp_path):
    session = capture(
        tmp_path / "tiny.gz",
        [
            (T0_US, depth("btcusdt", 2, 2, 1, [("0.00000000001", "2")])),
            (T0_US + 1, snapshot(1, [["0.00000000001", "1"]], [["0.00000000002", "1"]])),
        ],
    )
    refused(
        [session],
        tmp_path / "out.gz",
        re.escape(
            "BTCUSDT: its contract (tick 0.00000000001, lot 1) cannot be stored: tick_size "
            "must have "
            "at most 10 decimals, got 1e-11; give it with --instrument BTCUSDT:tick=..,lot=.."
        ),
    )


def test_the_shared_nexo_day_stores_its_large_tick(tmp_path):
    captures = [SHARED / "raw" / f"binance_spot_nexousdt_2024072{day}.dat.gz" for day in (3, 4)]
    if not all(path.is_file() for path in captures):
        pytest.skip("needs ../shared/data/raw/binance_spot_nexousdt_2024072{3,4}.dat.gz")
    out = tmp_path / "nexo.bitget.gz"
    result = import_captures(captures, out)
    assert recording_instruments(out) == {"NEXOUSDT": Instrument("NEXOUSDT", 0.001, 0.01)}
    assert result.frames == 80_640 == sum(1 for _ in iter_recording(out))


def test_progress_reaches_the_end(futures_session, tmp_path):
    seen = []
    import_captures([futures_session], tmp_path / "out.gz", on_progress=seen.append)
    assert seen[-1].fraction == 1.0 and seen[-1].frames == 4


# Bad input: one reason, nothing written


def refused(paths, out: Path, match: str, **options) -> None:
    with pytest.raises((RawCaptureError, OutputRefused), match=match):
        import_captures(paths, out, **options)
    assert not list(out.parent.glob(f".{out.name}.*"))  # no scratch left beside it


def test_a_recording_of_ours_is_not_a_raw_capture(futures_session, tmp_path):
    ours = tmp_path / "ours.bitget.gz"
    import_captures([futures_session], ours)
    refused([ours], tmp_path / "out.gz", "not a Binance raw capture: it holds Bitget frames")
    assert not (tmp_path / "out.gz").exists()


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"hello\nworld\n", "unreadable recording"),
        (b'1680652700000000 {"result": null, "id": 1}\n', "not a Binance raw capture"),
        (b"", "it holds no lines"),
    ],
)
def test_what_is_not_a_raw_capture_is_refused(tmp_path, content, match):
    path = tmp_path / "junk.gz"
    path.write_bytes(gzip.compress(content))
    refused([path], tmp_path / "out.gz", match)


def test_a_folder_given_as_a_capture_is_named_a_folder(tmp_path):
    folder = tmp_path / "captures"
    folder.mkdir()
    refused([folder], tmp_path / "out.gz", re.escape(f"{folder}: is a folder, not a raw capture"))


def test_a_symbols_files_out_of_date_order_are_refused(tmp_path):
    day1 = capture(
        tmp_path / "a.gz",
        [
            (T0_US, snapshot(1, [["1", "1"]], [["2", "1"]])),
            (T0_US + 1, trade("btcusdt", 1, "1", "1", True)),
        ],
    )
    day2 = capture(tmp_path / "b.gz", [(T0_US + 9, trade("btcusdt", 2, "1", "1", True))])
    refused([day2, day1], tmp_path / "out.gz", "give a symbol's files in date order")
    refused([day1, day1], tmp_path / "out.gz", "given twice")


def test_overlapping_files_are_refused_and_nothing_is_left(tmp_path):
    day1 = capture(
        tmp_path / "a.gz",
        [
            (T0_US, snapshot(1, [["1", "1"]], [["2", "1"]])),
            (T0_US + 1, trade("btcusdt", 1, "1", "1", True)),
            (T0_US + 50, trade("btcusdt", 3, "1", "1", True)),
        ],
    )
    day2 = capture(tmp_path / "b.gz", [(T0_US + 9, trade("btcusdt", 2, "1", "1", True))])
    out = tmp_path / "out.gz"
    refused([day1, day2], out, "they overlap")
    assert not out.exists()


def test_a_session_without_its_snapshot_is_refused(tmp_path):
    later_day = capture(tmp_path / "b.gz", [(T0_US, depth("btcusdt", 5, 6, 4, [("1", "1")]))])
    refused([later_day], tmp_path / "out.gz", "no depth snapshot")


def test_a_snapshot_must_come_early_in_the_first_file(tmp_path):
    lines = [(T0_US + n, trade("btcusdt", n, "1", "1", True)) for n in range(SNAPSHOT_WITHIN_LINES)]
    path = capture(tmp_path / "late.gz", [*lines, (T0_US + 10**7, snapshot(1, [], []))])
    refused([path], tmp_path / "out.gz", f"in its first {SNAPSHOT_WITHIN_LINES:,} lines")


def test_an_existing_output_is_kept_unless_forced(futures_session, tmp_path):
    out = tmp_path / "out.gz"
    out.write_bytes(b"keep me")
    refused([futures_session], out, "exists")
    assert out.read_bytes() == b"keep me"
    import_captures([futures_session], out, overwrite=True)
    assert len(frames(out)) == 4


# The shared sessions: the shipped replay files were built from these captures

SESSIONS = {
    "usdm_btc_20230405.bitget.gz": ["usdm_btcusdt_20230404.dat.gz", "usdm_btcusdt_20230405.dat.gz"],
    "spot_btc_eth_20240808.bitget.gz": [
        f"spot_{coin}usdt_2024080{day}.gz" for day in (8, 9) for coin in ("btc", "eth")
    ],
    "cm_btc_eth_20240808.bitget.gz": [
        f"cm_{coin}usd_perp_2024080{day}.gz" for day in (8, 9) for coin in ("btc", "eth")
    ],
}


SESSION_GRIDS = {
    "usdm_btc_20230405.bitget.gz": {"BTCUSDT": (0.1, 0.001)},
    "spot_btc_eth_20240808.bitget.gz": {"BTCUSDT": (0.01, 0.000001), "ETHUSDT": (0.01, 0.00002)},
    "cm_btc_eth_20240808.bitget.gz": {"BTCUSD": (0.1, 0.000001), "ETHUSD": (0.01, 0.000001)},
}
"""The finest price and size steps of each session's data: the spot BTC tick is Binance's
0.01; the lots are the finest sizes the data shows (coin-margined: converted to 6 decimals)."""


@pytest.mark.parametrize("replay", sorted(SESSIONS))
def test_the_raw_captures_reproduce_the_shipped_replay_file_frame_for_frame(tmp_path, replay):
    shipped = SHARED / "replay" / replay
    captures = [SHARED / "raw" / name for name in SESSIONS[replay]]
    if not shipped.is_file() or not all(path.is_file() for path in captures):
        pytest.skip(f"needs ../shared/data/replay/{replay} and its raw captures")
    out = tmp_path / replay
    result = import_captures(captures, out)
    contracts, *ours = gzip.decompress(out.read_bytes()).splitlines()
    theirs = gzip.decompress(shipped.read_bytes()).splitlines()
    assert contracts.partition(b" ")[2].startswith(b'{"hft":"contracts"')
    assert {
        symbol: (instrument.tick_size, instrument.size_step)
        for symbol, instrument in recording_instruments(out).items()
    } == SESSION_GRIDS[replay]
    assert len(ours) == len(theirs) == result.frames
    mismatched = next(
        (n for n, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b), None
    )
    assert mismatched is None, f"line {mismatched + 1}:\n{ours[mismatched]}\n{theirs[mismatched]}"
    assert not result.notices and not any(symbol.problems for symbol in result.symbols)
