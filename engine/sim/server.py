"""The simulated Bitget exchange: a loopback aiohttp server for the public and private
websockets and REST.

The market clock runs in real time: every `book_interval_ms` the generator advances to the wall
clock, its trades and book drive the matching engines (so resting orders fill), and the depth and
trade frames go out to the subscribed connections, a symbol at a time (requests are served in
between). Each connection has its own bounded outbox and writer task; a client that falls
`outbox_frames` behind is disconnected, as a real exchange drops slow consumers. Private
connections (`/v2/ws/private`, engine/sim/private_ws.py) share the outboxes, the message-rate
limit, the ping timeout and the `disconnect` fault.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import orjson
from aiohttp import WSCloseCode, WSMsgType, web

from engine.bitget.contracts import parse_contracts
from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import PRIVATE_WS_PATH, PUBLIC_WS_PATH
from engine.market.matching import (
    FIRST_FILL_ID,
    FIRST_ORDER_ID,
    Fill,
    IdSequence,
    MatchingEngine,
    MatchingEngineConfig,
    Order,
    Position,
    SimAccount,
    SimAccountConfig,
)
from engine.sim.contracts import SIM_CONTRACTS
from engine.sim.faults import FaultInjector, corrupt_frame
from engine.sim.frames import (
    INCREMENTAL_DEPTH_CHANNEL,
    INST_TYPE,
    PUBLIC_CHANNELS,
    SNAPSHOT_DEPTH_CHANNELS,
    TRADE_CHANNEL,
    DepthDelta,
    DepthPublisher,
    error_frame,
    event_frame,
    format_levels,
    trade_frame,
)
from engine.sim.market import BookLevels, MarketGenerator, MarketGeneratorConfig, SimTrade
from engine.sim.private_ws import PrivateSession, SimPrivateStream
from engine.sim.rest import SimExchangeState, SimRestApi, number_text
from engine.validation import require_count, require_integer, require_positive

logger = logging.getLogger(__name__)

_FILLS_KEPT = 10_000
_FIRST_SEQ = 1_000_000_000
_CLOSE_TIMEOUT_S = 2.0
_SNAPSHOT_LEVELS = max(SNAPSHOT_DEPTH_CHANNELS.values())


@dataclass(frozen=True, slots=True)
class SimExchangeConfig:
    """Where the simulated exchange listens, how fast it pushes, and what it accepts."""

    host: str = "127.0.0.1"
    port: int = 0
    """0 picks a free port."""
    book_interval_ms: int = 150
    market: MarketGeneratorConfig = field(default_factory=MarketGeneratorConfig)
    account: SimAccountConfig = field(default_factory=SimAccountConfig)
    maker_fee_rate: float = 0.0002
    taker_fee_rate: float = 0.0006
    api_key: str = "bg_sim_api_key"
    api_secret: str = "sim-api-secret"
    passphrase: str = "sim-passphrase"
    demo: bool = False
    """Require `paptrading: 1` on private calls (and refuse it when False), answering 40099."""
    warmup_ms: int = 5_000
    """Simulated market history run before start, so books and recent trades exist."""
    ping_timeout_s: float = 120.0
    """A connection that sends no `ping` for this long is dropped, as Bitget does."""
    max_messages_per_s: int = 10
    recent_trades: int = 50
    """Trades in the snapshot pushed on a `trade` subscribe."""
    outbox_frames: int = 1_000
    contracts: tuple[Mapping[str, object], ...] = SIM_CONTRACTS
    """The contract table `GET /api/v2/mix/market/contracts` answers, in Bitget's shape, with
    the fee rates above."""

    def __post_init__(self) -> None:
        if not self.host:
            raise ValueError("host must not be empty")
        owner = "SimExchangeConfig"
        require_integer(owner, "port", self.port, 0, 65_535)
        require_integer(owner, "book_interval_ms", self.book_interval_ms, 10, 10_000)
        if self.book_interval_ms < self.market.step_ms:
            raise ValueError(
                f"book_interval_ms ({self.book_interval_ms}) must not be shorter than the "
                f"market step ({self.market.step_ms} ms)"
            )
        # The account's key set is checked as any Bitget key set is (non-empty printable ASCII).
        self.credentials()
        require_integer(owner, "warmup_ms", self.warmup_ms, 0, 600_000)
        require_positive(owner, "ping_timeout_s", self.ping_timeout_s)
        require_count(owner, "max_messages_per_s", self.max_messages_per_s)
        require_integer(owner, "recent_trades", self.recent_trades, 1, 1_000)
        require_integer(owner, "outbox_frames", self.outbox_frames, 10)
        # Fee rates are checked by MatchingEngineConfig; build one here to fail early.
        MatchingEngineConfig(
            self.market.traded.instrument, self.maker_fee_rate, self.taker_fee_rate
        )
        # The table is served as it is: one the client's parser refuses is refused here.
        parse_contracts(list(self.contracts))

    def credentials(self) -> Credentials:
        """The one account's key set, the only one the REST API and private stream accept."""
        return Credentials(self.api_key, self.api_secret, self.passphrase)


class SimStats(NamedTuple):
    clients: int
    frames_pushed: int
    open_orders: int
    fills: int
    rest_requests: int
    mids: dict[str, float]
    """Each symbol's mid, rounded to its contract's decimals and one more (a one-tick spread's
    mid is half a tick)."""


class _CloseRequest(NamedTuple):
    code: int
    reason: bytes


class _ClientConnection:
    """One websocket client: its public subscriptions or private session, message-rate window
    and outbox."""

    def __init__(self, ws: web.WebSocketResponse, request: web.Request, outbox_frames: int) -> None:
        self.ws = ws
        self.request = request
        self.subscriptions: set[tuple[str, str]] = set()
        self.private: PrivateSession | None = None
        self.message_times: deque[float] = deque()
        self.last_ping = time.monotonic()
        self.outbox: asyncio.Queue[str | _CloseRequest] = asyncio.Queue(outbox_frames)
        self.writer: asyncio.Task[None] | None = None
        self.closing = False
        """Set once the connection is going away; nothing more is queued to it."""
        self.close_requested = False
        """Set when a close frame is queued behind the pending frames."""

    def abort(self) -> None:
        """Drop the TCP connection without a close frame (the client sees 1006)."""
        self.closing = True
        transport = self.request.transport
        if transport is not None:
            transport.abort()


class SimExchange:
    """The offline Bitget: market generator, matching engines, account and loopback server."""

    def __init__(self, config: SimExchangeConfig | None = None) -> None:
        self.config = config or SimExchangeConfig()
        self.faults = FaultInjector(
            on_disconnect=self._drop_connections, on_cut_frame=self._cut_public_mid_frame
        )
        self.account = SimAccount(self.config.account)
        self.market: MarketGenerator | None = None
        self._engines: dict[str, MatchingEngine] = {}
        self._publishers: dict[str, DepthPublisher] = {}
        self._recent_trades: dict[str, deque[SimTrade]] = {}
        self._fills: deque[Fill] = deque(maxlen=_FILLS_KEPT)
        self._connections: set[_ClientConnection] = set()
        self._runner: web.AppRunner | None = None
        self._clock_task: asyncio.Task[None] | None = None
        self._rest: SimRestApi | None = None
        self._private: SimPrivateStream | None = None
        self._port = 0
        self._epoch_ms_at_start = 0
        self._loop_time_at_start = 0.0
        self._frames_pushed = 0

    # Lifecycle

    async def start(self) -> None:
        if self._runner is not None:
            raise RuntimeError("SimExchange is already started")
        loop = asyncio.get_running_loop()
        self._loop_time_at_start = loop.time()
        self._epoch_ms_at_start = time.time_ns() // 1_000_000
        self._build_market()
        assert self._rest is not None
        app = web.Application(middlewares=[self._rest.error_middleware])
        app.router.add_get(PUBLIC_WS_PATH, self._serve_public_ws)
        app.router.add_get(PRIVATE_WS_PATH, self._serve_private_ws)
        app.router.add_routes(self._rest.routes())
        app.router.add_route("*", "/{tail:.*}", self._rest.not_found)
        runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=_CLOSE_TIMEOUT_S
        )
        await runner.setup()
        site = web.TCPSite(runner, self.config.host, self.config.port)
        await site.start()
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        self.faults.start()
        self._clock_task = asyncio.create_task(self._run_clock(), name="sim-exchange-clock")
        self._clock_task.add_done_callback(_log_clock_failure)

    async def stop(self) -> None:
        if self._runner is None:
            return
        if self._clock_task is not None:
            self._clock_task.cancel()
            await asyncio.gather(self._clock_task, return_exceptions=True)
            self._clock_task = None
        for connection in list(self._connections):
            await self._close_connection(connection)
        await self._runner.cleanup()
        self._runner = None

    @property
    def ws_url(self) -> str:
        return f"ws://{self._url_host}:{self._port}{PUBLIC_WS_PATH}"

    @property
    def private_ws_url(self) -> str:
        return f"ws://{self._url_host}:{self._port}{PRIVATE_WS_PATH}"

    @property
    def rest_url(self) -> str:
        return f"http://{self._url_host}:{self._port}"

    @property
    def _url_host(self) -> str:
        host = self.config.host
        return f"[{host}]" if ":" in host else host

    def now_ms(self) -> int:
        """Exchange time: epoch milliseconds, advancing with the event loop's monotonic clock."""
        elapsed = asyncio.get_running_loop().time() - self._loop_time_at_start
        return self._epoch_ms_at_start + round(elapsed * 1000)

    # In-process accessors

    def open_orders(self, symbol: str | None = None) -> list[Order]:
        return [
            order
            for engine in self._engines.values()
            if symbol is None or engine.symbol == symbol
            for order in engine.open_orders()
        ]

    def fills(self) -> list[Fill]:
        return list(self._fills)

    def rest_refusals(self) -> dict[str, int]:
        """Failure answers of the REST API so far, by Bitget code (40008, 429...)."""
        return dict(self._rest.refusals) if self._rest is not None else {}

    def positions(self) -> list[Position]:
        return self.account.positions()

    def relist(self, symbol: str, **fields: str) -> None:
        """Change `symbol`'s entry of the contract table the REST API serves (Bitget's field
        names and text values: `relist("ADAUSDT", pricePlace="3")`), as the venue does now
        and then; the matching engine keeps the grid it was started with."""
        assert self._rest is not None, "the exchange is not started"
        self._rest.relist(symbol, fields)

    def delist(self, symbol: str) -> None:
        """Take `symbol` out of the contract table the REST API serves, as the venue does when
        it delists a contract; the matching engine goes on (its book still moves)."""
        assert self._rest is not None, "the exchange is not started"
        self._rest.delist(symbol)

    def engine(self, symbol: str) -> MatchingEngine:
        return self._engines[symbol]

    def stats(self) -> SimStats:
        market = self.market
        mids: dict[str, float] = {}
        if market is not None:
            for symbol in market.symbols:
                decimals = market.instrument(symbol).price_decimals + 1
                mids[symbol] = round(market.book(symbol, 1).mid, decimals)
        private_pushed = self._private.frames_pushed if self._private is not None else 0
        return SimStats(
            clients=len(self._connections),
            frames_pushed=self._frames_pushed + private_pushed,
            open_orders=sum(len(engine.open_orders()) for engine in self._engines.values()),
            fills=len(self._fills),
            rest_requests=self._rest.requests_served if self._rest is not None else 0,
            mids=mids,
        )

    # Market clock

    def _build_market(self) -> None:
        config = self.config
        start_ms = self._epoch_ms_at_start - config.warmup_ms
        market = MarketGenerator(dataclasses.replace(config.market, start_ms=start_ms))
        warmup_trades = market.advance_to(self._epoch_ms_at_start)
        self.market = market
        state = SimExchangeState(
            config.credentials(), config.demo, self._engines, self.account, self.now_ms
        )
        # The table's fee rates are the ones this exchange charges.
        fees = {
            "makerFeeRate": number_text(config.maker_fee_rate),
            "takerFeeRate": number_text(config.taker_fee_rate),
        }
        contracts = [{**entry, **fees} for entry in config.contracts]
        rest = SimRestApi(state, self.faults, self._fills.extend, contracts)
        private = SimPrivateStream(state, rest.margin_mode, lambda: self.faults.silenced)
        order_ids = IdSequence(FIRST_ORDER_ID)
        fill_ids = IdSequence(FIRST_FILL_ID)
        for symbol in market.symbols:
            instrument = market.instrument(symbol)
            engine_config = MatchingEngineConfig(
                instrument, config.maker_fee_rate, config.taker_fee_rate
            )
            self._engines[symbol] = MatchingEngine(
                engine_config, self.account, order_ids, fill_ids, private.on_order_event
            )
            self._publishers[symbol] = DepthPublisher(symbol, _FIRST_SEQ)
            self._recent_trades[symbol] = deque(maxlen=config.recent_trades)
        self._rest = rest
        self._private = private
        self._advance(self._epoch_ms_at_start, warmup_trades)

    async def _run_clock(self) -> None:
        loop = asyncio.get_running_loop()
        interval = self.config.book_interval_ms / 1000.0
        deadline = loop.time()
        while True:
            deadline += interval
            delay = deadline - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                deadline = loop.time()  # fell behind: skip ahead rather than burst
            self.faults.poll()
            self._drop_idle_connections()
            now_ms = self.now_ms()
            assert self.market is not None
            for _ in self._advance_by_symbol(now_ms, self.market.advance_to(now_ms)):
                # A symbol at a time: REST requests are answered between the symbols of a
                # book, not after all of them.
                await asyncio.sleep(0)

    def _advance(self, now_ms: int, trades: list[SimTrade]) -> None:
        """A whole tick at once (`_advance_by_symbol`)."""
        for _ in self._advance_by_symbol(now_ms, trades):
            pass

    def _advance_by_symbol(self, now_ms: int, trades: list[SimTrade]) -> Iterator[None]:
        """Feed a tick's trades and books to the engines and publish to subscribers, one
        symbol after another; yields after each."""
        assert self.market is not None
        market = self.market
        new_trades: dict[str, list[SimTrade]] = {symbol: [] for symbol in market.symbols}
        for trade in trades:
            new_trades[trade.symbol].append(trade)
            self._recent_trades[trade.symbol].append(trade)
        for symbol in market.symbols:
            self._advance_symbol(symbol, now_ms, new_trades[symbol])
            yield

    def _advance_symbol(self, symbol: str, now_ms: int, trades: list[SimTrade]) -> None:
        assert self.market is not None
        engine = self._engines[symbol]
        for trade in trades:
            # Matched now, when the tick runs: a trade's own time can precede an order placed or
            # an answer given since the last tick, and a venue never stamps a fill before those.
            self._fills.extend(engine.on_trade(trade.price, trade.size, trade.side, now_ms))
        book = self.market.book(symbol)
        self._fills.extend(
            engine.on_book(
                book.bid_prices, book.bid_sizes, book.ask_prices, book.ask_sizes, book.ts_ms
            )
        )
        self.account.mark(symbol, book.mid)
        # Only the frames some connection subscribes to are rendered: a book of symbols renders
        # 100 levels a side each tick otherwise, and REST answers wait behind that.
        subscribed = {key for c in self._connections for key in c.subscriptions if key[1] == symbol}
        frames: dict[str, str] = {}
        publisher = self._publishers[symbol]
        incremental = (INCREMENTAL_DEPTH_CHANNEL, symbol) in subscribed
        delta = self._publish_depth(symbol, book, whole=incremental)
        if delta is not None and incremental and not self.faults.take_seq_gap():
            frames[INCREMENTAL_DEPTH_CHANNEL] = publisher.update_frame(delta, now_ms)
        for channel in SNAPSHOT_DEPTH_CHANNELS:
            if (channel, symbol) in subscribed:
                frames[channel] = publisher.snapshot_frame(channel, now_ms)
        if trades and (TRADE_CHANNEL, symbol) in subscribed:
            frames[TRADE_CHANNEL] = trade_frame(
                symbol,
                reversed(trades),
                self.market.instrument(symbol),
                action="update",
                push_ms=now_ms,
            )
        if self.faults.silenced:
            return
        for connection in list(self._connections):
            for channel, text in frames.items():
                if (channel, symbol) in connection.subscriptions:
                    self._push_data(connection, text)

    def _publish_depth(self, symbol: str, book: BookLevels, *, whole: bool) -> DepthDelta | None:
        """`book` as `symbol`'s published depth: `whole` for the incremental `books` channel,
        else only the levels the snapshot channels show; its delta (None: unchanged)."""
        assert self.market is not None
        instrument = self.market.instrument(symbol)
        depth = None if whole else _SNAPSHOT_LEVELS
        return self._publishers[symbol].publish(
            format_levels(book.bid_prices[:depth], book.bid_sizes[:depth], instrument),
            format_levels(book.ask_prices[:depth], book.ask_sizes[:depth], instrument),
            book.ts_ms,
        )

    # Websockets

    async def _serve_public_ws(self, request: web.Request) -> web.WebSocketResponse:
        return await self._serve_ws(request, private=False)

    async def _serve_private_ws(self, request: web.Request) -> web.WebSocketResponse:
        return await self._serve_ws(request, private=True)

    async def _serve_ws(self, request: web.Request, *, private: bool) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(
            autoping=True, heartbeat=None, timeout=_CLOSE_TIMEOUT_S, max_msg_size=1 << 16
        )
        await ws.prepare(request)
        connection = _ClientConnection(ws, request, self.config.outbox_frames)
        if private:
            assert self._private is not None
            connection.private = self._private.open(
                functools.partial(self._send, connection),
                functools.partial(self._request_close, connection),
            )
        connection.writer = asyncio.create_task(self._write(connection), name="sim-ws-writer")
        self._connections.add(connection)
        try:
            async for message in ws:
                if connection.closing:
                    continue  # read on until the queued close frame completes the handshake
                if message.type is WSMsgType.TEXT:
                    self._on_client_text(connection, message.data)
                elif message.type is WSMsgType.BINARY:
                    self._on_client_text(connection, None)
        finally:
            self._connections.discard(connection)
            if connection.private is not None and self._private is not None:
                self._private.close(connection.private)
            await self._finish_writer(connection)
        return ws

    async def _write(self, connection: _ClientConnection) -> None:
        ws = connection.ws
        while True:
            item = await connection.outbox.get()
            if isinstance(item, _CloseRequest):
                await ws.close(code=item.code, message=item.reason)
                return
            if ws.closed:
                return
            try:
                await ws.send_str(item)
            except ConnectionError:
                connection.closing = True
                return

    async def _finish_writer(self, connection: _ClientConnection) -> None:
        """Let a queued close finish; otherwise stop the writer, which waits for frames."""
        writer = connection.writer
        if writer is None or writer.done():
            return
        if connection.close_requested:
            await asyncio.wait({writer}, timeout=_CLOSE_TIMEOUT_S)
        writer.cancel()
        await asyncio.gather(writer, return_exceptions=True)

    def _send(self, connection: _ClientConnection, item: str | _CloseRequest) -> None:
        if connection.closing:
            return
        try:
            connection.outbox.put_nowait(item)
        except asyncio.QueueFull:
            logger.warning("sim websocket client too slow (outbox full); disconnecting it")
            connection.abort()

    def _request_close(self, connection: _ClientConnection, code: int, reason: bytes) -> None:
        self._send(connection, _CloseRequest(code, reason))
        connection.close_requested = True
        connection.closing = True

    def _push_data(self, connection: _ClientConnection, text: str) -> None:
        kind = self.faults.take_malformed()
        self._send(connection, corrupt_frame(text, kind) if kind is not None else text)
        self._frames_pushed += 1

    def _on_client_text(self, connection: _ClientConnection, text: str | None) -> None:
        now = time.monotonic()
        times = connection.message_times
        times.append(now)
        while times and times[0] <= now - 1.0:
            times.popleft()
        if len(times) > self.config.max_messages_per_s:
            self._request_close(connection, WSCloseCode.POLICY_VIOLATION, b"request too many")
            return
        if text == "ping":
            connection.last_ping = now
            self._send(connection, "pong")
            return
        request = _parse_json(text)
        if not isinstance(request, dict):
            self._send(connection, error_frame(30002, "illegal request"))
            return
        if connection.private is not None:
            assert self._private is not None
            self._private.on_request(connection.private, request)
            return
        op = request.get("op")
        if op not in ("subscribe", "unsubscribe"):
            self._send(connection, error_frame(30003, "invalid op", op=_text_or_none(op)))
            return
        args = request.get("args")
        if not isinstance(args, list) or not args:
            self._send(connection, error_frame(30016, "Param error", op=op))
            return
        for arg in args:
            self._on_channel_request(connection, op, arg)

    def _on_channel_request(self, connection: _ClientConnection, op: str, arg: object) -> None:
        if not isinstance(arg, dict):
            self._send(connection, error_frame(30016, "Param error", op=op, arg=arg))
            return
        inst_type, channel, symbol = arg.get("instType"), arg.get("channel"), arg.get("instId")
        if not all(isinstance(value, str) for value in (inst_type, channel, symbol)):
            self._send(connection, error_frame(30016, "Param error", op=op, arg=arg))
            return
        assert isinstance(channel, str) and isinstance(symbol, str) and isinstance(inst_type, str)
        if channel not in PUBLIC_CHANNELS:
            self._send(connection, error_frame(30016, "Param error", op=op, arg=arg))
            return
        if symbol not in self._engines:
            message = f"instType:{inst_type},channel:{channel},instId:{symbol} doesn't exist"
            self._send(connection, error_frame(30001, message, op=op, arg=arg))
            return
        self._send(
            connection,
            event_frame(op, {"instType": inst_type, "channel": channel, "instId": symbol}),
        )
        if inst_type != INST_TYPE:
            return  # like Bitget: a real symbol under another instType is acked, then silent
        key = (channel, symbol)
        if op == "unsubscribe":
            connection.subscriptions.discard(key)
            return
        connection.subscriptions.add(key)
        self._send_initial(connection, channel, symbol)

    def _send_initial(self, connection: _ClientConnection, channel: str, symbol: str) -> None:
        assert self.market is not None
        now_ms = self.now_ms()
        if channel == INCREMENTAL_DEPTH_CHANNEL:
            # The depth was published whole only while someone subscribed to it.
            self._publish_depth(symbol, self.market.book(symbol), whole=True)
            self._send(connection, self._publishers[symbol].snapshot_frame(channel, now_ms))
        elif channel == TRADE_CHANNEL:
            recent = reversed(self._recent_trades[symbol])
            instrument = self.market.instrument(symbol)
            self._send(
                connection,
                trade_frame(symbol, recent, instrument, action="snapshot", push_ms=now_ms),
            )

    # Connection management

    def _drop_connections(self) -> None:
        for connection in list(self._connections):
            connection.abort()

    def _cut_public_mid_frame(self) -> None:
        """Half a books15 frame on every public connection, then the TCP connection closed
        (after the bytes leave): the client reads a truncated frame and no close frame."""
        publisher = next(iter(self._publishers.values()), None)
        if publisher is None:
            return
        payload = publisher.snapshot_frame("books15", self.now_ms()).encode()
        partial = _unmasked_text_header(len(payload)) + payload[: len(payload) // 2]
        for connection in list(self._connections):
            if connection.private is not None:
                continue
            connection.closing = True
            transport = connection.request.transport
            if transport is not None and not transport.is_closing():
                transport.write(partial)
                transport.close()

    def _drop_idle_connections(self) -> None:
        deadline = time.monotonic() - self.config.ping_timeout_s
        for connection in list(self._connections):
            if connection.last_ping < deadline:
                connection.abort()

    async def _close_connection(self, connection: _ClientConnection) -> None:
        connection.closing = True
        if connection.writer is not None:
            connection.writer.cancel()
            await asyncio.gather(connection.writer, return_exceptions=True)
        await connection.ws.close(code=WSCloseCode.GOING_AWAY, message=b"server shutdown")


def _unmasked_text_header(length: int) -> bytes:
    """RFC 6455 header of a final, unmasked text frame (server to client) of `length` bytes."""
    if length < 126:
        return bytes((0x81, length))
    if length < 1 << 16:
        return bytes((0x81, 126)) + length.to_bytes(2, "big")
    return bytes((0x81, 127)) + length.to_bytes(8, "big")


def _parse_json(text: str | None) -> object:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _log_clock_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("sim exchange clock stopped", exc_info=task.exception())
