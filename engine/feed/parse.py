"""Bitget v2 public frames -> typed events, rejecting bad input with a counted reason.

Depth snapshots and trade frames first go through the numba scanner (`frame_kernel`);
anything it does not accept takes the orjson path, which decides what the frame is or why it
is rejected. Per-symbol checks (time going backwards, duplicate trades) are shared by both.
"""

from __future__ import annotations

import enum
import math
from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import orjson

from engine.feed.events import (
    AggressorSide,
    BookSnapshot,
    BookUpdate,
    ChannelAck,
    ChannelError,
    ParsedFrame,
    Pong,
    TradePrint,
    Trades,
)
from engine.feed.frame_kernel import (
    DEPTH,
    OK,
    TRADE_ID_END,
    TRADE_ID_START,
    TRADE_PRICE,
    TRADE_SIDE,
    TRADE_SIZE,
    TRADE_TS,
    scan_frame,
)

DEPTH_CHANNELS = {"books1": 1, "books5": 5, "books15": 15}
INCREMENTAL_CHANNEL = "books"
TRADE_CHANNEL = "trade"
_DEPTH_NAMES = {1: "books1", 5: "books5", 15: "books15"}
_BUY, _SELL = AggressorSide.BUY, AggressorSide.SELL
_AGGRESSOR = {"buy": _BUY, "sell": _SELL}
_new_tuple = tuple.__new__


class RejectReason(enum.StrEnum):
    NOT_JSON = "not_json"
    NOT_OBJECT = "not_object"
    UNKNOWN_EVENT = "unknown_event"
    UNKNOWN_CHANNEL = "unknown_channel"
    UNKNOWN_SYMBOL = "unknown_symbol"
    MISSING_FIELD = "missing_field"
    BAD_FIELD = "bad_field"
    BAD_PRICE = "bad_price"
    BAD_SIZE = "bad_size"
    TOO_MANY_LEVELS = "too_many_levels"
    EMPTY_BOOK = "empty_book"
    UNSORTED_BOOK = "unsorted_book"
    CROSSED_BOOK = "crossed_book"
    TS_BACKWARDS = "ts_backwards"
    DUPLICATE_TRADE = "duplicate_trade"


class _Rejected(Exception):
    def __init__(self, reason: RejectReason) -> None:
        self.reason = reason


@dataclass(slots=True)
class ParseStats:
    """What the parser has seen; `rejected` counts frames (or single trades) by reason."""

    frames: int = 0
    depth_snapshots: int = 0
    fast_path: int = 0
    book_updates: int = 0
    trade_frames: int = 0
    trades: int = 0
    control: int = 0
    rejected: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        return {
            "frames": self.frames,
            "depth_snapshots": self.depth_snapshots,
            "fast_path": self.fast_path,
            "book_updates": self.book_updates,
            "trade_frames": self.trade_frames,
            "trades": self.trades,
            "control": self.control,
            "rejected": dict(self.rejected),
        }


class _SymbolState:
    __slots__ = (
        "last_depth_ts",
        "last_incremental_ts",
        "last_trade_ts",
        "symbol",
        "trade_id_order",
        "trade_ids",
    )

    def __init__(self, symbol: str, trade_id_memory: int) -> None:
        self.symbol = symbol
        self.last_depth_ts = -1
        self.last_incremental_ts = -1
        self.last_trade_ts = -1
        self.trade_ids: set[str] = set()
        self.trade_id_order: deque[str] = deque(maxlen=trade_id_memory)

    def remember_trade(self, trade_id: str) -> None:
        order = self.trade_id_order
        if len(order) == order.maxlen:
            self.trade_ids.discard(order[0])
        order.append(trade_id)
        self.trade_ids.add(trade_id)


class FrameParser:
    """Parses raw public-websocket frames of any number of symbols.

    Depth snapshot arrays come from a ring of `pool_size` preallocated buffers, so the hot path
    allocates none; a `BookSnapshot.levels` stays valid for the next `pool_size - 1` depth
    frames. Consumers that keep a book longer (the UI, Kev's context) copy it.
    """

    def __init__(
        self,
        symbols: Iterable[str] | None = None,
        *,
        depth_capacity: int = 15,
        pool_size: int = 1024,
        trade_id_memory: int = 8192,
        max_trades_per_frame: int = 64,
    ) -> None:
        if pool_size < 2 or pool_size & (pool_size - 1):
            raise ValueError(f"pool_size must be a power of two >= 2, got {pool_size}")
        if depth_capacity < 1:
            raise ValueError(f"depth_capacity must be >= 1, got {depth_capacity}")
        self.stats = ParseStats()
        self._allowed = None if symbols is None else frozenset(symbols)
        self._depth_capacity = depth_capacity
        self._trade_id_memory = trade_id_memory
        self._pool = np.zeros((pool_size, 4, depth_capacity))
        self._trade_rows = np.zeros((6, max_trades_per_frame))
        self._slots = list(self._pool)
        self._slot_mask = pool_size - 1
        self._next_slot = 0
        self._states: dict[str, _SymbolState] = {}
        self._states_by_raw: dict[bytes, _SymbolState] = {}

    def parse(self, raw: bytes, recv_ns: int) -> ParsedFrame | None:
        """One frame -> event, or None when it was rejected (and counted)."""
        stats = self.stats
        stats.frames += 1
        levels = self._slots[self._next_slot]
        status, kind, sym_start, sym_end, depth, count_a, count_b, ts, seq = scan_frame(
            raw, levels, self._trade_rows
        )
        if status == OK:
            state = self._states_by_raw.get(raw[sym_start:sym_end])
            if state is not None:
                if kind == DEPTH:
                    if ts >= state.last_depth_ts:
                        state.last_depth_ts = ts
                        self._next_slot = (self._next_slot + 1) & self._slot_mask
                        stats.depth_snapshots += 1
                        stats.fast_path += 1
                        # tuple.__new__ skips NamedTuple's Python-level __new__ (~0.2 us).
                        return _new_tuple(
                            BookSnapshot,
                            (
                                state.symbol,
                                _DEPTH_NAMES[depth],
                                levels,
                                count_a,
                                count_b,
                                ts,
                                seq,
                                recv_ns,
                            ),
                        )
                else:
                    stats.fast_path += 1
                    return self._admit_trades(
                        state, self._scanned_trades(state.symbol, raw, count_a, recv_ns), recv_ns
                    )
        try:
            return self._parse_general(raw, recv_ns)
        except _Rejected as rejected:
            stats.rejected[rejected.reason] += 1
            return None

    def _scanned_trades(
        self, symbol: str, raw: bytes, count: int, recv_ns: int
    ) -> list[TradePrint]:
        rows = self._trade_rows[:, :count].tolist()
        prices, sizes, sides = rows[TRADE_PRICE], rows[TRADE_SIZE], rows[TRADE_SIDE]
        timestamps, id_starts, id_ends = rows[TRADE_TS], rows[TRADE_ID_START], rows[TRADE_ID_END]
        return [
            _new_tuple(
                TradePrint,
                (
                    symbol,
                    prices[k],
                    sizes[k],
                    _BUY if sides[k] > 0 else _SELL,
                    raw[int(id_starts[k]) : int(id_ends[k])].decode(),
                    int(timestamps[k]),
                    recv_ns,
                ),
            )
            for k in range(count - 1, -1, -1)  # Bitget sends newest first
        ]

    def _state(self, symbol: str) -> _SymbolState:
        state = self._states.get(symbol)
        if state is None:
            if self._allowed is not None and symbol not in self._allowed:
                raise _Rejected(RejectReason.UNKNOWN_SYMBOL)
            state = _SymbolState(symbol, self._trade_id_memory)
            self._states[symbol] = state
            self._states_by_raw[symbol.encode()] = state
        return state

    def _parse_general(self, raw: bytes, recv_ns: int) -> ParsedFrame | None:
        if raw == b"pong":
            self.stats.control += 1
            return Pong(recv_ns)
        try:
            message = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise _Rejected(RejectReason.NOT_JSON) from None
        if not isinstance(message, dict):
            raise _Rejected(RejectReason.NOT_OBJECT)
        if "event" in message:
            return self._control(message)
        arg = _required(message, "arg", dict)
        channel = _required(arg, "channel", str)
        symbol = _required(arg, "instId", str)
        data = _required(message, "data", list)
        if not data:
            raise _Rejected(RejectReason.MISSING_FIELD)
        if channel in DEPTH_CHANNELS:
            return self._depth(self._state(symbol), channel, _object(data[0]), recv_ns)
        if channel == INCREMENTAL_CHANNEL:
            action = _required(message, "action", str)
            return self._incremental(self._state(symbol), action, _object(data[0]), recv_ns)
        if channel == TRADE_CHANNEL:
            return self._trades(self._state(symbol), data, recv_ns)
        raise _Rejected(RejectReason.UNKNOWN_CHANNEL)

    def _control(self, message: dict) -> ChannelAck | ChannelError:
        event = message["event"]
        arg = message.get("arg")
        arg = arg if isinstance(arg, dict) else {}
        channel = str(arg.get("channel", ""))
        symbol = str(arg.get("instId", ""))
        self.stats.control += 1
        if event in ("subscribe", "unsubscribe", "login"):
            return ChannelAck(event, channel, symbol)
        if event == "error":
            code = message.get("code")
            try:
                code = int(code)
            except (TypeError, ValueError):
                code = -1
            return ChannelError(
                code, str(message.get("msg", "")), channel, symbol, str(message.get("op", ""))
            )
        self.stats.control -= 1
        raise _Rejected(RejectReason.UNKNOWN_EVENT)

    def _depth(self, state: _SymbolState, channel: str, data: dict, recv_ns: int) -> BookSnapshot:
        levels = self._slots[self._next_slot]
        n_bids = _fill_side(levels, 0, _required(data, "bids", list))
        n_asks = _fill_side(levels, 2, _required(data, "asks", list))
        if n_bids == 0 or n_asks == 0:
            raise _Rejected(RejectReason.EMPTY_BOOK)
        bid_prices = levels[0, :n_bids]
        ask_prices = levels[2, :n_asks]
        if np.any(bid_prices[1:] >= bid_prices[:-1]) or np.any(ask_prices[1:] <= ask_prices[:-1]):
            raise _Rejected(RejectReason.UNSORTED_BOOK)
        if bid_prices[0] >= ask_prices[0]:
            raise _Rejected(RejectReason.CROSSED_BOOK)
        ts = _timestamp(data)
        seq = _optional_int(data, "seq")
        if ts < state.last_depth_ts:
            raise _Rejected(RejectReason.TS_BACKWARDS)
        state.last_depth_ts = ts
        self._next_slot = (self._next_slot + 1) & self._slot_mask
        self.stats.depth_snapshots += 1
        return BookSnapshot(state.symbol, channel, levels, n_bids, n_asks, ts, seq, recv_ns)

    def _incremental(
        self, state: _SymbolState, action: str, data: dict, recv_ns: int
    ) -> BookUpdate:
        if action not in ("snapshot", "update"):
            raise _Rejected(RejectReason.BAD_FIELD)
        is_snapshot = action == "snapshot"
        bids = _string_levels(_required(data, "bids", list), allow_zero=not is_snapshot)
        asks = _string_levels(_required(data, "asks", list), allow_zero=not is_snapshot)
        ts = _timestamp(data)
        seq = _optional_int(data, "seq")
        pseq = _optional_int(data, "pseq")
        checksum = _optional_int(data, "checksum")
        if ts < state.last_incremental_ts:
            raise _Rejected(RejectReason.TS_BACKWARDS)
        state.last_incremental_ts = ts
        self.stats.book_updates += 1
        return BookUpdate(state.symbol, is_snapshot, bids, asks, checksum, seq, pseq, ts, recv_ns)

    def _trades(self, state: _SymbolState, data: list, recv_ns: int) -> Trades | None:
        candidates = []
        rejected = self.stats.rejected
        for item in reversed(data):  # Bitget sends newest first
            try:
                candidates.append(_trade(state.symbol, item, recv_ns))
            except _Rejected as bad:
                rejected[bad.reason] += 1
        return self._admit_trades(state, candidates, recv_ns)

    def _admit_trades(
        self, state: _SymbolState, candidates: list[TradePrint], recv_ns: int
    ) -> Trades | None:
        """Drop duplicates and trades older than the last one seen; oldest first in, and out."""
        prints = []
        rejected = self.stats.rejected
        for trade in candidates:
            if trade.trade_id in state.trade_ids:
                rejected[RejectReason.DUPLICATE_TRADE] += 1
            elif trade.exchange_ts_ms < state.last_trade_ts:
                rejected[RejectReason.TS_BACKWARDS] += 1
            else:
                state.last_trade_ts = trade.exchange_ts_ms
                state.remember_trade(trade.trade_id)
                prints.append(trade)
        if not prints:
            return None
        self.stats.trade_frames += 1
        self.stats.trades += len(prints)
        return Trades(state.symbol, tuple(prints), recv_ns)


def _required(container: dict, key: str, kind: type):
    value = container.get(key)
    if value is None:
        raise _Rejected(RejectReason.MISSING_FIELD)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _Rejected(RejectReason.BAD_FIELD)
    return value


def _object(value: object) -> dict:
    if not isinstance(value, dict):
        raise _Rejected(RejectReason.BAD_FIELD)
    return value


def _number(value: object) -> float:
    """A finite float from a decimal string (or a JSON number), else BAD_FIELD."""
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise _Rejected(RejectReason.BAD_FIELD) from None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    else:
        raise _Rejected(RejectReason.BAD_FIELD)
    return number


def _level(level: object) -> tuple[float, float]:
    if not isinstance(level, list) or len(level) != 2:
        raise _Rejected(RejectReason.BAD_FIELD)
    price = _number(level[0])
    size = _number(level[1])
    if not (math.isfinite(price) and price > 0.0):
        raise _Rejected(RejectReason.BAD_PRICE)
    if not (math.isfinite(size) and size > 0.0):
        raise _Rejected(RejectReason.BAD_SIZE)
    return price, size


def _fill_side(levels: np.ndarray, row: int, side: list) -> int:
    if len(side) > levels.shape[1]:
        raise _Rejected(RejectReason.TOO_MANY_LEVELS)
    for column, level in enumerate(side):
        levels[row, column], levels[row + 1, column] = _level(level)
    return len(side)


def _string_levels(side: list, *, allow_zero: bool) -> tuple[tuple[str, str], ...]:
    out = []
    for level in side:
        if not (
            isinstance(level, list)
            and len(level) == 2
            and isinstance(level[0], str)
            and isinstance(level[1], str)
        ):
            raise _Rejected(RejectReason.BAD_FIELD)
        price = _number(level[0])
        size = _number(level[1])
        if not (math.isfinite(price) and price > 0.0):
            raise _Rejected(RejectReason.BAD_PRICE)
        if not math.isfinite(size) or size < 0.0 or (size == 0.0 and not allow_zero):
            raise _Rejected(RejectReason.BAD_SIZE)
        out.append((level[0], level[1]))
    return tuple(out)


def _timestamp(container: dict) -> int:
    value = container.get("ts")
    if value is None:
        raise _Rejected(RejectReason.MISSING_FIELD)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise _Rejected(RejectReason.BAD_FIELD)


def _optional_int(container: dict, key: str) -> int:
    value = container.get(key, 0)
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _Rejected(RejectReason.BAD_FIELD)


def _trade(symbol: str, item: object, recv_ns: int) -> TradePrint:
    item = _object(item)
    price = _number(_required(item, "price", str))
    size = _number(_required(item, "size", str))
    if not (math.isfinite(price) and price > 0.0):
        raise _Rejected(RejectReason.BAD_PRICE)
    if not (math.isfinite(size) and size > 0.0):
        raise _Rejected(RejectReason.BAD_SIZE)
    aggressor = _AGGRESSOR.get(_required(item, "side", str))
    if aggressor is None:
        raise _Rejected(RejectReason.BAD_FIELD)
    trade_id = _required(item, "tradeId", str)
    if not trade_id:
        raise _Rejected(RejectReason.BAD_FIELD)
    return TradePrint(symbol, price, size, aggressor, trade_id, _timestamp(item), recv_ns)
