"""Loopback fixtures for the feed and Bitget tests: a scripted Bitget-like public websocket
server, a sink that keeps what it receives, frame builders, and support's `eventually` for waits.

Test modules reach these through fixtures only, so no test imports this file.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from typing import NamedTuple

import orjson
import pytest
from support.sim import running_sim
from support.waiting import eventually as support_eventually
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from engine.bitget.public_ws import BitgetPublicFeed, BitgetPublicFeedConfig
from engine.feed.events import BookSnapshot, FeedState, FeedStateChanged, TradePrint
from engine.feed.parse import FrameParser
from engine.feed.recorder import FrameRecorder
from engine.feed.sink import FeedNotice, MarketFrame
from engine.feed.tape import Trades

INST_TYPE = "USDT-FUTURES"


class FrozenTape(NamedTuple):
    """Stands in for a parser's MarketTape once a Trades event's prints were read."""

    prints: tuple[TradePrint, ...]

    def read(self, row: int, first: int, count: int, recv_ns: int) -> tuple[TradePrint, ...]:
        return self.prints


class FrameFactory:
    """Builds public frames shaped like bitget-v2.md §2 and §3."""

    @staticmethod
    def books15(symbol: str, ts_ms: int, bid: float = 100.0, seq: int = 1) -> bytes:
        """A books15 snapshot, two levels a side."""
        return orjson.dumps(
            {
                "action": "snapshot",
                "arg": {"instType": INST_TYPE, "channel": "books15", "instId": symbol},
                "data": [
                    {
                        "asks": [[f"{bid + 0.5}", "1.203"], [f"{bid + 1.0}", "0.55"]],
                        "bids": [[f"{bid}", "2.118"], [f"{bid - 0.5}", "0.9"]],
                        "checksum": 0,
                        "seq": seq,
                        "pseq": 0,
                        "ts": str(ts_ms),
                    }
                ],
                "ts": ts_ms + 3,
            }
        )

    @staticmethod
    def trade(symbol: str, ts_ms: int, trade_id: str, price: float = 100.25) -> bytes:
        """A trade update with one print."""
        return orjson.dumps(
            {
                "action": "update",
                "arg": {"instType": INST_TYPE, "channel": "trade", "instId": symbol},
                "data": [
                    {
                        "ts": str(ts_ms),
                        "price": f"{price}",
                        "size": "0.015",
                        "side": "buy",
                        "tradeId": trade_id,
                    }
                ],
                "ts": ts_ms + 9,
            }
        )


class ScriptedBitgetServer:
    """A Bitget-like public websocket server on 127.0.0.1 that tests script and break.

    It acks every subscribe/unsubscribe arg (error 30001 for `unknown_symbols`), answers
    `ping` with `pong` unless `answer_pings` is off, records every client message with its
    arrival time, and pushes books15 frames for subscribed symbols while `streaming` is on.
    `reject_handshakes` answers the opening handshake with HTTP 403.
    """

    def __init__(self) -> None:
        self.unknown_symbols: set[str] = set()
        self.answer_pings = True
        self.reject_handshakes = False
        self.streaming = False
        self.stream_interval_s = 0.02
        self.client_messages: list[tuple[float, str | bytes]] = []
        self.sent: list[bytes] = []
        self.connections_accepted = 0
        self.subscriptions: dict[ServerConnection, set[tuple[str, str]]] = {}
        self._server: Server | None = None
        self._streamer: asyncio.Task[None] | None = None
        self._ts_ms = itertools.count(1_726_000_000_000)

    @property
    def url(self) -> str:
        port = self._server.sockets[0].getsockname()[1]
        return f"ws://127.0.0.1:{port}"

    async def start(self) -> None:
        self._server = await serve(
            self._handle,
            "127.0.0.1",
            0,
            ping_interval=None,
            compression=None,
            process_request=self._screen_handshake,
        )
        self._streamer = asyncio.create_task(self._stream_books(), name="scripted-streamer")

    async def stop(self) -> None:
        self._streamer.cancel()
        await asyncio.wait([self._streamer])
        self._server.close()
        await self._server.wait_closed()

    def next_ts_ms(self) -> int:
        return next(self._ts_ms)

    def requests(self, op: str) -> list[dict]:
        """The client's JSON requests with this `op`, in arrival order."""
        found = []
        for _, message in self.client_messages:
            if message != "ping":
                request = orjson.loads(message)
                if request.get("op") == op:
                    found.append(request)
        return found

    def subscribed(self, channel: str, symbol: str) -> bool:
        return any((channel, symbol) in subs for subs in self.subscriptions.values())

    def max_client_messages_in(self, window_s: float) -> int:
        """The most client messages that arrived within any `window_s` window."""
        arrivals = sorted(at for at, _ in self.client_messages)
        most = 0
        first = 0
        for last, at in enumerate(arrivals):
            while at - arrivals[first] >= window_s:
                first += 1
            most = max(most, last - first + 1)
        return most

    async def push(self, frame: bytes, *, binary: bool = False) -> None:
        """Send `frame` to every connected client (a text frame unless `binary`)."""
        for connection in list(self.subscriptions):
            await self._send(connection, frame, binary=binary)

    async def drop_connections(self, code: int | None = None, reason: str = "") -> None:
        """Close every client connection: abruptly when `code` is None, else with that code."""
        for connection in list(self.subscriptions):
            if code is None:
                connection.transport.abort()
            else:
                await connection.close(code, reason)

    def _screen_handshake(self, connection: ServerConnection, request: Request) -> Response | None:
        if self.reject_handshakes:
            return connection.respond(HTTPStatus.FORBIDDEN, "scripted refusal\n")
        return None

    async def _handle(self, connection: ServerConnection) -> None:
        self.connections_accepted += 1
        self.subscriptions[connection] = set()
        try:
            async for message in connection:
                self.client_messages.append((time.monotonic(), message))
                await self._answer(connection, message)
        except ConnectionClosed:
            return
        finally:
            del self.subscriptions[connection]

    async def _answer(self, connection: ServerConnection, message: str | bytes) -> None:
        if message == "ping":
            if self.answer_pings:
                await self._send(connection, b"pong")
            return
        request = orjson.loads(message)
        op = request["op"]
        for arg in request["args"]:
            if op == "subscribe" and arg["instId"] in self.unknown_symbols:
                error = {
                    "event": "error",
                    "arg": arg,
                    "code": 30001,
                    "msg": f"instType:{arg['instType']},channel:{arg['channel']},"
                    f"instId:{arg['instId']},precision:null doesn't exist",
                    "op": "subscribe",
                }
                await self._send(connection, orjson.dumps(error))
                continue
            key = (arg["channel"], arg["instId"])
            if op == "subscribe":
                self.subscriptions[connection].add(key)
            else:
                self.subscriptions[connection].discard(key)
            await self._send(connection, orjson.dumps({"event": op, "arg": arg}))

    async def _send(
        self, connection: ServerConnection, frame: bytes, *, binary: bool = False
    ) -> None:
        self.sent.append(frame)
        try:
            await connection.send(frame, text=not binary)
        except ConnectionClosed:
            return

    async def _stream_books(self) -> None:
        while True:
            await asyncio.sleep(self.stream_interval_s)
            if not self.streaming:
                continue
            for connection, subscriptions in list(self.subscriptions.items()):
                for channel, symbol in sorted(subscriptions):
                    if channel == "books15":
                        await self._send(
                            connection, FrameFactory.books15(symbol, self.next_ts_ms())
                        )


class CollectingSink:
    """Keeps every market frame (book levels copied out of the parser's ring) and event."""

    def __init__(self) -> None:
        self.market: list[MarketFrame] = []
        self.events: list[FeedNotice] = []

    def on_market(self, frame: MarketFrame) -> None:
        if isinstance(frame, BookSnapshot):
            frame = frame._replace(
                levels=(
                    tuple(frame.bid_prices.tolist()),
                    tuple(frame.bid_sizes.tolist()),
                    tuple(frame.ask_prices.tolist()),
                    tuple(frame.ask_sizes.tolist()),
                )
            )
        elif isinstance(frame, Trades):
            # Trades point into the parser's ring; keep what they say, not the ring.
            frame = frame._replace(tape=FrozenTape(frame.prints))
        self.market.append(frame)

    def on_feed_event(self, event: FeedNotice) -> None:
        self.events.append(event)

    def states(self, symbol: str) -> list[FeedState]:
        return [
            event.state
            for event in self.events
            if isinstance(event, FeedStateChanged) and event.symbol == symbol
        ]

    def last_state_event(self, symbol: str) -> FeedStateChanged:
        return [
            event
            for event in self.events
            if isinstance(event, FeedStateChanged) and event.symbol == symbol
        ][-1]


def feed_config(url: str, **overrides: object) -> BitgetPublicFeedConfig:
    """A config with loopback-sized timings; pings and staleness stay out of the way."""
    settings: dict[str, object] = {
        "url": url,
        "ping_interval_s": 30.0,
        "stale_after_s": 30.0,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.05,
        "open_timeout_s": 2.0,
        "close_timeout_s": 0.5,
    }
    settings.update(overrides)
    return BitgetPublicFeedConfig(**settings)


@pytest.fixture
def frames() -> FrameFactory:
    return FrameFactory()


@pytest.fixture
def make_sink() -> type[CollectingSink]:
    return CollectingSink


@pytest.fixture
def make_config() -> Callable[..., BitgetPublicFeedConfig]:
    return feed_config


@pytest.fixture
def eventually() -> Callable[..., Awaitable[None]]:
    return support_eventually


@pytest.fixture
async def bitget_server() -> AsyncIterator[ScriptedBitgetServer]:
    server = ScriptedBitgetServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def sim_exchange():
    """The project's simulated Bitget exchange on loopback, pushing every 50 ms."""
    from engine.sim.server import SimExchangeConfig

    async with running_sim(SimExchangeConfig(book_interval_ms=50, warmup_ms=1_000)) as sim:
        yield sim


@pytest.fixture
async def make_feed() -> AsyncIterator[Callable[..., BitgetPublicFeed]]:
    """Builds feeds and stops every one of them at teardown, even after a failed assert."""
    feeds: list[BitgetPublicFeed] = []

    def build(
        config: BitgetPublicFeedConfig,
        sink: CollectingSink,
        recorder: FrameRecorder | None = None,
    ) -> BitgetPublicFeed:
        feed = BitgetPublicFeed(config, FrameParser(config.symbols), sink, recorder)
        feeds.append(feed)
        return feed

    yield build
    for feed in feeds:
        await feed.stop()
