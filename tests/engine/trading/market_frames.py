"""Bitget public frames for trading tests, parsed by the real parser into market events."""

from __future__ import annotations

import itertools
import time

import orjson

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.tape import Trades

INST_TYPE = "USDT-FUTURES"


class MarketScript:
    """Builds books15 and trade frames and parses them, as the feed would deliver them."""

    def __init__(self, symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")) -> None:
        self.parser = FrameParser(symbols)
        self._ts_ms = itertools.count(time.time_ns() // 1_000_000)
        self._trade_ids = itertools.count(1)

    def book(
        self,
        symbol: str,
        bids: list[tuple[float, float]],
        asks: list[tuple[float, float]],
    ) -> BookSnapshot:
        ts = next(self._ts_ms)
        frame = orjson.dumps(
            {
                "action": "snapshot",
                "arg": {"instType": INST_TYPE, "channel": "books15", "instId": symbol},
                "data": [
                    {
                        "asks": [[f"{p}", f"{s}"] for p, s in asks],
                        "bids": [[f"{p}", f"{s}"] for p, s in bids],
                        "checksum": 0,
                        "seq": ts,
                        "pseq": 0,
                        "ts": str(ts),
                    }
                ],
                "ts": ts,
            }
        )
        snapshot = self.parser.parse(frame, time.time_ns())
        assert isinstance(snapshot, BookSnapshot)
        return snapshot

    def trade(self, symbol: str, price: float, size: float, side: str) -> Trades:
        ts = next(self._ts_ms)
        frame = orjson.dumps(
            {
                "action": "update",
                "arg": {"instType": INST_TYPE, "channel": "trade", "instId": symbol},
                "data": [
                    {
                        "ts": str(ts),
                        "price": f"{price}",
                        "size": f"{size}",
                        "side": side,
                        "tradeId": str(next(self._trade_ids)),
                    }
                ],
                "ts": ts,
            }
        )
        trades = self.parser.parse(frame, time.time_ns())
        assert isinstance(trades, Trades)
        return trades
