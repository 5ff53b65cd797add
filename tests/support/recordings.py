"""Recordings the console's tests replay: written here, two symbols, no shared data needed."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson

from engine.feed.recording import encode_line


def write_recording(path: Path, books: int = 300) -> Path:
    """Books15 of two symbols (15 levels a side) with a trade after every other book."""
    trade_id = 0
    with gzip.open(path, "wb") as out:
        for index in range(books):
            ts = 1_726_000_000_000 + 50 * index
            for symbol, mid in (("BTCUSDT", 60_000.0 + index % 7), ("ETHUSDT", 3_000.0)):
                tick = 0.1 if symbol == "BTCUSDT" else 0.01
                book = {
                    "asks": [[f"{mid + tick * (k + 1):.2f}", f"{1 + k % 3}"] for k in range(15)],
                    "bids": [[f"{mid - tick * k:.2f}", f"{2 + k % 2}"] for k in range(15)],
                    "checksum": 0,
                    "seq": index,
                    "ts": str(ts),
                }
                arg = {"instType": "USDT-FUTURES", "channel": "books15", "instId": symbol}
                frame = {"action": "snapshot", "arg": arg, "data": [book], "ts": ts}
                out.write(encode_line(ts * 1_000_000, orjson.dumps(frame)))
            if index % 2:
                trade_id += 1
                trade = {
                    "ts": str(ts),
                    "price": f"{mid:.1f}",
                    "size": "0.01",
                    "side": "buy",
                    "tradeId": str(trade_id),
                }
                arg = {"instType": "USDT-FUTURES", "channel": "trade", "instId": "BTCUSDT"}
                frame = {"action": "update", "arg": arg, "data": [trade], "ts": ts}
                out.write(encode_line(ts * 1_000_000 + 1, orjson.dumps(frame)))
    return path
