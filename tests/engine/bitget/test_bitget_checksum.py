"""CRC32 book checksum against every vector in docs/bitget-v2.md section 2."""

from __future__ import annotations

from engine.bitget.checksum import book_checksum, checksum_text


def test_doc_example_strings_hash_to_documented_signed_values() -> None:
    bids = [("43231.1", "4"), ("43231", "6")]
    asks = [("43232.8", "9"), ("43232.9", "8")]
    assert checksum_text(bids, asks) == "43231.1:4:43232.8:9:43231:6:43232.9:8"
    assert book_checksum(bids, asks) == -1504501796
    bids = [("3366.1", "7"), ("3368", "8")]
    asks = [("3366.8", "9"), ("3372", "8")]
    assert checksum_text(bids, asks) == "3366.1:7:3366.8:9:3368:8:3372:8"
    assert book_checksum(bids, asks) == 831078360


def test_snapshot_vector_from_nautilus_fixture() -> None:
    bids = [("100.00", "1.50"), ("99.50", "2.00"), ("99.00", "3.25")]
    asks = [("100.50", "1.00"), ("101.00", "2.50"), ("101.50", "1.75")]
    assert (
        checksum_text(bids, asks)
        == "100.00:1.50:100.50:1.00:99.50:2.00:101.00:2.50:99.00:3.25:101.50:1.75"
    )
    assert book_checksum(bids, asks) == 1431635978


def test_update_vector_from_nautilus_fixture() -> None:
    # Snapshot above, then bids [99.50,"0"],[100.10,1.20] and asks [100.50,0.80],[102.00,1.10].
    bids = [("100.10", "1.20"), ("100.00", "1.50"), ("99.00", "3.25")]
    asks = [("100.50", "0.80"), ("101.00", "2.50"), ("101.50", "1.75"), ("102.00", "1.10")]
    assert book_checksum(bids, asks) == 1212953002


def test_books_update_example_from_the_doc() -> None:
    bids = [("64010.0", "2.500"), ("64009.5", "0.900")]
    asks = [("64011.0", "0.550"), ("64012.0", "0.300")]
    assert checksum_text(bids, asks) == "64010.0:2.500:64011.0:0.550:64009.5:0.900:64012.0:0.300"
    assert book_checksum(bids, asks) == -579006200


def test_uneven_sides_skip_missing_entries() -> None:
    assert checksum_text([("1", "1")], [("2", "1"), ("3", "1"), ("4", "1")]) == "1:1:2:1:3:1:4:1"


def test_only_first_25_levels_count() -> None:
    bids = [(str(1000 - i), "1") for i in range(30)]
    asks = [(str(2000 + i), "1") for i in range(30)]
    assert book_checksum(bids, asks) == book_checksum(bids[:25], asks[:25])
    assert book_checksum(bids, asks) != book_checksum(bids[:24], asks[:25])
