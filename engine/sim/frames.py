"""Bitget v2 public websocket frames, rendered as the exact JSON text the exchange sends.

Envelope: `{"action","arg":{"instType","channel","instId"},"data":[...],"ts":<int ms>}`, with
prices and sizes as decimal strings at the instrument's precision and `data[i].ts` a string.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np
import orjson

from engine.bitget.checksum import book_checksum
from engine.market.instruments import Instrument
from engine.sim.market import SimTrade

INST_TYPE = "USDT-FUTURES"
INCREMENTAL_DEPTH_CHANNEL = "books"
TRADE_CHANNEL = "trade"
SNAPSHOT_DEPTH_CHANNELS: dict[str, int] = {"books1": 1, "books5": 5, "books15": 15}
"""Channels that push a full snapshot every time, with their number of levels per side."""
PUBLIC_CHANNELS = frozenset({INCREMENTAL_DEPTH_CHANNEL, TRADE_CHANNEL, *SNAPSHOT_DEPTH_CHANNELS})

Level = tuple[str, str]


def channel_arg(channel: str, symbol: str) -> dict[str, str]:
    return {"instType": INST_TYPE, "channel": channel, "instId": symbol}


def format_levels(prices: np.ndarray, sizes: np.ndarray, instrument: Instrument) -> list[Level]:
    """`(price, size)` strings at the instrument's precision, in the arrays' order."""
    price_decimals = instrument.price_decimals
    size_decimals = instrument.size_decimals
    return [
        (f"{price:.{price_decimals}f}", f"{size:.{size_decimals}f}")
        for price, size in zip(prices.tolist(), sizes.tolist(), strict=True)
    ]


def depth_frame(
    channel: str,
    symbol: str,
    bids: Sequence[Level],
    asks: Sequence[Level],
    *,
    action: str,
    seq: int,
    pseq: int,
    checksum: int,
    ts_ms: int,
    push_ms: int,
) -> str:
    """A depth push; `ts_ms` is the book's time, `push_ms` the envelope's."""
    frame = {
        "action": action,
        "arg": channel_arg(channel, symbol),
        "data": [
            {
                "asks": [list(level) for level in asks],
                "bids": [list(level) for level in bids],
                "checksum": checksum,
                "seq": seq,
                "pseq": pseq,
                "ts": str(ts_ms),
            }
        ],
        "ts": push_ms,
    }
    return orjson.dumps(frame).decode()


def trade_frame(
    symbol: str,
    trades_newest_first: Iterable[SimTrade],
    instrument: Instrument,
    *,
    action: str,
    push_ms: int,
) -> str:
    """A `trade` push; Bitget lists the newest trade first."""
    data = [
        {
            "ts": str(trade.ts_ms),
            "price": instrument.format_price(trade.price),
            "size": instrument.format_size(trade.size),
            "side": str(trade.side),
            "tradeId": str(trade.trade_id),
        }
        for trade in trades_newest_first
    ]
    frame = {
        "action": action,
        "arg": channel_arg(TRADE_CHANNEL, symbol),
        "data": data,
        "ts": push_ms,
    }
    return orjson.dumps(frame).decode()


def event_frame(event: str, arg: dict[str, object]) -> str:
    """A subscribe or unsubscribe acknowledgement."""
    return orjson.dumps({"event": event, "arg": arg}).decode()


def error_frame(code: int, msg: str, *, op: str | None = None, arg: object = None) -> str:
    """An `event: error` frame; `code` is a JSON number as on the real exchange."""
    frame: dict[str, object] = {"event": "error"}
    if arg is not None:
        frame["arg"] = arg
    frame["code"] = code
    frame["msg"] = msg
    if op is not None:
        frame["op"] = op
    return orjson.dumps(frame).decode()


class DepthDelta(NamedTuple):
    """Levels changed by one publication; a size of "0" deletes the price."""

    bids: list[Level]
    asks: list[Level]
    seq: int
    pseq: int
    checksum: int
    ts_ms: int


class DepthPublisher:
    """A symbol's published depth: the levels last pushed, their `seq`, and `books` deltas.

    Every depth channel of a symbol renders from this state, so a `books` snapshot sent to a new
    subscriber is exactly the base that the next delta applies to. A level that leaves the
    published depth is deleted with size "0", so a client's book mirrors the published one.
    """

    def __init__(self, symbol: str, first_seq: int = 1) -> None:
        self.symbol = symbol
        self.seq = first_seq
        self.ts_ms = 0
        self.bids: list[Level] = []
        self.asks: list[Level] = []
        self.checksum = book_checksum(self.bids, self.asks)

    def publish(self, bids: list[Level], asks: list[Level], ts_ms: int) -> DepthDelta | None:
        """Adopt new levels (best first); the delta against the last ones, None if unchanged."""
        bid_changes = _level_changes(self.bids, bids, descending=True)
        ask_changes = _level_changes(self.asks, asks, descending=False)
        if not bid_changes and not ask_changes:
            return None
        pseq = self.seq
        self.seq += 1
        self.ts_ms = ts_ms
        self.bids = bids
        self.asks = asks
        self.checksum = book_checksum(bids, asks)
        return DepthDelta(bid_changes, ask_changes, self.seq, pseq, self.checksum, ts_ms)

    def snapshot_frame(self, channel: str, push_ms: int) -> str:
        """A snapshot for `books` (all published levels, real checksum) or books1/5/15."""
        if channel == INCREMENTAL_DEPTH_CHANNEL:
            bids, asks, checksum = self.bids, self.asks, self.checksum
        else:
            levels = SNAPSHOT_DEPTH_CHANNELS[channel]
            bids, asks, checksum = self.bids[:levels], self.asks[:levels], 0
        return depth_frame(
            channel,
            self.symbol,
            bids,
            asks,
            action="snapshot",
            seq=self.seq,
            pseq=0,
            checksum=checksum,
            ts_ms=self.ts_ms,
            push_ms=push_ms,
        )

    def update_frame(self, delta: DepthDelta, push_ms: int) -> str:
        return depth_frame(
            INCREMENTAL_DEPTH_CHANNEL,
            self.symbol,
            delta.bids,
            delta.asks,
            action="update",
            seq=delta.seq,
            pseq=delta.pseq,
            checksum=delta.checksum,
            ts_ms=delta.ts_ms,
            push_ms=push_ms,
        )


def _level_changes(old: Sequence[Level], new: Sequence[Level], *, descending: bool) -> list[Level]:
    previous = dict(old)
    current = dict(new)
    changes = [(price, size) for price, size in new if previous.get(price) != size]
    changes.extend((price, "0") for price in previous if price not in current)
    changes.sort(key=lambda level: float(level[0]), reverse=descending)
    return changes
