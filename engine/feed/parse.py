"""Bitget v2 public frames -> typed events, rejecting bad input with a counted reason.

Depth snapshots and trade frames first go through the numba scanner (`frame_kernel`);
anything it does not accept takes the orjson path, which decides what the frame is or why it
is rejected. Per-symbol checks (time going backwards, duplicate trades) are shared by both.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numba
import numpy as np
import orjson

from engine.feed.events import (
    BookSnapshot,
    BookUpdate,
    ChannelAck,
    ChannelError,
    Pong,
)
from engine.feed.frame_kernel import DEPTH, OK, TRADE_ROWS, scan_frame
from engine.feed.tape import (
    ADMITTED,
    DUPLICATE,
    LAST_DEPTH_TS,
    OLDER_THAN_LAST,
    MarketTape,
    Trades,
    admit_trade,
)

ParsedFrame = BookSnapshot | BookUpdate | Trades | ChannelAck | ChannelError | Pong

DEPTH_CHANNELS = {"books1": 1, "books5": 5, "books15": 15}
INCREMENTAL_CHANNEL = "books"
TRADE_CHANNEL = "trade"
OPEN_PARSER_SYMBOLS = 8
"""The symbols a parser named none registers, the first seen (frames of more are refused)."""
_DEPTH_NAMES = {1: "books1", 5: "books5", 15: "books15"}
_SIDES = {"buy": 1.0, "sell": -1.0}
_INT64_MAX = 2**63 - 1
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


class FrameParser:
    """Parses raw public-websocket frames of the `symbols` named (room for every one of them),
    or, named none, of the first `max_symbols` seen (`OPEN_PARSER_SYMBOLS` by default).

    Depth snapshot arrays come from a ring of `pool_size` preallocated buffers, so the hot path
    allocates none; a `BookSnapshot.levels` stays valid for the next `pool_size - 1` depth
    frames, and a symbol's latest one until that symbol's next (the ring steps over it), so an
    `OrderBook` holding it is right however long its symbol is quiet while another streams.
    Consumers that keep an older book (the UI, Kev's context) copy it. Accepted trades go into
    `tape`, the per-symbol trade rings that `Trades` events point into.
    """

    def __init__(
        self,
        symbols: Iterable[str] | None = None,
        *,
        depth_capacity: int = 15,
        pool_size: int = 1024,
        trade_capacity: int = 8192,
        max_symbols: int | None = None,
        max_trades_per_frame: int = 64,
    ) -> None:
        allowed = None if symbols is None else frozenset(symbols)
        if max_symbols is None:  # room for every symbol named, or for the first few seen
            max_symbols = OPEN_PARSER_SYMBOLS if allowed is None else len(allowed)
        elif allowed is not None and len(allowed) > max_symbols:
            raise ValueError(
                f"{len(allowed)} symbols named, over max_symbols ({max_symbols}): the others' "
                "frames would be refused"
            )
        if pool_size <= max_symbols or pool_size & (pool_size - 1):
            raise ValueError(
                f"pool_size must be a power of two above max_symbols ({max_symbols}): every "
                f"symbol's latest book keeps its buffer; got {pool_size}"
            )
        if depth_capacity < 1:
            raise ValueError(f"depth_capacity must be >= 1, got {depth_capacity}")
        self.stats = ParseStats()
        self._allowed = allowed
        self.tape = MarketTape(max_symbols, trade_capacity)
        self._pool = np.zeros((pool_size, 4, depth_capacity))
        self._trade_rows = np.zeros((TRADE_ROWS, max_trades_per_frame))
        self._slots = list(self._pool)
        self._slot_mask = pool_size - 1
        self._next_slot = 0
        self._latest_slot = [-1] * max_symbols
        """Per tape row, the slot of the symbol's latest book; the ring steps over these."""
        self._last_incremental_ts: dict[str, int] = {}
        tape = self.tape
        example = (
            b"",
            self._slots[0],
            self._trade_rows,
            tape.names,
            tape.state,
            tape.trades,
            tape.trade_ids,
        )
        self._scan = scan_frame.compile(tuple(numba.typeof(value) for value in example))
        """`scan_frame`'s compiled entry for a bytes frame, called without numba's dispatch:
        the dispatch types a bytes argument in Python, 0.3 us of the scan's 1 us. The entry
        converts each argument by the types it was compiled for unchecked, so it is called
        only with bytes, and the rest are this parser's own arrays."""

    def parse(self, raw: bytes, recv_ns: int) -> ParsedFrame | None:
        """One frame -> event, or None when it was rejected (and counted)."""
        stats = self.stats
        stats.frames += 1
        levels = self._slots[self._next_slot]
        tape = self.tape
        scan = self._scan if type(raw) is bytes else scan_frame
        status, kind, row, depth, count_a, count_b, count_c, value_a, value_b = scan(
            raw, levels, self._trade_rows, tape.names, tape.state, tape.trades, tape.trade_ids
        )
        if status == OK:
            stats.fast_path += 1
            if kind == DEPTH:
                self._keep_latest(row)
                stats.depth_snapshots += 1
                # tuple.__new__ skips NamedTuple's Python-level __new__ (~0.2 us).
                return _new_tuple(
                    BookSnapshot,
                    (
                        tape.symbols[row],
                        _DEPTH_NAMES[depth],
                        levels,
                        count_a,
                        count_b,
                        value_a,
                        value_b,
                        recv_ns,
                    ),
                )
            if count_b or count_c:
                self._count_refused_trades(count_b, count_c)
            if count_a == 0:
                return None
            stats.trade_frames += 1
            stats.trades += count_a
            return _new_tuple(Trades, (tape.symbols[row], row, tape, value_a, count_a, recv_ns))
        try:
            return self._parse_general(raw, recv_ns)
        except _Rejected as rejected:
            stats.rejected[rejected.reason] += 1
            return None

    def _keep_latest(self, row: int) -> None:
        """The slot just filled holds `row`'s latest book until its next: move the ring on to
        the next slot no symbol's latest book holds."""
        latest = self._latest_slot
        latest[row] = self._next_slot
        mask = self._slot_mask
        slot = (self._next_slot + 1) & mask
        while slot in latest:  # at most max_symbols steps: the pool is larger
            slot = (slot + 1) & mask
        self._next_slot = slot

    def _count_refused_trades(self, duplicates: int, older: int) -> None:
        rejected = self.stats.rejected
        if duplicates:
            rejected[RejectReason.DUPLICATE_TRADE] += duplicates
        if older:
            rejected[RejectReason.TS_BACKWARDS] += older

    def _row(self, symbol: str) -> int:
        row = self.tape.index(symbol)
        if row is None:
            if self._allowed is not None and symbol not in self._allowed:
                raise _Rejected(RejectReason.UNKNOWN_SYMBOL)
            row = self.tape.register(symbol)
            if row is None:
                raise _Rejected(RejectReason.UNKNOWN_SYMBOL)
        return row

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
            return self._depth(self._row(symbol), channel, _object(data[0]), recv_ns)
        if channel == INCREMENTAL_CHANNEL:
            action = _required(message, "action", str)
            return self._incremental(symbol, action, _object(data[0]), recv_ns)
        if channel == TRADE_CHANNEL:
            return self._trades(self._row(symbol), data, recv_ns)
        raise _Rejected(RejectReason.UNKNOWN_CHANNEL)

    def _control(self, message: dict) -> ChannelAck | ChannelError:
        event = message["event"]
        arg = message.get("arg")
        arg = arg if isinstance(arg, dict) else {}
        channel = _control_text(arg.get("channel", ""))
        symbol = _control_text(arg.get("instId", ""))
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
                code,
                _control_text(message.get("msg", "")),
                channel,
                symbol,
                _control_text(message.get("op", "")),
            )
        self.stats.control -= 1
        raise _Rejected(RejectReason.UNKNOWN_EVENT)

    def _depth(self, row: int, channel: str, data: dict, recv_ns: int) -> BookSnapshot:
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
        state = self.tape.state
        if ts < state[row, LAST_DEPTH_TS]:
            raise _Rejected(RejectReason.TS_BACKWARDS)
        state[row, LAST_DEPTH_TS] = ts
        self._keep_latest(row)
        self.stats.depth_snapshots += 1
        return BookSnapshot(
            self.tape.symbols[row], channel, levels, n_bids, n_asks, ts, seq, recv_ns
        )

    def _incremental(self, symbol: str, action: str, data: dict, recv_ns: int) -> BookUpdate:
        if action not in ("snapshot", "update"):
            raise _Rejected(RejectReason.BAD_FIELD)
        is_snapshot = action == "snapshot"
        bids = _string_levels(_required(data, "bids", list), allow_zero=not is_snapshot)
        asks = _string_levels(_required(data, "asks", list), allow_zero=not is_snapshot)
        ts = _timestamp(data)
        seq = _optional_int(data, "seq")
        pseq = _optional_int(data, "pseq")
        checksum = _optional_int(data, "checksum")
        if self._allowed is not None and symbol not in self._allowed:
            raise _Rejected(RejectReason.UNKNOWN_SYMBOL)
        if ts < self._last_incremental_ts.get(symbol, -1):
            raise _Rejected(RejectReason.TS_BACKWARDS)
        self._last_incremental_ts[symbol] = ts
        self.stats.book_updates += 1
        return BookUpdate(symbol, is_snapshot, bids, asks, checksum, seq, pseq, ts, recv_ns)

    def _trades(self, row: int, data: list[object], recv_ns: int) -> Trades | None:
        tape = self.tape
        first = tape.trade_total(row)
        verdicts = [0, 0, 0]  # by admit_trade's answer: ADMITTED, DUPLICATE, OLDER_THAN_LAST
        rejected = self.stats.rejected
        for item in reversed(data):  # Bitget sends newest first
            try:
                price, size, side, ts, trade_id = _trade(item)
            except _Rejected as bad:
                rejected[bad.reason] += 1
                continue
            verdict = admit_trade(
                tape.state, tape.trades, tape.trade_ids, row, price, size, side, ts, trade_id
            )
            verdicts[verdict] += 1
        admitted = verdicts[ADMITTED]
        self._count_refused_trades(verdicts[DUPLICATE], verdicts[OLDER_THAN_LAST])
        if admitted == 0:
            return None
        self.stats.trade_frames += 1
        self.stats.trades += admitted
        return Trades(tape.symbols[row], row, tape, first, admitted, recv_ns)


def _required(container: dict, key: str, kind: type):
    value = container.get(key)
    if value is None:
        raise _Rejected(RejectReason.MISSING_FIELD)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise _Rejected(RejectReason.BAD_FIELD)
    return value


def _control_text(value: object) -> str:
    """A control frame's text field. A list or object becomes "": str() of one nested deeper
    than the recursion limit (orjson reads 1024 levels) raises RecursionError."""
    if isinstance(value, str):
        return value
    return str(value) if isinstance(value, int | float) else ""


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


def _level(level: object, allow_zero: bool = False) -> tuple[float, float]:
    """A `[price, size]` pair as floats; a zero size (a level removed) only where allowed."""
    if not isinstance(level, list) or len(level) != 2:
        raise _Rejected(RejectReason.BAD_FIELD)
    price = _number(level[0])
    size = _number(level[1])
    if not (math.isfinite(price) and price > 0.0):
        raise _Rejected(RejectReason.BAD_PRICE)
    if not math.isfinite(size) or size < 0.0 or (size == 0.0 and not allow_zero):
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
        _level(level, allow_zero)
        out.append((level[0], level[1]))
    return tuple(out)


_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
"""Times, sequence numbers and checksums live in int64 arrays (the tape, the books): a value
beyond is garbage, rejected, not an OverflowError."""


def _timestamp(container: dict) -> int:
    value = container.get("ts")
    if value is None:
        raise _Rejected(RejectReason.MISSING_FIELD)
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 18:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= _INT64_MAX:
        return value
    raise _Rejected(RejectReason.BAD_FIELD)


def _optional_int(container: dict, key: str) -> int:
    value = container.get(key, 0)
    if isinstance(value, int) and not isinstance(value, bool) and _INT64_MIN <= value <= _INT64_MAX:
        return value
    raise _Rejected(RejectReason.BAD_FIELD)


def _trade(item: object) -> tuple[float, float, float, int, int]:
    """(price, size, side +1/-1, exchange ts, trade id) of one trade object, validated."""
    item = _object(item)
    price = _number(_required(item, "price", str))
    size = _number(_required(item, "size", str))
    if not (math.isfinite(price) and price > 0.0):
        raise _Rejected(RejectReason.BAD_PRICE)
    if not (math.isfinite(size) and size > 0.0):
        raise _Rejected(RejectReason.BAD_SIZE)
    side = _SIDES.get(_required(item, "side", str))
    if side is None:
        raise _Rejected(RejectReason.BAD_FIELD)
    trade_id_text = _required(item, "tradeId", str)
    # Bitget trade ids are decimal integers; the tape keeps them as int64.
    if not (trade_id_text.isascii() and trade_id_text.isdigit()):
        raise _Rejected(RejectReason.BAD_FIELD)
    trade_id = int(trade_id_text)
    if trade_id > _INT64_MAX:
        raise _Rejected(RejectReason.BAD_FIELD)
    return price, size, side, _timestamp(item), trade_id
