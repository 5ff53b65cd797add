"""Fuzz target: websocket frames, public and private, through the real parsers and books.

Each frame goes to a long-lived `FrameParser` (numba scanner and orjson path), whose depth
snapshots feed an `OrderBook` and whose `books` frames feed an `IncrementalBook` per symbol, and
to a `BitgetPrivateFeed` that has logged in and subscribed, through its own receive loop (the
connection is a list of frames). Invariants: nothing raises; every frame the parser does not
turn into an event is counted as rejected; every book it or the incremental book hands on is
non-empty, strictly sorted, uncrossed, with positive finite prices and sizes; trades and
private events carry positive finite numbers; the private stream stays up.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import Sequence

import hypothesis.strategies as st
import orjson
from fuzz_tally import deep_json, require, require_finite
from websockets.exceptions import ConnectionClosed

from engine.bitget.credentials import Credentials
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PositionsUpdate,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.bitget.private_ws import BitgetPrivateFeed, BitgetPrivateFeedConfig
from engine.book import IncrementalBook, OrderBook
from engine.feed.events import (
    BookResyncNeeded,
    BookSnapshot,
    BookUpdate,
    ChannelAck,
    ChannelError,
    Pong,
)
from engine.feed.parse import FrameParser
from engine.feed.tape import Trades

SYMBOLS = ("BTCUSDT", "ETHUSDT")
FUZZ_SECRET = "fuzz-secret-value-0123456789"
_LOGIN_AND_ACKS = [
    b'{"event":"login","code":0,"msg":""}',
    *(
        orjson.dumps({"event": "subscribe", "arg": {"instType": "USDT-FUTURES", "channel": c}})
        for c in ("orders", "fill", "positions")
    ),
]
_DEEP = "\x00deep\x00"
"""A placeholder that `frame_bytes` replaces with JSON nested deeper than repr can go."""


class _ScriptedConnection:
    """The feed's side of a websocket that delivers `frames`, then closes."""

    def __init__(self, frames: Sequence[bytes]) -> None:
        self._frames = iter(frames)

    async def recv(self, decode: bool = False) -> bytes:
        frame = next(self._frames, None)
        if frame is None:
            raise ConnectionClosed(None, None)
        return frame


class FrameTarget:
    name = "frames"

    def __init__(self) -> None:
        self.parser = FrameParser(SYMBOLS, pool_size=4, max_symbols=len(SYMBOLS))
        self.books = {symbol: OrderBook(symbol) for symbol in SYMBOLS}
        self.incremental = {symbol: IncrementalBook(symbol) for symbol in SYMBOLS}
        self.private_events: list[object] = []
        self.loop = asyncio.new_event_loop()
        self.private = BitgetPrivateFeed(
            BitgetPrivateFeedConfig(),
            Credentials("fuzz-key-abcdef", FUZZ_SECRET, "fuzz-passphrase"),
            self.private_events.append,
        )
        self._recv_ns = itertools.count(1_000_000)
        self._receive(_LOGIN_AND_ACKS)
        require(self.private.state is PrivateStreamState.LIVE, "the private feed did not go live")

    def close(self) -> None:
        self.loop.close()

    def check_bytes(self, raw: bytes) -> None:
        self.check_public(raw)
        self.check_private(raw)

    def check_sequence(self, frames: Sequence[bytes]) -> None:
        for raw in frames:
            self.check_bytes(raw)

    # Public

    def check_public(self, raw: bytes) -> None:
        stats = self.parser.stats
        rejected_before = stats.rejected.total()
        event = self.parser.parse(raw, next(self._recv_ns))
        kind = type(event)
        if event is None:
            require(
                stats.rejected.total() > rejected_before,
                f"a frame became no event without a counted reason: {stats.as_dict()}",
            )
        elif kind is BookSnapshot:
            check_book(event, "parser")
            self.books[event.symbol].apply(event)
            bid, _bid_size, ask, _ask_size = self.books[event.symbol].best()
            require(bid < ask, f"OrderBook best crossed: {bid} >= {ask}")
        elif kind is BookUpdate:
            _check_update(event)
            result = self.incremental[event.symbol].apply(event)
            if type(result) is BookSnapshot:
                check_book(result, "incremental book")
            else:
                require(
                    result is None or type(result) is BookResyncNeeded,
                    f"IncrementalBook answered {result!r}",
                )
        elif kind is Trades:
            require(event.count > 0, "a Trades event without trades")
            for trade in event.prints:
                require_finite(trade.price, "trade price", positive=True)
                require_finite(trade.size, "trade size", positive=True)
        elif kind is ChannelAck:
            require(all(isinstance(part, str) for part in event), f"odd ack {event!r}")
        elif kind is ChannelError:
            require(isinstance(event.code, int), f"error code {event.code!r} is not an int")
            require(
                all(isinstance(part, str) for part in event[1:]), f"odd channel error {event!r}"
            )
        else:
            require(kind is Pong, f"the parser answered {kind.__name__}")

    # Private

    def check_private(self, raw: bytes) -> None:
        events = self.private_events
        events.clear()
        ended = self._receive([raw])
        for event in events:
            _check_private_event(event)
        stats = self.private.stats
        require(stats.handler_errors == 0, f"the sink raised: {stats.last_handler_error}")
        require(FUZZ_SECRET not in stats.last_rejection, "a rejection echoed the secret")
        require(
            ended.reason == "connection lost without a close frame" or "exchange" in ended.reason,
            f"the private stream ended on a frame: {ended.reason}",
        )

    def _receive(self, frames: Sequence[bytes]):
        return self.loop.run_until_complete(self.private._receive(_ScriptedConnection(frames)))


def check_book(book: BookSnapshot, source: str) -> None:
    require(book.n_bids >= 1 and book.n_asks >= 1, f"{source}: empty side in {book.n_bids=}")
    for name, values in (
        ("bid price", book.bid_prices),
        ("bid size", book.bid_sizes),
        ("ask price", book.ask_prices),
        ("ask size", book.ask_sizes),
    ):
        for value in values.tolist():
            require_finite(value, f"{source}: {name}", positive=True)
    bids, asks = book.bid_prices.tolist(), book.ask_prices.tolist()
    require(all(a > b for a, b in itertools.pairwise(bids)), f"{source}: bids unsorted")
    require(all(a < b for a, b in itertools.pairwise(asks)), f"{source}: asks unsorted")
    require(bids[0] < asks[0], f"{source}: crossed book {bids[0]} >= {asks[0]}")


def _check_update(update: BookUpdate) -> None:
    for price_text, size_text in (*update.bids, *update.asks):
        price, size = float(price_text), float(size_text)
        require_finite(price, "books price", positive=True)
        require(math.isfinite(size) and size >= 0, f"books size {size_text!r}")
        if update.is_snapshot:
            require(size > 0, f"books snapshot size {size_text!r}")


def _check_private_event(event: object) -> None:
    kind = type(event)
    if kind is OrderUpdate:
        require_finite(event.size, "order size", positive=True)
        require_finite(event.filled_size, "order filled size")
        require(0 <= event.filled_size <= event.size * (1 + 1e-9), f"order overfilled {event}")
        for price in (event.price, event.average_price):
            require(price is None or (math.isfinite(price) and price > 0), f"price {price!r}")
    elif kind is FillUpdate:
        require_finite(event.price, "fill price", positive=True)
        require_finite(event.size, "fill size", positive=True)
        require_finite(event.fee, "fill fee")
    elif kind is PositionsUpdate:
        for entry in event.positions:
            require_finite(entry.size, "position size")
            require(entry.size != 0, "a flat position was reported")
            require_finite(entry.entry_price, "entry price", positive=True)
            require_finite(entry.unrealized_pnl, "unrealized pnl")
    else:
        require(kind is PrivateStreamChanged, f"the private feed emitted {kind.__name__}")


# Structured inputs (hypothesis)

_GOOD_NUMBER = st.decimals(min_value="0.0001", max_value="100000", places=4).map(
    lambda d: format(d.normalize(), "f")
)
_BAD_NUMBER_TEXT = st.sampled_from(
    [
        "0", "-1", "-0", "NaN", "nan", "inf", "-inf", "Infinity", "1e309", "1e-400", "",
        " 1", "1_0", "\u0661\u0662", "0x10", "1.2.3", "1" * 400, "9" * 5000, "1e5", "+1",
    ]
)  # fmt: skip
_JUNK = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.just(_DEEP),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
NUMBER_TEXT = st.one_of(_GOOD_NUMBER, _GOOD_NUMBER, _GOOD_NUMBER, _BAD_NUMBER_TEXT)
NUMBER = st.one_of(NUMBER_TEXT, NUMBER_TEXT, _JUNK)
SYMBOL = st.sampled_from([*SYMBOLS, *SYMBOLS, "DOGEUSDT", "", "BTC\u00e9USDT"])
TS = st.one_of(
    st.integers(1_726_000_000_000, 1_726_000_100_000).map(str),
    st.integers(-5, 2**64).map(str),
    _JUNK,
)


def _level(price: st.SearchStrategy, size: st.SearchStrategy) -> st.SearchStrategy:
    return st.tuples(price, size).map(list) | _JUNK


@st.composite
def _ladder(draw, *, side: str, allow_zero: bool = False) -> list:
    """A side of a book: usually sorted and distinct (so books get accepted), sometimes not."""
    count = draw(st.integers(0, 17))
    prices = draw(st.lists(_GOOD_NUMBER, min_size=count, max_size=count, unique=True))
    prices.sort(key=float, reverse=side == "bids")
    size = st.sampled_from(["0"]) | _GOOD_NUMBER if allow_zero else _GOOD_NUMBER
    levels = [[price, draw(size)] for price in prices]
    if levels and draw(st.integers(0, 4)) == 0:  # one mutated level
        index = draw(st.integers(0, len(levels) - 1))
        levels[index] = draw(_level(NUMBER, NUMBER))
    if levels and draw(st.integers(0, 8)) == 0:  # a duplicated level
        levels.append(levels[draw(st.integers(0, len(levels) - 1))])
    return levels


@st.composite
def _mutated(draw, frame: dict) -> dict:
    """`frame` with a few keys dropped or replaced by junk, at any depth of arg/data."""
    for _ in range(draw(st.integers(0, 2))):
        data = frame.get("data")
        holder = draw(st.sampled_from([frame, frame.get("arg"), *_listed(data)]))
        if not isinstance(holder, dict) or not holder:
            continue
        key = draw(st.sampled_from(sorted(holder)))
        if draw(st.booleans()):
            del holder[key]
        else:
            holder[key] = draw(_JUNK)
    return frame


def _listed(data: object) -> list:
    return data if isinstance(data, list) and data else [None]


def frame_bytes(frame: object) -> bytes:
    return orjson.dumps(frame).replace(orjson.dumps(_DEEP), deep_json(1000))


@st.composite
def public_frames(draw) -> bytes:
    channel = draw(st.sampled_from(["books15", "books5", "books1", "books", "trade", "ticker"]))
    arg = {"instType": "USDT-FUTURES", "channel": channel, "instId": draw(SYMBOL)}
    if channel == "trade":
        trades = draw(
            st.lists(
                st.fixed_dictionaries(
                    {
                        "ts": TS,
                        "price": NUMBER,
                        "size": NUMBER,
                        "side": st.sampled_from(["buy", "sell", "BUY", ""]) | _JUNK,
                        "tradeId": st.integers(0, 2**64).map(str) | _JUNK,
                    }
                ),
                max_size=4,
            )
        )
        frame = {"action": "update", "arg": arg, "data": trades, "ts": 1726000000330}
    else:
        action = draw(st.sampled_from(["snapshot", "update"]))
        data = {
            "asks": draw(_ladder(side="asks", allow_zero=action == "update")),
            "bids": draw(_ladder(side="bids", allow_zero=action == "update")),
            "checksum": draw(st.just(0) | st.integers(-(2**31), 2**31 - 1)),
            "seq": draw(st.integers(0, 50)),
            "pseq": draw(st.integers(0, 50)),
            "ts": draw(TS),
        }
        frame = {"action": action, "arg": arg, "data": [data], "ts": 1726000000160}
    frame = draw(_mutated(frame))
    raw = frame_bytes(frame)
    cut = draw(st.integers(0, 12))
    return raw[: len(raw) - cut] if cut < 4 and draw(st.booleans()) else raw


@st.composite
def control_frames(draw) -> bytes:
    frame = {
        "event": draw(st.sampled_from(["subscribe", "unsubscribe", "login", "error", "?"])),
        "arg": draw(st.fixed_dictionaries({"channel": _JUNK, "instId": _JUNK}) | _JUNK),
        "code": draw(st.integers(0, 40_000) | _JUNK),
        "msg": draw(_JUNK),
        "op": draw(_JUNK),
    }
    return frame_bytes(draw(_mutated(frame)))


_ORDER = {
    "instId": SYMBOL,
    "orderId": st.integers(1, 10**18).map(str) | _JUNK,
    "clientOid": st.text(max_size=8) | _JUNK,
    "side": st.sampled_from(["buy", "sell"]) | _JUNK,
    "price": NUMBER,
    "priceAvg": NUMBER,
    "size": NUMBER,
    "accBaseVolume": NUMBER,
    "status": st.sampled_from(["live", "partially_filled", "filled", "canceled", "?"]),
    "reduceOnly": st.sampled_from(["yes", "no", "YES"]) | _JUNK,
    "uTime": TS,
}
_FILL = {
    "symbol": SYMBOL,
    "orderId": st.integers(1, 10**18).map(str),
    "clientOid": st.text(max_size=8),
    "tradeId": st.integers(1, 10**18).map(str) | _JUNK,
    "side": st.sampled_from(["buy", "sell"]),
    "price": NUMBER,
    "baseVolume": NUMBER,
    "feeDetail": st.lists(st.fixed_dictionaries({"totalFee": NUMBER}), max_size=3) | _JUNK,
    "tradeScope": st.sampled_from(["maker", "taker", "M", "T", "x"]),
    "cTime": TS,
}
_POSITION = {
    "instId": SYMBOL,
    "holdSide": st.sampled_from(["long", "short", "net"]),
    "total": NUMBER,
    "openPriceAvg": NUMBER,
    "markPrice": NUMBER,
    "unrealizedPL": NUMBER,
}


@st.composite
def private_frames(draw) -> bytes:
    channel, entry = draw(
        st.sampled_from([("orders", _ORDER), ("fill", _FILL), ("positions", _POSITION)])
    )
    entries = draw(st.lists(st.fixed_dictionaries(entry), max_size=3))
    frame = {
        "action": draw(st.sampled_from(["snapshot", "update"])),
        "arg": {"instType": "USDT-FUTURES", "channel": channel, "instId": "default"},
        "data": entries,
        "ts": draw(st.integers(-1, 2**62) | _JUNK),
    }
    return frame_bytes(draw(_mutated(frame)))


@st.composite
def incremental_sessions(draw) -> list[bytes]:
    """A `books` snapshot then updates chained by seq/pseq (sometimes broken), so the
    incremental book gets past its snapshot and is checked after each valid update."""
    symbol = draw(st.sampled_from(SYMBOLS))
    arg = {"instType": "USDT-FUTURES", "channel": "books", "instId": symbol}
    frames, seq, ts = [], draw(st.integers(1, 1000)), 1_726_000_000_000
    for index in range(draw(st.integers(1, 8))):
        action = "snapshot" if index == 0 else "update"
        next_seq = seq + draw(st.integers(1, 3))
        data = {
            "asks": draw(_ladder(side="asks", allow_zero=index > 0)),
            "bids": draw(_ladder(side="bids", allow_zero=index > 0)),
            "checksum": 0,
            "seq": next_seq,
            "pseq": seq if draw(st.integers(0, 9)) else seq - 1,
            "ts": str(ts + index),
        }
        seq = next_seq
        frames.append(frame_bytes({"action": action, "arg": arg, "data": [data], "ts": ts}))
    return frames


ANY_FRAME = st.one_of(
    public_frames(),
    public_frames(),
    control_frames(),
    private_frames(),
    st.binary(max_size=300),
)

SEED_FRAMES = (
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books15",'
    b'"instId":"BTCUSDT"},"data":[{"asks":[["64010.5","1.203"],["64011.0","0.550"]],'
    b'"bids":[["64010.0","2.118"],["64009.5","0.900"]],"checksum":0,"seq":1234567950,'
    b'"pseq":0,"ts":"1726000000150"}],"ts":1726000000160}',
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books",'
    b'"instId":"ETHUSDT"},"data":[{"asks":[["3001.5","1.2"]],"bids":[["3001.0","2.1"]],'
    b'"checksum":0,"seq":10,"pseq":0,"ts":"1726000000000"}],"ts":1726000000012}',
    b'{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"books",'
    b'"instId":"ETHUSDT"},"data":[{"asks":[["3001.5","0"],["3002.0","0.3"]],'
    b'"bids":[["3001.0","2.5"]],"checksum":0,"seq":11,"pseq":10,"ts":"1726000000100"}],'
    b'"ts":1726000000105}',
    b'{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"trade",'
    b'"instId":"BTCUSDT"},"data":[{"ts":"1726000000321","price":"64010.5","size":"0.015",'
    b'"side":"buy","tradeId":"1220000000000000001"}],"ts":1726000000330}',
    b'{"event":"error","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"X"},'
    b'"code":30001,"msg":"doesn\'t exist","op":"subscribe"}',
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"orders",'
    b'"instId":"default"},"data":[{"instId":"BTCUSDT","orderId":"1","clientOid":"c",'
    b'"side":"buy","price":"100","priceAvg":"0","size":"1","accBaseVolume":"0.5",'
    b'"status":"partially_filled","reduceOnly":"no","uTime":"1726000000000"}],'
    b'"ts":1726000000001}',
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"fill",'
    b'"instId":"default"},"data":[{"symbol":"BTCUSDT","orderId":"1","clientOid":"c",'
    b'"tradeId":"9","side":"buy","price":"100","baseVolume":"0.5","feeDetail":'
    b'[{"totalFee":"-0.01"}],"tradeScope":"maker","cTime":"1726000000000"}],"ts":1726000000002}',
    b'{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"positions",'
    b'"instId":"default"},"data":[{"instId":"BTCUSDT","holdSide":"long","total":"0.5",'
    b'"openPriceAvg":"100","markPrice":"101","unrealizedPL":"0.5"}],"ts":1726000000003}',
    b"pong",
)
"""Valid frames of every kind: the atheris corpus starts from these."""
