"""Recordings the tests replay, written here: Bitget public frames (books15 snapshots, trade
updates) as a recording's lines, and a two-symbol recording the console's tests share."""

from __future__ import annotations

import gzip
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from engine.feed.recording import encode_line

INST_TYPE = "USDT-FUTURES"
MS_NS = 1_000_000
"""Nanoseconds in a millisecond: a frame's `ts` (ms) times this is its receive time."""

Levels = list[list[str]]


def book_frame(
    symbol: str, ts_ms: int, asks: Levels, bids: Levels, seq: int, **fields: Any
) -> bytes:
    """A books15 snapshot of `symbol` at `ts_ms`; `fields` add to its data (checksum, pseq)."""
    data = {"asks": asks, "bids": bids, **fields, "seq": seq, "ts": str(ts_ms)}
    arg = {"instType": INST_TYPE, "channel": "books15", "instId": symbol}
    return orjson.dumps({"action": "snapshot", "arg": arg, "data": [data], "ts": ts_ms})


def trade_frame(
    symbol: str, ts_ms: int, trade_id: int, price: str, size: str, side: str = "buy"
) -> bytes:
    """A trade update of `symbol` with one print."""
    item = {"ts": str(ts_ms), "price": price, "size": size, "side": side, "tradeId": str(trade_id)}
    arg = {"instType": INST_TYPE, "channel": "trade", "instId": symbol}
    return orjson.dumps({"action": "update", "arg": arg, "data": [item], "ts": ts_ms})


def write_lines(path: Path, lines: Iterable[tuple[int, bytes]]) -> Path:
    """A recording of `(recv_ns, frame)` lines at `path`: gzip where its name ends in .gz."""
    content = b"".join(encode_line(recv_ns, frame) for recv_ns, frame in lines)
    path.write_bytes(gzip.compress(content) if path.suffix == ".gz" else content)
    return path


def write_books(
    path: Path, count: int, asks: Levels, bids: Levels, step_ms: int = 100, symbol: str = "BTCUSDT"
) -> Path:
    """`count` books15 snapshots of `symbol` with the same levels, `step_ms` apart from
    1_726_000_000_000 ms, received at their `ts`."""
    books = []
    for seq in range(count):
        ts = 1_726_000_000_000 + step_ms * seq
        books.append((ts * MS_NS, book_frame(symbol, ts, asks, bids, seq)))
    return write_lines(path, books)


def write_recording(path: Path, books: int = 300) -> Path:
    """Books15 of two symbols (15 levels a side) with a trade after every other book."""
    lines = []
    trade_id = 0
    for index in range(books):
        ts = 1_726_000_000_000 + 50 * index
        btc_mid = 60_000.0 + index % 7
        for symbol, mid in (("BTCUSDT", btc_mid), ("ETHUSDT", 3_000.0)):
            tick = 0.1 if symbol == "BTCUSDT" else 0.01
            asks = [[f"{mid + tick * (k + 1):.2f}", f"{1 + k % 3}"] for k in range(15)]
            bids = [[f"{mid - tick * k:.2f}", f"{2 + k % 2}"] for k in range(15)]
            lines.append((ts * MS_NS, book_frame(symbol, ts, asks, bids, index, checksum=0)))
        if index % 2:
            trade_id += 1
            trade = trade_frame("BTCUSDT", ts, trade_id, f"{btc_mid:.1f}", "0.01")
            lines.append((ts * MS_NS + 1, trade))
    return write_lines(path, lines)


SHARED_SPOT = (
    Path(__file__).resolve().parents[3] / "shared/data/replay/spot_btc_eth_20240808.bitget.gz"
)
"""The shared 10.8-minute spot recording (BTCUSDT, ETHUSDT), beside the checkout."""


def shared_spot() -> Path:
    """`SHARED_SPOT`, or the test is skipped saying why."""
    if not SHARED_SPOT.is_file():
        pytest.skip(f"the shared recording is not here: {SHARED_SPOT}")
    return SHARED_SPOT
