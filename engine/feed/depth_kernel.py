"""Numba scanner for depth snapshot frames (books1/5/15): raw bytes -> float64 levels.

It accepts only a strict subset of JSON (no escapes, no non-ASCII, no exponents, only the
keys Bitget sends) and answers FALLBACK for everything else, so the orjson path in
`engine.feed.parse` stays the single authority on what a frame means and why it is rejected.
Whatever the scanner accepts is valid JSON that the orjson path would accept with exactly the
same numbers: decimals are converted exactly (mantissa < 2**53 divided by an exact power of
ten is correctly rounded, the same double that `float(text)` gives).
"""

from __future__ import annotations

import numpy as np
from numba import njit

OK = 0
FALLBACK = 1

_POW10 = np.array([10.0**k for k in range(23)])
_MAX_MANTISSA = 2**53

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

_QUOTE, _COMMA, _COLON = 34, 44, 58
_LBRACE, _RBRACE, _LBRACKET, _RBRACKET = 123, 125, 91, 93
_MINUS, _DOT, _ZERO, _NINE = 45, 46, 48, 57


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _skip_ws(buf, i, n):
    while i < n:
        c = buf[i]
        if c == 32 or c == 10 or c == 13 or c == 9:
            i += 1
        else:
            break
    return i


@njit(cache=True, nogil=True, _nrt=False, inline="always")
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


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _equals(buf, start, end, word):
    if end - start != word.shape[0]:
        return False
    for k in range(word.shape[0]):
        if buf[start + k] != word[k]:
            return False
    return True


@njit(cache=True, nogil=True, _nrt=False, inline="always")
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


@njit(cache=True, nogil=True, _nrt=False, inline="always")
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


@njit(cache=True, nogil=True, _nrt=False, inline="always")
def _integer_value(buf, start, end):
    negative = buf[start] == _MINUS
    value = 0
    for k in range(start + 1 if negative else start, end):
        value = value * 10 + (buf[k] - _ZERO)
    return -value if negative else value


@njit(cache=True, nogil=True, _nrt=False)
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


@njit(cache=True, nogil=True, _nrt=False)
def scan_depth_snapshot(buf, levels):
    """Scan one books1/5/15 frame.

    Returns (status, symbol_start, symbol_end, depth, n_bids, n_asks, exchange_ts_ms, seq), depth
    being 1, 5 or 15 from the channel name. On OK the
    book in `levels` (rows: bid px, bid size, ask px, ask size) is non-empty, sorted, uncrossed
    and has positive prices and sizes; anything else is FALLBACK.
    """
    n = len(buf)
    fail = (FALLBACK, 0, 0, 0, 0, 0, 0, 0)
    symbol_start = symbol_end = -1
    n_bids = n_asks = -1
    exchange_ts = -1
    seq = 0
    snapshot = False
    depth = 0
    i = _skip_ws(buf, 0, n)
    if i >= n or buf[i] != _LBRACE:
        return fail
    i += 1
    while True:
        i = _skip_ws(buf, i, n)
        key_end = _string_end(buf, i, n)
        if key_end < 0:
            return fail
        key_start = i + 1
        i = _skip_ws(buf, key_end + 1, n)
        if i >= n or buf[i] != _COLON:
            return fail
        i = _skip_ws(buf, i + 1, n)
        if _equals(buf, key_start, key_end, _KEY_ACTION):
            end = _string_end(buf, i, n)
            if end < 0:
                return fail
            snapshot = _equals(buf, i + 1, end, _VALUE_SNAPSHOT)
            i = end + 1
        elif _equals(buf, key_start, key_end, _KEY_TS):
            end = _integer_end(buf, i, n)
            if end < 0:
                return fail
            i = end
        elif _equals(buf, key_start, key_end, _KEY_ARG):
            if i >= n or buf[i] != _LBRACE:
                return fail
            i += 1
            while True:
                i = _skip_ws(buf, i, n)
                arg_key_end = _string_end(buf, i, n)
                if arg_key_end < 0:
                    return fail
                arg_key_start = i + 1
                i = _skip_ws(buf, arg_key_end + 1, n)
                if i >= n or buf[i] != _COLON:
                    return fail
                i = _skip_ws(buf, i + 1, n)
                end = _string_end(buf, i, n)
                if end < 0:
                    return fail
                if _equals(buf, arg_key_start, arg_key_end, _KEY_CHANNEL):
                    # books1, books5 and books15 are snapshot-only; plain `books` is incremental.
                    length = end - i - 1
                    suffix = buf[end - 1]
                    if _equals(buf, i + 1, i + 6, _VALUE_BOOKS):
                        if length == 6 and (suffix == 49 or suffix == 53):
                            depth = 1 if suffix == 49 else 5
                        elif length == 7 and buf[i + 6] == 49 and suffix == 53:
                            depth = 15
                elif _equals(buf, arg_key_start, arg_key_end, _KEY_INST_ID):
                    symbol_start = i + 1
                    symbol_end = end
                elif not _equals(buf, arg_key_start, arg_key_end, _KEY_INST_TYPE):
                    return fail
                i = _skip_ws(buf, end + 1, n)
                if i < n and buf[i] == _COMMA:
                    i += 1
                elif i < n and buf[i] == _RBRACE:
                    i += 1
                    break
                else:
                    return fail
        elif _equals(buf, key_start, key_end, _KEY_DATA):
            if i >= n or buf[i] != _LBRACKET:
                return fail
            i = _skip_ws(buf, i + 1, n)
            if i >= n or buf[i] != _LBRACE:
                return fail
            i += 1
            while True:
                i = _skip_ws(buf, i, n)
                data_key_end = _string_end(buf, i, n)
                if data_key_end < 0:
                    return fail
                data_key_start = i + 1
                i = _skip_ws(buf, data_key_end + 1, n)
                if i >= n or buf[i] != _COLON:
                    return fail
                i = _skip_ws(buf, i + 1, n)
                if _equals(buf, data_key_start, data_key_end, _KEY_ASKS):
                    if n_asks >= 0:
                        return fail
                    i, n_asks = _levels(buf, i, n, levels, 2, 3)
                elif _equals(buf, data_key_start, data_key_end, _KEY_BIDS):
                    if n_bids >= 0:
                        return fail
                    i, n_bids = _levels(buf, i, n, levels, 0, 1)
                elif _equals(buf, data_key_start, data_key_end, _KEY_TS):
                    end = _string_end(buf, i, n)
                    if end < 0 or end == i + 1 or end - i - 1 > 18:
                        return fail
                    value = 0
                    for k in range(i + 1, end):
                        c = buf[k]
                        if c < _ZERO or c > _NINE:
                            return fail
                        value = value * 10 + (c - _ZERO)
                    exchange_ts = value
                    i = end + 1
                elif _equals(buf, data_key_start, data_key_end, _KEY_SEQ):
                    end = _integer_end(buf, i, n)
                    if end < 0:
                        return fail
                    seq = _integer_value(buf, i, end)
                    i = end
                elif _equals(buf, data_key_start, data_key_end, _KEY_PSEQ) or _equals(
                    buf, data_key_start, data_key_end, _KEY_CHECKSUM
                ):
                    end = _integer_end(buf, i, n)
                    if end < 0:
                        return fail
                    i = end
                else:
                    return fail
                if i < 0:
                    return fail
                i = _skip_ws(buf, i, n)
                if i < n and buf[i] == _COMMA:
                    i += 1
                elif i < n and buf[i] == _RBRACE:
                    i += 1
                    break
                else:
                    return fail
            i = _skip_ws(buf, i, n)
            if i >= n or buf[i] != _RBRACKET:
                return fail
            i += 1
        else:
            return fail
        i = _skip_ws(buf, i, n)
        if i < n and buf[i] == _COMMA:
            i += 1
        elif i < n and buf[i] == _RBRACE:
            i += 1
            break
        else:
            return fail
    if _skip_ws(buf, i, n) != n:
        return fail
    if not snapshot or depth == 0 or symbol_start < 0 or exchange_ts < 0:
        return fail
    if n_bids < 1 or n_asks < 1:
        return fail
    for k in range(1, n_bids):
        if levels[0, k] >= levels[0, k - 1]:
            return fail
    for k in range(1, n_asks):
        if levels[2, k] <= levels[2, k - 1]:
            return fail
    if levels[0, 0] >= levels[2, 0]:
        return fail
    return (OK, symbol_start, symbol_end, depth, n_bids, n_asks, exchange_ts, seq)
