"""`MarketTape`: the parser's per-symbol state in flat arrays, readable from numba kernels.

It holds the registered symbols, the last accepted exchange times, and a ring of each symbol's
recent accepted trades. The frame scanner admits trades into the ring directly (one kernel
call per trade frame); the feature extractor reads new trades from it at the next book frame.
Duplicates are found against the ring itself, so the de-duplication memory is the ring size.
The kernels keep the GIL (`engine.feed.frame_kernel` says why).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from engine.feed.events import AggressorSide, TradePrint

NAME_BYTES = 32
NAME_LENGTH, LAST_DEPTH_TS, LAST_TRADE_TS, TRADE_TOTAL, MAX_TRADE_ID = range(5)
STATE_FIELDS = 5
"""Columns of `MarketTape.state`; TRADE_TOTAL counts every trade ever admitted (the ring's
write sequence number)."""

PRICE, SIZE, SIDE, TS = range(4)
"""Rows of `MarketTape.trades[symbol]`; side is +1 for a buy aggressor, -1 for a sell."""

ADMITTED, DUPLICATE, OLDER_THAN_LAST = 0, 1, 2
"""Answers of `admit_trade`."""

_NO_TRADE_YET = -(2**63)


@njit(cache=True, _nrt=False)
def admit_trade(state, trades, trade_ids, index, price, size, side, ts, trade_id):
    """Append one trade (oldest first) unless it is a duplicate or older than the last one.

    Ids above the highest seen are new (the common case, O(1)); a lower id is looked up in the
    ring, so a reconnect's snapshot of recent trades is recognised.
    """
    capacity = trade_ids.shape[1]
    total = state[index, TRADE_TOTAL]
    if trade_id <= state[index, MAX_TRADE_ID]:
        for back in range(1, min(total, capacity) + 1):
            if trade_ids[index, (total - back) % capacity] == trade_id:
                return DUPLICATE
    if ts < state[index, LAST_TRADE_TS]:
        return OLDER_THAN_LAST
    slot = total % capacity
    trades[index, PRICE, slot] = price
    trades[index, SIZE, slot] = size
    trades[index, SIDE, slot] = side
    trades[index, TS, slot] = ts
    trade_ids[index, slot] = trade_id
    state[index, TRADE_TOTAL] = total + 1
    state[index, LAST_TRADE_TS] = ts
    if trade_id > state[index, MAX_TRADE_ID]:
        state[index, MAX_TRADE_ID] = trade_id
    return ADMITTED


@njit(cache=True, _nrt=False)
def find_symbol(buf, start, end, names, state):
    """Row of the symbol spelled by buf[start:end], or -1."""
    length = end - start
    for row in range(names.shape[0]):
        if state[row, NAME_LENGTH] != length:
            continue
        same = True
        for k in range(length):
            if names[row, k] != buf[start + k]:
                same = False
                break
        if same:
            return row
    return -1


class MarketTape:
    """Registered symbols (at most `max_symbols`), their last exchange times and trade rings."""

    def __init__(self, max_symbols: int = 8, trade_capacity: int = 8192) -> None:
        if max_symbols < 1:
            raise ValueError(f"max_symbols must be >= 1, got {max_symbols}")
        if trade_capacity < 64:
            raise ValueError(f"trade_capacity must be >= 64, got {trade_capacity}")
        self.names = np.zeros((max_symbols, NAME_BYTES), np.uint8)
        self.state = np.zeros((max_symbols, STATE_FIELDS), np.int64)
        self.state[:, LAST_DEPTH_TS] = -1
        self.state[:, LAST_TRADE_TS] = -1
        self.state[:, MAX_TRADE_ID] = _NO_TRADE_YET
        self.trades = np.zeros((max_symbols, 4, trade_capacity))
        self.trade_ids = np.zeros((max_symbols, trade_capacity), np.int64)
        self._capacity = trade_capacity
        self.symbols: list[str] = []
        self._index: dict[str, int] = {}

    @property
    def trade_capacity(self) -> int:
        return self._capacity

    def index(self, symbol: str) -> int | None:
        return self._index.get(symbol)

    def register(self, symbol: str) -> int | None:
        """The symbol's row, adding it if there is room; None when the table is full or the
        name cannot be stored (non-ASCII or longer than 32 bytes)."""
        row = self._index.get(symbol)
        if row is not None:
            return row
        encoded = symbol.encode()
        if len(self.symbols) == self.names.shape[0] or not symbol.isascii():
            return None
        if not 0 < len(encoded) <= NAME_BYTES:
            return None
        row = len(self.symbols)
        self.names[row, : len(encoded)] = np.frombuffer(encoded, np.uint8)
        self.state[row, NAME_LENGTH] = len(encoded)
        self.symbols.append(symbol)
        self._index[symbol] = row
        return row

    def trade_total(self, row: int) -> int:
        return self.state.item(row, TRADE_TOTAL)

    def read(self, row: int, first: int, count: int, recv_ns: int) -> tuple[TradePrint, ...]:
        """Trades `first .. first + count - 1` of a symbol (sequence numbers), oldest first.

        Raises LookupError when the ring has already overwritten some of them.
        """
        slots = self._slots(row, first, count)
        prices, sizes, sides, stamps = self.trades[row][:, slots].tolist()
        ids = self.trade_ids[row, slots].tolist()
        symbol = self.symbols[row]
        return tuple(
            TradePrint(
                symbol,
                prices[k],
                sizes[k],
                AggressorSide.BUY if sides[k] > 0 else AggressorSide.SELL,
                str(ids[k]),
                int(stamps[k]),
                recv_ns,
            )
            for k in range(count)
        )

    def read_prices(self, row: int, first: int, count: int) -> list[tuple[float, float, float]]:
        """(price, size, aggressor: +1 buy, -1 sell) of those trades: what matching needs,
        without building `TradePrint`s. Once per trade frame that reaches a resting order."""
        if count == 1:  # most trade frames hold one: scalar reads, no list of slots
            slot = self._first_slot(row, first, 1)
            trades = self.trades
            return [
                (trades.item(row, 0, slot), trades.item(row, 1, slot), trades.item(row, 2, slot))
            ]
        prices, sizes, sides = self.trades[row][:3, self._slots(row, first, count)].tolist()
        return list(zip(prices, sizes, sides, strict=True))

    def _slots(self, row: int, first: int, count: int) -> list[int]:
        slot, capacity = self._first_slot(row, first, count), self._capacity
        return [(slot + k) % capacity for k in range(count)]

    def _first_slot(self, row: int, first: int, count: int) -> int:
        """The ring slot of trade `first`, once trades `first .. first + count - 1` are known
        to be in the ring (LookupError otherwise)."""
        total = self.state.item(row, TRADE_TOTAL)
        capacity = self._capacity
        if first < total - capacity or first + count > total:
            raise LookupError(
                f"trades {first}..{first + count - 1} of {self.symbols[row]} are no longer in "
                f"the ring ({capacity} trades, {total} written)"
            )
        return first % capacity


class Trades(NamedTuple):
    """The new trades of one `trade` frame (duplicates removed), as sequence numbers
    `first .. first + count - 1` in the symbol's ring of the parser's `MarketTape`.

    `prints` materializes them as `TradePrint`s; the ring keeps the last `trade_capacity`
    trades of a symbol, so read them before that many more arrive.
    """

    symbol: str
    symbol_row: int
    tape: MarketTape
    first: int
    count: int
    recv_ns: int

    @property
    def prints(self) -> tuple[TradePrint, ...]:
        return self.tape.read(self.symbol_row, self.first, self.count, self.recv_ns)
