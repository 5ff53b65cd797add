"""The parser's trade ring: what the feature extractor and the paper venue read back."""

from __future__ import annotations

import pytest

from engine.feed.events import AggressorSide
from engine.feed.tape import ADMITTED, MarketTape, admit_trade

CAPACITY = 64


def tape_with_trades(count: int) -> tuple[MarketTape, int]:
    """A tape whose BTCUSDT ring holds trades 0..count-1 (price 100 + n, size n + 1, buys on
    even n), wrapping once `count` passes the capacity."""
    tape = MarketTape(max_symbols=2, trade_capacity=CAPACITY)
    row = tape.register("BTCUSDT")
    assert row is not None
    for n in range(count):
        side = 1.0 if n % 2 == 0 else -1.0
        admitted = admit_trade(
            tape.state, tape.trades, tape.trade_ids, row, 100.0 + n, n + 1.0, side, 1_000 + n, n
        )
        assert admitted == ADMITTED
    return tape, row


@pytest.mark.parametrize(
    ("written", "first", "count"),
    [(5, 4, 1), (5, 1, 3), (150, 149, 1), (150, 100, 20), (150, 86, 64)],
)
def test_read_prices_gives_what_read_gives(written: int, first: int, count: int) -> None:
    tape, row = tape_with_trades(written)
    prints = tape.read(row, first, count, recv_ns=7)
    assert tape.read_prices(row, first, count) == [
        (p.price, p.size, 1.0 if p.aggressor is AggressorSide.BUY else -1.0) for p in prints
    ]
    assert [p.trade_id for p in prints] == [str(n) for n in range(first, first + count)]


@pytest.mark.parametrize(
    ("first", "count"),
    [(85, 1), (80, 10), (150, 1), (149, 2)],  # overwritten (150 written, 64 kept), or not yet
)
def test_reading_trades_the_ring_does_not_hold_says_which(first: int, count: int) -> None:
    tape, row = tape_with_trades(150)
    expected = f"trades {first}..{first + count - 1} of BTCUSDT are no longer in the ring"
    with pytest.raises(LookupError, match=expected):
        tape.read_prices(row, first, count)
    with pytest.raises(LookupError, match=expected):
        tape.read(row, first, count, recv_ns=7)
