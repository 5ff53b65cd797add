"""Live Bitget v2 public websocket feed: subscribe, keep alive, reconnect, deliver typed frames.

One connection carries up to `channels_per_connection` channels (Bitget recommends fewer than
50 on one connection, and counts its limits per connection: 10 messages a second, 240
subscribe requests an hour); a book with more gets as many connections as it needs, each
symbol's channels on one of them. The receive loop is the hot path
(receive -> stamp -> record -> parse -> sink): no logging, no file I/O, few allocations.
Whatever the network does (closes, refused handshakes, silence, garbage) becomes a counted
stat or a `FeedStateChanged`; nothing escapes the feed's tasks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import orjson
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from engine.bitget.connections import (
    MAX_CHANNELS_PER_CONNECTION,
    RECOMMENDED_CHANNELS_PER_CONNECTION,
    check_connections,
    connection_symbols,
)
from engine.bitget.endpoints import BITGET_PUBLIC_URL
from engine.bitget.websocket import (
    ChannelArg,
    ReconnectingSocket,
    SessionEnd,
    SessionTasks,
    SocketCounters,
    SocketSettings,
    SocketStats,
    channel_arg,
    check_socket_settings,
    describe,
    describe_close,
    encode_op,
)
from engine.feed.events import (
    BookSnapshot,
    BookUpdate,
    ChannelAck,
    ChannelError,
    FeedState,
    FeedStateChanged,
    Pong,
)
from engine.feed.parse import DEPTH_CHANNELS, INCREMENTAL_CHANNEL, TRADE_CHANNEL, FrameParser
from engine.feed.recorder import FrameRecorder
from engine.feed.sink import FeedNotice, FeedSink
from engine.feed.tape import Trades
from engine.latency import FrameTimings

BOOK_CHANNELS = frozenset((*DEPTH_CHANNELS, INCREMENTAL_CHANNEL))
SUPPORTED_CHANNELS = BOOK_CHANNELS | {TRADE_CHANNEL}
MAX_SUBSCRIBE_ARGS_BYTES = 4096
"""Bitget's limit on the JSON length of one subscribe message's `args`."""
SYMBOL_NOT_FOUND = 30001
_NS_PER_S = 1_000_000_000
_STALE_CHECKS_PER_PERIOD = 4
_MAX_STALE_CHECK_PERIOD_S = 0.5


@dataclass(frozen=True, slots=True)
class BitgetPublicFeedConfig(SocketSettings):
    """Where to connect, what to subscribe, and how to keep the connection healthy.

    `symbols` lists the traded symbol first, then the hedge; `connection_symbols` says which
    connection carries which of them.
    """

    url: str = BITGET_PUBLIC_URL
    max_frame_bytes: int = 1 << 22
    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    channels: tuple[str, ...] = ("books15", "trade")
    stale_after_s: float = 2.0
    max_subscribe_args_bytes: int = MAX_SUBSCRIBE_ARGS_BYTES
    channels_per_connection: int = RECOMMENDED_CHANNELS_PER_CONNECTION

    def __post_init__(self) -> None:
        for name in ("symbols", "channels"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise ValueError(f"{name} must be a sequence of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if not self.symbols:
            raise ValueError("symbols must name at least one symbol")
        for symbol in self.symbols:
            if not isinstance(symbol, str) or not symbol or not symbol.isascii():
                raise ValueError(f"symbol must be a non-empty ASCII string, got {symbol!r}")
        if len(set(self.symbols)) != len(self.symbols):
            raise ValueError(f"symbols has duplicates: {self.symbols}")
        unsupported = [c for c in self.channels if c not in SUPPORTED_CHANNELS]
        if unsupported:
            raise ValueError(
                f"unsupported channels {unsupported}; supported: {sorted(SUPPORTED_CHANNELS)}"
            )
        if len(set(self.channels)) != len(self.channels):
            raise ValueError(f"channels has duplicates: {self.channels}")
        if not BOOK_CHANNELS.intersection(self.channels):
            raise ValueError(
                f"channels {self.channels} need a book channel ({sorted(BOOK_CHANNELS)}): "
                "liveness and staleness are judged on book frames"
            )
        per_connection = self.channels_per_connection
        if not len(self.channels) <= per_connection <= MAX_CHANNELS_PER_CONNECTION:
            raise ValueError(
                f"channels_per_connection must be in {len(self.channels)}.."
                f"{MAX_CHANNELS_PER_CONNECTION} (a symbol's channels share a connection; "
                f"Bitget carries at most {MAX_CHANNELS_PER_CONNECTION}), got {per_connection}"
            )
        check_connections(self.symbols, self.channels, per_connection)
        check_socket_settings(self, ("stale_after_s",), min_frame_bytes=1)
        if not 2 < self.max_subscribe_args_bytes <= MAX_SUBSCRIBE_ARGS_BYTES:
            raise ValueError(
                f"max_subscribe_args_bytes must be in 3..{MAX_SUBSCRIBE_ARGS_BYTES}, "
                f"got {self.max_subscribe_args_bytes}"
            )
        longest = max(
            len(orjson.dumps([channel_arg(self.inst_type, channel, symbol)]))
            for symbol in self.symbols
            for channel in self.channels
        )
        if longest > self.max_subscribe_args_bytes:
            raise ValueError(
                f"one subscribe arg takes {longest} bytes, over max_subscribe_args_bytes "
                f"({self.max_subscribe_args_bytes})"
            )

    @property
    def connection_symbols(self) -> tuple[tuple[str, ...], ...]:
        """The symbols each connection carries (`connection_symbols`)."""
        return connection_symbols(self.symbols, self.channels, self.channels_per_connection)


def batch_channel_args(args: Sequence[ChannelArg], max_args_bytes: int) -> list[list[ChannelArg]]:
    """Split args into consecutive batches whose JSON array stays within `max_args_bytes`."""
    batches: list[list[ChannelArg]] = []
    batch: list[ChannelArg] = []
    batch_bytes = 2  # the enclosing "[]"
    for arg in args:
        arg_bytes = len(orjson.dumps(arg))
        if batch and batch_bytes + 1 + arg_bytes > max_args_bytes:
            batches.append(batch)
            batch, batch_bytes = [], 2
        batch_bytes += arg_bytes + (1 if batch else 0)  # a comma between args
        batch.append(arg)
    if batch:
        batches.append(batch)
    return batches


@dataclass(frozen=True, slots=True)
class SymbolFeedStats:
    """One symbol's part of `FeedStats`; `book_age_ms` is None before any book frame."""

    state: FeedState
    reason: str
    frames: int
    book_frames: int
    trade_frames: int
    frames_per_s: float
    book_age_ms: float | None
    subscribed: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FeedStats(SocketStats):
    """A snapshot of a feed's counters, safe to hand to another thread.

    `frames`/`bytes` count every received frame, on every connection (`connections`);
    `foreign_frames` are market frames for a symbol the connection did not subscribe;
    `handler_errors` are exceptions raised by the parser or the sink (the frame is skipped);
    `internal_errors` are unexpected exceptions that ended a connection.
    """

    channel_errors: int
    resyncs: int
    foreign_frames: int
    connections: int
    symbols: Mapping[str, SymbolFeedStats]
    parser: Mapping[str, object]


@dataclass(slots=True)
class _FeedCounters(SocketCounters):
    channel_errors: int = 0
    resyncs: int = 0
    foreign_frames: int = 0


class _SymbolFeed:
    """Mutable per-symbol state; the frame rate is counted in one-second windows."""

    __slots__ = (
        "book_frames",
        "frames",
        "last_book_ns",
        "rate_per_s",
        "rate_window_frames",
        "rate_window_start_ns",
        "reason",
        "state",
        "subscribed",
        "subscribed_ns",
        "symbol",
        "trade_frames",
    )

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol
        self.state = FeedState.STOPPED
        self.reason = "not started"
        self.frames = 0
        self.book_frames = 0
        self.trade_frames = 0
        self.last_book_ns = 0
        self.subscribed_ns = 0
        self.subscribed: set[str] = set()
        self.rate_window_start_ns = 0
        self.rate_window_frames = 0
        self.rate_per_s = 0.0

    def count_frame(self, recv_ns: int) -> None:
        self.frames += 1
        elapsed_ns = recv_ns - self.rate_window_start_ns
        if elapsed_ns >= _NS_PER_S:
            self.rate_per_s = self.rate_window_frames * _NS_PER_S / elapsed_ns
            self.rate_window_start_ns = recv_ns
            self.rate_window_frames = 0
        self.rate_window_frames += 1

    def frames_per_s(self, now_ns: int) -> float:
        elapsed_ns = now_ns - self.rate_window_start_ns
        if elapsed_ns >= _NS_PER_S:  # the window is overdue: frames have slowed or stopped
            return self.rate_window_frames * _NS_PER_S / elapsed_ns
        return self.rate_per_s


class _Connection:
    """One of the feed's websockets (a `SocketOwner`) and the symbols it carries."""

    def __init__(
        self, feed: BitgetPublicFeed, name: str, symbols: Mapping[str, _SymbolFeed]
    ) -> None:
        self.feed = feed
        self.name = name
        self.symbols = symbols
        self.socket = ReconnectingSocket(feed.config, feed._counters)
        self.resync_pending: dict[str, None] = {}  # insertion-ordered set
        self.resync_requested = asyncio.Event()

    def session_tasks(self, websocket: ClientConnection) -> SessionTasks:
        self.resync_pending.clear()
        self.resync_requested.clear()
        feed, name = self.feed, self.name
        return SessionTasks(
            f"{name}-receive",
            feed._receive(websocket, self),
            {
                f"{name}-control": feed._control(self),
                f"{name}-keepalive": self.socket.keep_alive(),
                f"{name}-staleness": feed._watch_staleness(self.symbols),
            },
        )

    def session_closed(self) -> bool:
        for symbol_feed in self.symbols.values():
            symbol_feed.subscribed.clear()
            symbol_feed.subscribed_ns = 0
        return True  # no login to fail: a session that lasted counts

    def connection_down(self, reason: str, *, failed: bool) -> None:
        # Symbols the exchange refused stay FAILED with the exchange's own reason.
        state = FeedState.FAILED if failed else FeedState.RECONNECTING
        for symbol_feed in self.symbols.values():
            if symbol_feed.state is not FeedState.FAILED:
                self.feed._set_state(symbol_feed, state, reason)


class BitgetPublicFeed:
    """Bitget public market data for `config.symbols`, over as many websocket connections as
    `config.connection_symbols` says (one for a small book); a connection lost, refused or
    given up affects its own symbols only.

    Per-symbol state: STOPPED (not started) -> CONNECTING -> LIVE on the first book frame ->
    STALE after `stale_after_s` without one -> LIVE again; RECONNECTING after a connection
    loss; FAILED when the exchange refuses the symbol (30001) or reconnecting is given up;
    STOPPED after `stop()`. Every change reaches the sink as a `FeedStateChanged`.
    """

    def __init__(
        self,
        config: BitgetPublicFeedConfig,
        parser: FrameParser,
        sink: FeedSink,
        recorder: FrameRecorder | None = None,
    ) -> None:
        self.config = config
        self._parser = parser
        self._sink = sink
        self._recorder = recorder
        self._symbols = {symbol: _SymbolFeed(symbol) for symbol in config.symbols}
        self._counters = _FeedCounters()
        self.timings = FrameTimings()
        groups = config.connection_symbols
        self._connections = tuple(
            _Connection(
                self,
                "bitget-feed" if len(groups) == 1 else f"bitget-feed-{index}",
                {symbol: self._symbols[symbol] for symbol in group},
            )
            for index, group in enumerate(groups)
        )
        self._connection_of = {
            symbol: connection for connection in self._connections for symbol in connection.symbols
        }

    async def start(self) -> None:
        """Start connecting in the background and return at once."""
        for connection in self._connections:
            connection.socket.start(connection, connection.name)
        for symbol_feed in self._symbols.values():
            self._set_state(symbol_feed, FeedState.CONNECTING, f"connecting to {self.config.url}")

    async def stop(self) -> None:
        """Cancel every task, close the connections, and move every symbol to STOPPED."""
        stopped = [await connection.socket.stop() for connection in self._connections]
        if not any(stopped):
            return
        for symbol_feed in self._symbols.values():
            self._set_state(symbol_feed, FeedState.STOPPED, "feed stopped")

    def state(self, symbol: str) -> FeedState:
        return self._symbol_feed(symbol).state

    def request_resync(self, symbol: str) -> None:
        """Unsubscribe and resubscribe `symbol`'s incremental `books` channel.

        Call it on the feed's event loop (the sink already runs there). Requests are coalesced
        and sent, rate limited, by the connection's control task; a reconnect resubscribes
        everything anyway, so requests pending at a disconnect are dropped.
        """
        self._symbol_feed(symbol)
        if INCREMENTAL_CHANNEL not in self.config.channels:
            raise ValueError(
                f"request_resync needs the {INCREMENTAL_CHANNEL!r} channel; "
                f"this feed subscribes {self.config.channels}"
            )
        connection = self._connection_of[symbol]
        connection.resync_pending[symbol] = None
        connection.resync_requested.set()

    @property
    def stats(self) -> FeedStats:
        now_ns = time.time_ns()
        symbols = {
            symbol: SymbolFeedStats(
                state=feed.state,
                reason=feed.reason,
                frames=feed.frames,
                book_frames=feed.book_frames,
                trade_frames=feed.trade_frames,
                frames_per_s=feed.frames_per_s(now_ns),
                book_age_ms=(now_ns - feed.last_book_ns) / 1e6 if feed.last_book_ns else None,
                subscribed=tuple(sorted(feed.subscribed)),
            )
            for symbol, feed in self._symbols.items()
        }
        # The counters are the feed's, shared by its connections; the run of failures is the
        # longest of any one connection's.
        socket_fields = self._connections[0].socket.stats_fields()
        socket_fields["consecutive_failures"] = max(
            connection.socket.consecutive_failures for connection in self._connections
        )
        return FeedStats(
            **socket_fields,
            connections=len(self._connections),
            symbols=MappingProxyType(symbols),
            parser=MappingProxyType(self._parser.stats.as_dict()),
        )

    def _symbol_feed(self, symbol: str) -> _SymbolFeed:
        try:
            return self._symbols[symbol]
        except KeyError:
            raise KeyError(f"{symbol!r} is not a symbol of this feed") from None

    # A connection's session (`_Connection.session_tasks`)

    async def _control(self, connection: _Connection) -> SessionEnd:
        """Subscribe the connection's symbols, then serve their resync requests, all through
        its rate limiter."""
        config = self.config
        symbols = connection.symbols
        socket = connection.socket
        try:
            args = [
                channel_arg(config.inst_type, channel, symbol)
                for symbol, symbol_feed in symbols.items()
                if symbol_feed.state is not FeedState.FAILED
                for channel in config.channels
            ]
            for batch in batch_channel_args(args, config.max_subscribe_args_bytes):
                await socket.send(encode_op("subscribe", batch))
                sent_ns = time.time_ns()
                for arg in batch:
                    symbols[arg["instId"]].subscribed_ns = sent_ns
            while True:
                await connection.resync_requested.wait()
                connection.resync_requested.clear()
                args = [
                    channel_arg(config.inst_type, INCREMENTAL_CHANNEL, symbol)
                    for symbol in connection.resync_pending
                    if symbols[symbol].state is not FeedState.FAILED
                ]
                connection.resync_pending.clear()
                for op in ("unsubscribe", "subscribe"):
                    for batch in batch_channel_args(args, config.max_subscribe_args_bytes):
                        await socket.send(encode_op(op, batch))
                self._counters.resyncs += len(args)
        except ConnectionClosed as closed:
            return SessionEnd(f"{describe_close(closed)} while sending")

    async def _watch_staleness(self, symbols: Mapping[str, _SymbolFeed]) -> SessionEnd:
        """Mark `symbols` STALE when no book frame came for `stale_after_s`; never returns."""
        stale_after_s = self.config.stale_after_s
        stale_after_ns = int(stale_after_s * _NS_PER_S)
        period_s = min(stale_after_s / _STALE_CHECKS_PER_PERIOD, _MAX_STALE_CHECK_PERIOD_S)
        while True:
            await asyncio.sleep(period_s)
            now_ns = time.time_ns()
            for symbol_feed in symbols.values():
                state = symbol_feed.state
                subscribed_ns = symbol_feed.subscribed_ns
                if state is FeedState.FAILED or state is FeedState.STALE or not subscribed_ns:
                    continue
                last_book_ns = symbol_feed.last_book_ns
                if last_book_ns >= subscribed_ns:
                    if now_ns - last_book_ns > stale_after_ns:
                        age_s = (now_ns - last_book_ns) / _NS_PER_S
                        self._set_state(
                            symbol_feed, FeedState.STALE, f"no book frame for {age_s:.1f} s"
                        )
                elif now_ns - subscribed_ns > stale_after_ns:
                    self._set_state(
                        symbol_feed,
                        FeedState.STALE,
                        f"no book frame within {stale_after_s:g} s of subscribing",
                    )

    # The hot path

    async def _receive(self, websocket: ClientConnection, connection: _Connection) -> SessionEnd:
        """Receive until the connection closes; returns why it closed."""
        counters = self._counters
        symbols = connection.symbols
        pong = connection.socket.pong
        parse = self._parser.parse
        on_market = self._sink.on_market
        record = self._recorder.write if self._recorder is not None else None
        receive = websocket.recv
        time_ns = time.time_ns
        live = FeedState.LIVE
        # From the receive stamp: parse, and the whole frame through the sink (one clock pair).
        timings = self.timings
        parse_times, totals, trade_times = timings.parse, timings.total, timings.trade
        sleep = asyncio.sleep
        while True:
            # Frames already buffered are read without suspending: a burst (every symbol's
            # book at once) would hold the loop for all of it, and a kill's or an order's
            # answer behind it. One pass of the loop between frames lets those in.
            await sleep(0)
            try:
                raw = await receive(decode=False)
            except ConnectionClosed as closed:
                return SessionEnd(describe_close(closed))
            recv_ns = time_ns()
            counters.frames += 1
            counters.bytes += len(raw)
            if record is not None:
                record(recv_ns, raw)
            try:
                frame = parse(raw, recv_ns)
                if frame is None:
                    continue  # rejected; the parser counted why
                parsed_ns = time_ns()
                kind = type(frame)
                if kind is BookSnapshot or kind is BookUpdate or kind is Trades:
                    symbol_feed = symbols.get(frame.symbol)
                    if symbol_feed is None:
                        counters.foreign_frames += 1
                        continue
                    symbol_feed.count_frame(recv_ns)
                    if kind is Trades:
                        symbol_feed.trade_frames += 1
                        on_market(frame)
                        trade_times.record(time_ns() - recv_ns)
                        continue
                    symbol_feed.book_frames += 1
                    symbol_feed.last_book_ns = recv_ns
                    if symbol_feed.state is not live:
                        self._on_book_resumed(symbol_feed)
                    on_market(frame)
                    totals.record(time_ns() - recv_ns)
                    parse_times.record(parsed_ns - recv_ns)
                elif kind is Pong:
                    pong(frame.recv_ns)
                elif kind is ChannelAck:
                    self._on_ack(frame)
                else:
                    self._on_channel_error(frame)
            except Exception as error:  # a parser or sink bug must not take the feed down
                counters.handler_errors += 1
                counters.last_handler_error = describe(error)

    def _on_book_resumed(self, symbol_feed: _SymbolFeed) -> None:
        state = symbol_feed.state
        if state is FeedState.FAILED or state is FeedState.STOPPED:
            return
        if state is FeedState.STALE:
            reason = "book frames resumed"
        elif state is FeedState.RECONNECTING:
            reason = "first book frame after reconnecting"
        else:
            reason = "first book frame"
        self._set_state(symbol_feed, FeedState.LIVE, reason)

    def _on_ack(self, ack: ChannelAck) -> None:
        symbol_feed = self._symbols.get(ack.symbol)
        if symbol_feed is None:
            return
        if ack.event == "subscribe":
            symbol_feed.subscribed.add(ack.channel)
        elif ack.event == "unsubscribe":
            symbol_feed.subscribed.discard(ack.channel)

    def _on_channel_error(self, error: ChannelError) -> None:
        self._counters.channel_errors += 1
        self._emit(error)
        symbol_feed = self._symbols.get(error.symbol)
        if symbol_feed is not None and error.code == SYMBOL_NOT_FOUND:
            self._set_state(symbol_feed, FeedState.FAILED, error.message or "symbol not found")

    def _set_state(self, symbol_feed: _SymbolFeed, state: FeedState, reason: str) -> None:
        symbol_feed.reason = reason
        if symbol_feed.state is state:
            return
        symbol_feed.state = state
        self._emit(FeedStateChanged(symbol_feed.symbol, state, reason, time.time_ns()))

    def _emit(self, event: FeedNotice) -> None:
        try:
            self._sink.on_feed_event(event)
        except Exception as error:  # a sink bug must not take the feed down
            self._counters.handler_errors += 1
            self._counters.last_handler_error = describe(error)
