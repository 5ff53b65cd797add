"""Numba scanner for depth snapshot (books1/5/15) and trade frames: raw bytes -> float64 rows.

It accepts only a strict subset of JSON (no escapes, no non-ASCII, no exponents, only the
keys Bitget sends) and answers FALLBACK for everything else, so the orjson path in
`engine.feed.parse` stays the single authority on what a frame means and why it is rejected.
Whatever the scanner accepts is valid JSON that the orjson path would accept with exactly the
same numbers: decimals are converted exactly (mantissa < 2**53 divided by an exact power of
ten is correctly rounded, the same double that `float(text)` gives).

The fast path's kernels (here, `tape`, `laya.features`, `laya.native`) keep the GIL: released
for a few microseconds it only let the journal's writer thread take it in the middle of a
frame, and the frame then waited to win it back (books15 parse inside a cm backtest: 6.7 us a
frame with `nogil`, 4.8 us without; 3 us with no other thread).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from engine.feed.tape import (
    ADMITTED,
    DUPLICATE,
    LAST_DEPTH_TS,
    TRADE_TOTAL,
    admit_trade,
    find_symbol,
)

OK = 0
FALLBACK = 1

DEPTH = 1
TRADE = 2
"""Frame kinds in `scan_frame`'s answer."""

TRADE_PRICE, TRADE_SIZE, TRADE_SIDE, TRADE_TS, TRADE_ID = range(5)
"""Rows of the trades scratch array (the id row is read through an int64 view)."""
TRADE_ROWS = 5

_POW10 = np.array([10.0**k for k in range(23)])
_MAX_MANTISSA = 2**53
_INT64_MAX = 2**63 - 1

_KEY_ACTION = np.frombuffer(b"action", np.uint8)
_KEY_ARG = np.frombuffer(b"arg", np.uint8)
_KEY_DATA = np.frombuffer(b"data", np.uint8)
_KEY_TS = np.frombuffer(b"ts", np.uint8)
_KEY_INST_TYPE = np.frombuffer(b"instType", np.uint8)
_KEY_CHANNEL = np.frombuffer(b"channel", np.uint8)
_KEY_INST_ID = np.frombuffer(b"instId", np.uint8)
_KEY_ASKS = np.frombuffer(b"asks", np.uint8)
_KEY_BIDS = np.frombuffer(b"bids", np.uint8)
_KEY_CHECKSUM = np.frombuffer(b"checksum", np.uint8)
_KEY_SEQ = np.frombuffer(b"seq", np.uint8)
_KEY_PSEQ = np.frombuffer(b"pseq", np.uint8)
_VALUE_SNAPSHOT = np.frombuffer(b"snapshot", np.uint8)
_VALUE_BOOKS = np.frombuffer(b"books", np.uint8)
_VALUE_TRADE = np.frombuffer(b"trade", np.uint8)
_VALUE_BUY = np.frombuffer(b"buy", np.uint8)
_VALUE_SELL = np.frombuffer(b"sell", np.uint8)
_KEY_PRICE = np.frombuffer(b"price", np.uint8)
_KEY_SIZE = np.frombuffer(b"size", np.uint8)
_KEY_SIDE = np.frombuffer(b"side", np.uint8)
_KEY_TRADE_ID = np.frombuffer(b"tradeId", np.uint8)

_TRADE_CHANNEL = 100

_QUOTE, _COMMA, _COLON = 34, 44, 58
_LBRACE, _RBRACE, _LBRACKET, _RBRACKET = 123, 125, 91, 93
_MINUS, _DOT, _ZERO, _NINE = 45, 46, 48, 57


@njit(cache=True, _nrt=False, inline="always")
def _skip_ws(buf, i, n):
    while i < n:
        c = buf[i]
        if c == 32 or c == 10 or c == 13 or c == 9:
            i += 1
        else:
            break
    return i


@njit(cache=True, _nrt=False, inline="always")
def _string_end(buf, i, n):
    """Index of the closing quote of the plain string opening at i, or -1."""
    if i >= n or buf[i] != _QUOTE:
        return -1
    i += 1
    while i < n:
        c = buf[i]
        if c == _QUOTE:
            return i
        if c == 92 or c < 32 or c >= 128:  # escape, control or non-ASCII: leave it to orjson
            return -1
        i += 1
    return -1


@njit(cache=True, _nrt=False, inline="always")
def _equals(buf, start, end, word):
    if end - start != word.shape[0]:
        return False
    for k in range(word.shape[0]):  # noqa: SIM110 - no generators in nopython mode
        if buf[start + k] != word[k]:
            return False
    return True


@njit(cache=True, _nrt=False, inline="always")
def _quoted_decimal(buf, i, n):
    """Exact float of the plain unsigned decimal string opening at i, and the index after it.

    Returns (-1.0, -1) for anything else (exponent, sign, escapes, more than 2**53 or more than
    22 fraction digits), which sends the frame to the orjson path.
    """
    if i >= n or buf[i] != _QUOTE:
        return -1.0, -1
    i += 1
    mantissa = 0
    digits = 0
    fraction_digits = 0
    seen_dot = False
    while i < n:
        c = buf[i]
        if _ZERO <= c <= _NINE:
            mantissa = mantissa * 10 + (c - _ZERO)
            if mantissa > _MAX_MANTISSA:
                return -1.0, -1
            digits += 1
            if seen_dot:
                fraction_digits += 1
        elif c == _QUOTE:
            if digits == 0 or fraction_digits > 22:
                return -1.0, -1
            return mantissa / _POW10[fraction_digits], i + 1
        elif c == _DOT and not seen_dot:
            seen_dot = True
        else:
            return -1.0, -1
        i += 1
    return -1.0, -1


@njit(cache=True, _nrt=False, inline="always")
def _integer_end(buf, i, n):
    """End index of a JSON integer starting at i (optional minus), or -1."""
    start = i
    if i < n and buf[i] == _MINUS:
        i += 1
    first = i
    while i < n and _ZERO <= buf[i] <= _NINE:
        i += 1
    count = i - first
    if count == 0 or count > 18 or (count > 1 and buf[first] == _ZERO):
        return -1
    if i < n and (buf[i] == _DOT or buf[i] == 101 or buf[i] == 69):  # fraction or exponent
        return -1
    return i if i > start else -1


@njit(cache=True, _nrt=False, inline="always")
def _integer_value(buf, start, end):
    negative = buf[start] == _MINUS
    value = 0
    for k in range(start + 1 if negative else start, end):
        value = value * 10 + (buf[k] - _ZERO)
    return -value if negative else value


@njit(cache=True, _nrt=False)
def _levels(buf, i, n, levels, price_row, size_row):
    """Parse `[["p","s"],...]` at i into two rows; returns (next index, count) or (-1, 0)."""
    capacity = levels.shape[1]
    if i >= n or buf[i] != _LBRACKET:
        return -1, 0
    i = _skip_ws(buf, i + 1, n)
    count = 0
    if i < n and buf[i] == _RBRACKET:
        return i + 1, 0
    while True:
        if count == capacity or i >= n or buf[i] != _LBRACKET:
            return -1, 0
        price, i = _quoted_decimal(buf, _skip_ws(buf, i + 1, n), n)
        if i < 0:
            return -1, 0
        i = _skip_ws(buf, i, n)
        if i >= n or buf[i] != _COMMA:
            return -1, 0
        size, i = _quoted_decimal(buf, _skip_ws(buf, i + 1, n), n)
        if i < 0:
            return -1, 0
        i = _skip_ws(buf, i, n)
        if i >= n or buf[i] != _RBRACKET or price <= 0.0 or size <= 0.0:
            return -1, 0
        levels[price_row, count] = price
        levels[size_row, count] = size
        count += 1
        i = _skip_ws(buf, i + 1, n)
        if i < n and buf[i] == _COMMA:
            i = _skip_ws(buf, i + 1, n)
        elif i < n and buf[i] == _RBRACKET:
            return i + 1, count
        else:
            return -1, 0


@njit(cache=True, _nrt=False, inline="always")
def _key(buf, i, n):
    """(key start, key end, index of the value) for `"key" :` at i, or (-1, -1, -1)."""
    i = _skip_ws(buf, i, n)
    end = _string_end(buf, i, n)
    if end < 0:
        return -1, -1, -1
    colon = _skip_ws(buf, end + 1, n)
    if colon >= n or buf[colon] != _COLON:
        return -1, -1, -1
    return i + 1, end, _skip_ws(buf, colon + 1, n)


@njit(cache=True, _nrt=False, inline="always")
def _next_member(buf, i, n, close):
    """After a value: (index of the next member, more members?) or (-1, False)."""
    i = _skip_ws(buf, i, n)
    if i < n and buf[i] == _COMMA:
        return i + 1, True
    if i < n and buf[i] == close:
        return i + 1, False
    return -1, False


@njit(cache=True, _nrt=False, inline="always")
def _quoted_integer(buf, i, n):
    """(value, next index) of a quoted unsigned decimal that fits int64 (exchange times,
    trade ids), or (-1, -1)."""
    end = _string_end(buf, i, n)
    if end < 0 or end == i + 1 or end - i - 1 > 19:
        return -1, -1
    value = 0
    for k in range(i + 1, end):
        c = buf[k]
        if c < _ZERO or c > _NINE:
            return -1, -1
        digit = c - _ZERO
        if value > (_INT64_MAX - digit) // 10:
            return -1, -1
        value = value * 10 + digit
    return value, end + 1


@njit(cache=True, _nrt=False)
def _depth_data(buf, i, n, levels):
    """The single object of a depth frame's data array: (next index, bids, asks, ts, seq)."""
    fail = (-1, 0, 0, 0, 0)
    if i >= n or buf[i] != _LBRACKET:
        return fail
    i = _skip_ws(buf, i + 1, n)
    if i >= n or buf[i] != _LBRACE:
        return fail
    i += 1
    n_bids = n_asks = exchange_ts = -1
    seq = 0
    more = True
    while more:
        key_start, key_end, i = _key(buf, i, n)
        if i < 0:
            return fail
        if _equals(buf, key_start, key_end, _KEY_ASKS) and n_asks < 0:
            i, n_asks = _levels(buf, i, n, levels, 2, 3)
        elif _equals(buf, key_start, key_end, _KEY_BIDS) and n_bids < 0:
            i, n_bids = _levels(buf, i, n, levels, 0, 1)
        elif _equals(buf, key_start, key_end, _KEY_TS):
            exchange_ts, i = _quoted_integer(buf, i, n)
        elif _equals(buf, key_start, key_end, _KEY_SEQ):
            end = _integer_end(buf, i, n)
            if end < 0:
                return fail
            seq = _integer_value(buf, i, end)
            i = end
        elif _equals(buf, key_start, key_end, _KEY_PSEQ) or _equals(
            buf, key_start, key_end, _KEY_CHECKSUM
        ):
            i = _integer_end(buf, i, n)
        else:
            return fail
        if i < 0:
            return fail
        i, more = _next_member(buf, i, n, _RBRACE)
        if i < 0:
            return fail
    i = _skip_ws(buf, i, n)
    if i >= n or buf[i] != _RBRACKET or n_bids < 1 or n_asks < 1 or exchange_ts < 0:
        return fail
    for k in range(1, n_bids):
        if levels[0, k] >= levels[0, k - 1]:
            return fail
    for k in range(1, n_asks):
        if levels[2, k] <= levels[2, k - 1]:
            return fail
    if levels[0, 0] >= levels[2, 0]:
        return fail
    return i + 1, n_bids, n_asks, exchange_ts, seq


@njit(cache=True, _nrt=False)
def _trade_data(buf, i, n, trades):
    """A trade frame's data array into `trades` columns: (next index, count)."""
    capacity = trades.shape[1]
    ids = trades.view(np.int64)
    if i >= n or buf[i] != _LBRACKET:
        return -1, 0
    i = _skip_ws(buf, i + 1, n)
    count = 0
    while True:
        if count == capacity or i >= n or buf[i] != _LBRACE:
            return -1, 0
        i += 1
        price = size = -1.0
        side = 0
        exchange_ts = trade_id = -1
        more = True
        while more:
            key_start, key_end, i = _key(buf, i, n)
            if i < 0:
                return -1, 0
            if _equals(buf, key_start, key_end, _KEY_PRICE):
                price, i = _quoted_decimal(buf, i, n)
            elif _equals(buf, key_start, key_end, _KEY_SIZE):
                size, i = _quoted_decimal(buf, i, n)
            elif _equals(buf, key_start, key_end, _KEY_TS):
                exchange_ts, i = _quoted_integer(buf, i, n)
            elif _equals(buf, key_start, key_end, _KEY_SIDE):
                end = _string_end(buf, i, n)
                if end < 0:
                    return -1, 0
                if _equals(buf, i + 1, end, _VALUE_BUY):
                    side = 1
                elif _equals(buf, i + 1, end, _VALUE_SELL):
                    side = -1
                else:
                    return -1, 0
                i = end + 1
            elif _equals(buf, key_start, key_end, _KEY_TRADE_ID):
                trade_id, i = _quoted_integer(buf, i, n)
            else:
                return -1, 0
            if i < 0:
                return -1, 0
            i, more = _next_member(buf, i, n, _RBRACE)
            if i < 0:
                return -1, 0
        if price <= 0.0 or size <= 0.0 or side == 0 or exchange_ts < 0 or trade_id < 0:
            return -1, 0
        trades[TRADE_PRICE, count] = price
        trades[TRADE_SIZE, count] = size
        trades[TRADE_SIDE, count] = side
        trades[TRADE_TS, count] = exchange_ts
        ids[TRADE_ID, count] = trade_id
        count += 1
        i, more = _next_member(buf, i, n, _RBRACKET)
        if i < 0:
            return -1, 0
        if not more:
            return i, count
        i = _skip_ws(buf, i, n)


@njit(cache=True, _nrt=False, inline="always")
def _channel_code(buf, start, end):
    """1, 5 or 15 for books1/5/15, TRADE_CHANNEL for trade, 0 for anything else."""
    length = end - start
    if _equals(buf, start, end, _VALUE_TRADE):
        return _TRADE_CHANNEL
    if length < 6 or not _equals(buf, start, start + 5, _VALUE_BOOKS):
        return 0
    suffix = buf[end - 1]
    if length == 6 and suffix == 49:
        return 1
    if length == 6 and suffix == 53:
        return 5
    if length == 7 and buf[start + 5] == 49 and suffix == 53:
        return 15
    return 0


@njit(cache=True, _nrt=False)
def scan_frame(buf, levels, trades, names, state, tape_trades, tape_ids):
    """Scan one depth snapshot or trade frame of a registered symbol and apply it to the tape.

    Returns (status, kind, symbol_row, depth, count_a, count_b, count_c, value_a, value_b).
    DEPTH: `depth` is 1, 5 or 15; count_a/count_b are the bids and asks now in `levels` (rows:
    bid px, bid size, ask px, ask size; non-empty, sorted, uncrossed, positive); value_a is the
    exchange ts, value_b the seq; the symbol's last depth time is advanced. TRADE: the trades
    (wire order newest first, in `trades`) are admitted oldest first: count_a admitted,
    count_b duplicates, count_c older than the last trade; value_a is the tape sequence number
    of the first admitted one. FALLBACK for anything else, including an unregistered symbol or
    a depth frame older than the last one (the orjson path then decides), with nothing applied.
    The frame's `arg` must come before its `data` (as Bitget sends it).
    """
    n = len(buf)
    fail = (FALLBACK, 0, 0, 0, 0, 0, 0, 0, 0)
    symbol_start = symbol_end = -1
    channel = -1
    kind = 0
    count_a = count_b = 0
    exchange_ts = -1
    seq = 0
    snapshot = False
    i = _skip_ws(buf, 0, n)
    if i >= n or buf[i] != _LBRACE:
        return fail
    i += 1
    more = True
    while more:
        key_start, key_end, i = _key(buf, i, n)
        if i < 0:
            return fail
        if _equals(buf, key_start, key_end, _KEY_ACTION):
            end = _string_end(buf, i, n)
            if end < 0:
                return fail
            snapshot = _equals(buf, i + 1, end, _VALUE_SNAPSHOT)
            i = end + 1
        elif _equals(buf, key_start, key_end, _KEY_TS):
            i = _integer_end(buf, i, n)
        elif _equals(buf, key_start, key_end, _KEY_ARG):
            if i >= n or buf[i] != _LBRACE:
                return fail
            i += 1
            more_args = True
            while more_args:
                arg_start, arg_end, i = _key(buf, i, n)
                if i < 0:
                    return fail
                end = _string_end(buf, i, n)
                if end < 0:
                    return fail
                if _equals(buf, arg_start, arg_end, _KEY_CHANNEL):
                    channel = _channel_code(buf, i + 1, end)
                elif _equals(buf, arg_start, arg_end, _KEY_INST_ID):
                    symbol_start = i + 1
                    symbol_end = end
                elif not _equals(buf, arg_start, arg_end, _KEY_INST_TYPE):
                    return fail
                i, more_args = _next_member(buf, end + 1, n, _RBRACE)
                if i < 0:
                    return fail
        elif _equals(buf, key_start, key_end, _KEY_DATA) and kind == 0:
            if channel == _TRADE_CHANNEL:
                kind = TRADE
                i, count_a = _trade_data(buf, i, n, trades)
            elif channel > 0:
                kind = DEPTH
                i, count_a, count_b, exchange_ts, seq = _depth_data(buf, i, n, levels)
            else:
                return fail
        else:
            return fail
        if i < 0:
            return fail
        i, more = _next_member(buf, i, n, _RBRACE)
        if i < 0:
            return fail
    # An empty instId would match the first free tape row (its name length is 0).
    if _skip_ws(buf, i, n) != n or symbol_end <= symbol_start or kind == 0:
        return fail
    row = find_symbol(buf, symbol_start, symbol_end, names, state)
    if row < 0:
        return fail
    if kind == DEPTH:
        if not snapshot or exchange_ts < state[row, LAST_DEPTH_TS]:
            return fail
        state[row, LAST_DEPTH_TS] = exchange_ts
        return (OK, DEPTH, row, channel, count_a, count_b, 0, exchange_ts, seq)
    ids = trades.view(np.int64)
    first = state[row, TRADE_TOTAL]
    admitted = duplicates = older = 0
    for k in range(count_a - 1, -1, -1):
        verdict = admit_trade(
            state,
            tape_trades,
            tape_ids,
            row,
            trades[TRADE_PRICE, k],
            trades[TRADE_SIZE, k],
            trades[TRADE_SIDE, k],
            np.int64(trades[TRADE_TS, k]),
            ids[TRADE_ID, k],
        )
        if verdict == ADMITTED:
            admitted += 1
        elif verdict == DUPLICATE:
            duplicates += 1
        else:
            older += 1
    return (OK, TRADE, row, 0, admitted, duplicates, older, first, 0)
