"""Order books per symbol: the latest depth snapshot, and incremental `books` maintenance.

`OrderBook.apply` is the book stage of the fast path: the parser already validated the
snapshot, so applying it is a reference swap. Derived values (mid, microprice, spread) are
computed when asked, not per frame.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from engine.bitget.checksum import CHECKSUM_LEVELS, book_checksum
from engine.feed.events import (
    ASK_PRICE,
    ASK_SIZE,
    BID_PRICE,
    BID_SIZE,
    BookResyncNeeded,
    BookSnapshot,
    BookUpdate,
)


@dataclass(frozen=True, slots=True)
class BookView:
    """A frozen copy of the top of a book, safe to hand to another thread."""

    symbol: str
    bid_prices: tuple[float, ...]
    bid_sizes: tuple[float, ...]
    ask_prices: tuple[float, ...]
    ask_sizes: tuple[float, ...]
    exchange_ts_ms: int
    recv_ns: int

    @property
    def mid(self) -> float:
        return 0.5 * (self.bid_prices[0] + self.ask_prices[0])

    @property
    def spread(self) -> float:
        return self.ask_prices[0] - self.bid_prices[0]

    @property
    def microprice(self) -> float:
        bid_size, ask_size = self.bid_sizes[0], self.ask_sizes[0]
        return (self.bid_prices[0] * ask_size + self.ask_prices[0] * bid_size) / (
            bid_size + ask_size
        )


class OrderBook:
    """The current validated depth of one symbol."""

    __slots__ = ("snapshot", "symbol", "updates")

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol
        self.snapshot: BookSnapshot | None = None
        self.updates = 0

    def apply(self, snapshot: BookSnapshot) -> None:
        self.snapshot = snapshot
        self.updates += 1

    @property
    def ready(self) -> bool:
        return self.snapshot is not None

    def best(self) -> tuple[float, float, float, float]:
        """(bid price, bid size, ask price, ask size) at the touch; NaNs before any book."""
        if self.snapshot is None:
            return (math.nan, math.nan, math.nan, math.nan)
        bid_price, bid_size, ask_price, ask_size = self.snapshot.levels[:, 0].tolist()
        return bid_price, bid_size, ask_price, ask_size

    def mid(self) -> float:
        bid_price, _, ask_price, _ = self.best()
        return 0.5 * (bid_price + ask_price)

    def microprice(self) -> float:
        bid_price, bid_size, ask_price, ask_size = self.best()
        return (bid_price * ask_size + ask_price * bid_size) / (bid_size + ask_size)

    def spread_bps(self) -> float:
        bid_price, _, ask_price, _ = self.best()
        return (ask_price - bid_price) / (0.5 * (bid_price + ask_price)) * 1e4

    def view(self, depth: int = 15) -> BookView | None:
        snapshot = self.snapshot
        if snapshot is None:
            return None
        n_bids = min(depth, snapshot.n_bids)
        n_asks = min(depth, snapshot.n_asks)
        levels = snapshot.levels
        return BookView(
            self.symbol,
            tuple(levels[BID_PRICE, :n_bids].tolist()),
            tuple(levels[BID_SIZE, :n_bids].tolist()),
            tuple(levels[ASK_PRICE, :n_asks].tolist()),
            tuple(levels[ASK_SIZE, :n_asks].tolist()),
            snapshot.exchange_ts_ms,
            snapshot.recv_ns,
        )


class _Side:
    """One side of an incremental book: wire strings per price, prices kept sorted."""

    __slots__ = ("descending", "keys", "levels")

    def __init__(self, descending: bool) -> None:
        self.descending = descending
        self.keys: list[float] = []  # ascending sort keys: -price for bids, price for asks
        self.levels: dict[float, tuple[str, str]] = {}

    def clear(self) -> None:
        self.keys.clear()
        self.levels.clear()

    def apply(self, price_text: str, size_text: str) -> None:
        price = float(price_text)
        key = -price if self.descending else price
        if float(size_text) == 0.0:
            if self.levels.pop(price, None) is not None:
                del self.keys[bisect.bisect_left(self.keys, key)]
            return
        if price not in self.levels:
            bisect.insort(self.keys, key)
        self.levels[price] = (price_text, size_text)

    def top(self, count: int) -> list[tuple[str, str]]:
        sign = -1.0 if self.descending else 1.0
        return [self.levels[sign * key] for key in self.keys[:count]]


class IncrementalBook:
    """Full-depth book of the `books` channel with seq/pseq gap detection and CRC32 checks.

    A gap, a checksum mismatch or a crossed result makes the book unusable until the next
    snapshot; `apply` then answers a `BookResyncNeeded` so the feed can resubscribe.
    """

    def __init__(self, symbol: str, depth: int = 15) -> None:
        self.symbol = symbol
        self.depth = depth
        self._bids = _Side(descending=True)
        self._asks = _Side(descending=False)
        self._last_seq: int | None = None
        self.synced = False
        self.resyncs = 0
        self.checksum_failures = 0
        self.gaps = 0

    def apply(self, update: BookUpdate) -> BookSnapshot | BookResyncNeeded | None:
        """Apply one frame; the new top of book, a resync request, or None while unsynced."""
        if update.is_snapshot:
            self._bids.clear()
            self._asks.clear()
        elif not self.synced:
            return None
        elif update.pseq != self._last_seq:
            self.gaps += 1
            return self._lose_sync(
                update, f"sequence gap: pseq {update.pseq} after seq {self._last_seq}"
            )
        for price_text, size_text in update.bids:
            self._bids.apply(price_text, size_text)
        for price_text, size_text in update.asks:
            self._asks.apply(price_text, size_text)
        self._last_seq = update.seq
        if update.checksum != 0:
            expected = book_checksum(
                self._bids.top(CHECKSUM_LEVELS), self._asks.top(CHECKSUM_LEVELS)
            )
            if expected != update.checksum:
                self.checksum_failures += 1
                return self._lose_sync(
                    update, f"checksum mismatch: frame {update.checksum}, book {expected}"
                )
        bids = self._bids.top(self.depth)
        asks = self._asks.top(self.depth)
        if not bids or not asks:
            return self._lose_sync(update, "empty side after update")
        if float(bids[0][0]) >= float(asks[0][0]):
            return self._lose_sync(update, "crossed after update")
        self.synced = True
        levels = np.zeros((4, self.depth))
        for column, (price_text, size_text) in enumerate(bids):
            levels[BID_PRICE, column] = float(price_text)
            levels[BID_SIZE, column] = float(size_text)
        for column, (price_text, size_text) in enumerate(asks):
            levels[ASK_PRICE, column] = float(price_text)
            levels[ASK_SIZE, column] = float(size_text)
        return BookSnapshot(
            self.symbol,
            "books",
            levels,
            len(bids),
            len(asks),
            update.exchange_ts_ms,
            update.seq,
            update.recv_ns,
        )

    def _lose_sync(self, update: BookUpdate, reason: str) -> BookResyncNeeded:
        self.synced = False
        self.resyncs += 1
        self._bids.clear()
        self._asks.clear()
        self._last_seq = None
        return BookResyncNeeded(self.symbol, reason, update.recv_ns)
