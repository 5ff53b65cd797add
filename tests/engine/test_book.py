"""OrderBook derived values and IncrementalBook sequencing and checksums (bitget-v2.md §2)."""

from __future__ import annotations

import math

import orjson
import pytest

from engine.book import IncrementalBook, OrderBook
from engine.feed.events import BookResyncNeeded, BookSnapshot, BookUpdate
from engine.feed.parse import FrameParser


def books_frame(action, bids, asks, *, seq, pseq=0, checksum=0, ts=1000, symbol="BTCUSDT"):
    data = {
        "asks": asks,
        "bids": bids,
        "checksum": checksum,
        "seq": seq,
        "pseq": pseq,
        "ts": str(ts),
    }
    arg = {"instType": "USDT-FUTURES", "channel": "books", "instId": symbol}
    return orjson.dumps({"action": action, "arg": arg, "data": [data], "ts": ts})


def update_of(raw: bytes) -> BookUpdate:
    update = FrameParser().parse(raw, 1)
    assert isinstance(update, BookUpdate)
    return update


def test_order_book_derived_values():
    parser = FrameParser()
    raw = orjson.dumps(
        {
            "action": "snapshot",
            "arg": {"instType": "USDT-FUTURES", "channel": "books15", "instId": "BTCUSDT"},
            "data": [{"asks": [["101", "3"]], "bids": [["99", "1"], ["98", "5"]], "ts": "5"}],
        }
    )
    book = OrderBook("BTCUSDT")
    assert not book.ready and math.isnan(book.mid())
    book.apply(parser.parse(raw, 9))
    assert book.best() == (99.0, 1.0, 101.0, 3.0)
    assert book.mid() == 100.0
    assert book.microprice() == pytest.approx((99 * 3 + 101 * 1) / 4)
    assert book.spread_bps() == pytest.approx(200.0)
    view = book.view(depth=1)
    assert view.bid_prices == (99.0,) and view.ask_sizes == (3.0,)
    assert (view.mid, view.spread, view.recv_ns) == (100.0, 2.0, 9)


SNAPSHOT_BIDS = [["100.00", "1.50"], ["99.50", "2.00"], ["99.00", "3.25"]]
SNAPSHOT_ASKS = [["100.50", "1.00"], ["101.00", "2.50"], ["101.50", "1.75"]]


def test_checksum_vectors_from_the_docs_verify():
    book = IncrementalBook("BTCUSDT")
    first = book.apply(
        update_of(
            books_frame("snapshot", SNAPSHOT_BIDS, SNAPSHOT_ASKS, seq=10, checksum=1431635978)
        )
    )
    assert isinstance(first, BookSnapshot)
    second = book.apply(
        update_of(
            books_frame(
                "update",
                [["99.50", "0"], ["100.10", "1.20"]],
                [["100.50", "0.80"], ["102.00", "1.10"]],
                seq=11,
                pseq=10,
                checksum=1212953002,
            )
        )
    )
    assert isinstance(second, BookSnapshot)
    assert second.bid_prices.tolist() == [100.1, 100.0, 99.0]
    assert second.ask_prices.tolist() == [100.5, 101.0, 101.5, 102.0]
    assert second.ask_sizes[0] == 0.8
    assert book.checksum_failures == 0 and book.synced


def test_documented_btc_update_checksum():
    book = IncrementalBook("BTCUSDT")
    book.apply(
        update_of(
            books_frame(
                "snapshot",
                [["64010.0", "2.118"], ["64009.5", "0.900"]],
                [["64010.5", "1.203"], ["64011.0", "0.550"]],
                seq=1234567890,
            )
        )
    )
    result = book.apply(
        update_of(
            books_frame(
                "update",
                [["64010.0", "2.500"]],
                [["64010.5", "0"], ["64012.0", "0.300"]],
                seq=1234567901,
                pseq=1234567890,
                checksum=-579006200,
            )
        )
    )
    assert isinstance(result, BookSnapshot)
    assert result.ask_prices.tolist() == [64011.0, 64012.0]


def test_sequence_gap_asks_for_a_resync_and_waits_for_a_snapshot():
    book = IncrementalBook("BTCUSDT")
    book.apply(update_of(books_frame("snapshot", SNAPSHOT_BIDS, SNAPSHOT_ASKS, seq=10)))
    gap = book.apply(update_of(books_frame("update", [["100.10", "1"]], [], seq=12, pseq=11)))
    assert isinstance(gap, BookResyncNeeded)
    assert "pseq 11 after seq 10" in gap.reason
    assert book.gaps == 1 and not book.synced
    assert (
        book.apply(update_of(books_frame("update", [["100.10", "1"]], [], seq=13, pseq=12))) is None
    )
    fresh = book.apply(update_of(books_frame("snapshot", SNAPSHOT_BIDS, SNAPSHOT_ASKS, seq=20)))
    assert isinstance(fresh, BookSnapshot) and book.synced


def test_checksum_mismatch_asks_for_a_resync():
    book = IncrementalBook("BTCUSDT")
    book.apply(update_of(books_frame("snapshot", SNAPSHOT_BIDS, SNAPSHOT_ASKS, seq=10)))
    bad = book.apply(
        update_of(books_frame("update", [["100.10", "1.20"]], [], seq=11, pseq=10, checksum=12345))
    )
    assert isinstance(bad, BookResyncNeeded) and "checksum mismatch" in bad.reason
    assert book.checksum_failures == 1


def test_update_that_crosses_the_book_asks_for_a_resync():
    book = IncrementalBook("BTCUSDT")
    book.apply(update_of(books_frame("snapshot", SNAPSHOT_BIDS, SNAPSHOT_ASKS, seq=10)))
    crossed = book.apply(update_of(books_frame("update", [["100.60", "1"]], [], seq=11, pseq=10)))
    assert isinstance(crossed, BookResyncNeeded) and crossed.reason == "crossed after update"


def test_deleting_the_last_level_of_a_side_asks_for_a_resync():
    book = IncrementalBook("BTCUSDT")
    book.apply(update_of(books_frame("snapshot", [["100", "1"]], [["101", "1"]], seq=1)))
    empty = book.apply(update_of(books_frame("update", [["100", "0"]], [], seq=2, pseq=1)))
    assert isinstance(empty, BookResyncNeeded)


def test_depth_view_is_the_top_levels_only():
    book = IncrementalBook("BTCUSDT", depth=2)
    top = book.apply(update_of(books_frame("snapshot", SNAPSHOT_BIDS, SNAPSHOT_ASKS, seq=10)))
    assert top.bid_prices.tolist() == [100.0, 99.5]
    assert top.ask_prices.tolist() == [100.5, 101.0]
