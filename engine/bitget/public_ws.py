"""Live Bitget v2 public websocket feed: subscribe, keep alive, reconnect, deliver typed frames.

One connection carries every configured symbol. The receive loop is the hot path
(receive -> stamp -> record -> parse -> sink): no logging, no file I/O, few allocations.
Whatever the network does (closes, refused handshakes, silence, garbage) becomes a counted
stat or a `FeedStateChanged`; nothing escapes the feed's tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType, TracebackType

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from engine.bitget.endpoints import BITGET_PUBLIC_URL
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
MAX_CHANNELS_PER_CONNECTION = 1000
MAX_SUBSCRIBE_ARGS_BYTES = 4096
"""Bitget's limit on the JSON length of one subscribe message's `args`."""
SYMBOL_NOT_FOUND = 30001
PING = b"ping"
_NS_PER_S = 1_000_000_000
_STALE_CHECKS_PER_PERIOD = 4
_MAX_STALE_CHECK_PERIOD_S = 0.5

ChannelArg = dict[str, str]


@dataclass(frozen=True, slots=True)
class BitgetPublicFeedConfig:
    """Where to connect, what to subscribe, and how to keep the connection healthy.

    `symbols` lists the traded symbol first, then the hedge. `max_reconnect_attempts` is the
    number of consecutive connection failures after which every symbol goes FAILED (0 retries
    forever); a connection that stayed up `backoff_reset_after_s` resets the count and the
    backoff. `send_window_margin_s` widens the 1 s rate window so network jitter cannot squeeze
    one message too many into the exchange's window.
    """

    url: str = BITGET_PUBLIC_URL
    symbols: tuple[str, ...] = ("BTCUSDT", "ETHUSDT")
    channels: tuple[str, ...] = ("books15", "trade")
    inst_type: str = "USDT-FUTURES"
    ping_interval_s: float = 25.0
    pong_timeout_s: float = 10.0
    stale_after_s: float = 2.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    backoff_reset_after_s: float = 10.0
    max_reconnect_attempts: int = 0
    max_client_messages_per_s: int = 10
    send_window_margin_s: float = 0.1
    max_subscribe_args_bytes: int = MAX_SUBSCRIBE_ARGS_BYTES
    open_timeout_s: float = 10.0
    close_timeout_s: float = 1.0
    max_frame_bytes: int = 1 << 22

    def __post_init__(self) -> None:
        for name in ("symbols", "channels"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise ValueError(f"{name} must be a sequence of strings, got {value!r}")
            object.__setattr__(self, name, tuple(value))
        if not self.url.startswith(("ws://", "wss://")):
            raise ValueError(f"url must start with ws:// or wss://, got {self.url!r}")
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
        if not self.inst_type:
            raise ValueError("inst_type must not be empty")
        channel_count = len(self.symbols) * len(self.channels)
        if channel_count > MAX_CHANNELS_PER_CONNECTION:
            raise ValueError(
                f"{channel_count} channels exceed Bitget's {MAX_CHANNELS_PER_CONNECTION} "
                "per connection"
            )
        for name in (
            "ping_interval_s",
            "pong_timeout_s",
            "stale_after_s",
            "backoff_initial_s",
            "backoff_max_s",
            "open_timeout_s",
            "close_timeout_s",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value}")
        if self.backoff_max_s < self.backoff_initial_s:
            raise ValueError(
                f"backoff_max_s ({self.backoff_max_s}) must be >= backoff_initial_s "
                f"({self.backoff_initial_s})"
            )
        if not (math.isfinite(self.backoff_reset_after_s) and self.backoff_reset_after_s >= 0):
            raise ValueError(
                f"backoff_reset_after_s must be a finite number >= 0, "
                f"got {self.backoff_reset_after_s}"
            )
        if not (math.isfinite(self.send_window_margin_s) and self.send_window_margin_s >= 0):
            raise ValueError(
                f"send_window_margin_s must be a finite number >= 0, "
                f"got {self.send_window_margin_s}"
            )
        if self.max_reconnect_attempts < 0:
            raise ValueError(
                f"max_reconnect_attempts must be >= 0 (0 = forever), "
                f"got {self.max_reconnect_attempts}"
            )
        if self.max_client_messages_per_s < 1:
            raise ValueError(
                f"max_client_messages_per_s must be >= 1, got {self.max_client_messages_per_s}"
            )
        if self.max_frame_bytes < 1:
            raise ValueError(f"max_frame_bytes must be >= 1, got {self.max_frame_bytes}")
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


def channel_arg(inst_type: str, channel: str, symbol: str) -> ChannelArg:
    return {"instType": inst_type, "channel": channel, "instId": symbol}


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


def encode_op(op: str, args: Sequence[ChannelArg]) -> bytes:
    return orjson.dumps({"op": op, "args": list(args)})


class ReconnectBackoff:
    """Capped exponential backoff with full jitter: a delay drawn from [0, ceiling]."""

    def __init__(self, initial_s: float, max_s: float, rng: random.Random | None = None) -> None:
        self.initial_s = initial_s
        self.max_s = max_s
        self._rng = rng if rng is not None else random.Random()

    def ceiling_s(self, failures: int) -> float:
        """The largest delay after `failures` consecutive failures (1 = the first)."""
        exponent = min(max(failures - 1, 0), 64)  # 2**64 * initial is past any sane cap
        return min(self.max_s, self.initial_s * 2.0**exponent)

    def delay_s(self, failures: int) -> float:
        return self._rng.uniform(0.0, self.ceiling_s(failures))


class ClientMessageLimiter:
    """Spaces sends so that no `window_s` window holds more than `max_messages`.

    A log of the last `max_messages` send times, not a token bucket: a bucket that starts full
    lets nearly twice its capacity through in the second around a refill, which is exactly
    what gets a Bitget connection closed. Use as `async with limiter: await ws.send(...)`;
    the slot is stamped when the send has completed.
    """

    def __init__(self, max_messages: int, window_s: float) -> None:
        self.max_messages = max_messages
        self.window_s = window_s
        self._sent_at: deque[float] = deque(maxlen=max_messages)
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> None:
        await self._lock.acquire()
        sent_at = self._sent_at
        if len(sent_at) == self.max_messages:
            wait_s = sent_at[0] + self.window_s - time.monotonic()
            if wait_s > 0:
                try:
                    await asyncio.sleep(wait_s)
                except BaseException:
                    self._lock.release()
                    raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._sent_at.append(time.monotonic())
        self._lock.release()


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
class FeedStats:
    """A snapshot of a feed's counters, safe to hand to another thread.

    `frames`/`bytes` count every received frame; `foreign_frames` are market frames for a
    symbol this feed did not subscribe; `handler_errors` are exceptions raised by the parser
    or the sink (the frame is skipped); `internal_errors` are unexpected exceptions that ended
    a connection.
    """

    frames: int
    bytes: int
    connects: int
    reconnects: int
    connect_failures: int
    consecutive_failures: int
    last_backoff_s: float
    last_disconnect: str
    messages_sent: int
    pings_sent: int
    pongs: int
    pong_timeouts: int
    last_pong_latency_ms: float | None
    channel_errors: int
    resyncs: int
    foreign_frames: int
    handler_errors: int
    last_handler_error: str
    internal_errors: int
    symbols: Mapping[str, SymbolFeedStats]
    parser: Mapping[str, object]


class _FeedCounters:
    __slots__ = (
        "bytes",
        "channel_errors",
        "connect_failures",
        "connects",
        "foreign_frames",
        "frames",
        "handler_errors",
        "internal_errors",
        "last_backoff_s",
        "last_disconnect",
        "last_handler_error",
        "last_pong_latency_ms",
        "messages_sent",
        "pings_sent",
        "pong_timeouts",
        "pongs",
        "reconnects",
        "resyncs",
    )

    def __init__(self) -> None:
        self.frames = 0
        self.bytes = 0
        self.connects = 0
        self.reconnects = 0
        self.connect_failures = 0
        self.last_backoff_s = 0.0
        self.last_disconnect = ""
        self.messages_sent = 0
        self.pings_sent = 0
        self.pongs = 0
        self.pong_timeouts = 0
        self.last_pong_latency_ms: float | None = None
        self.channel_errors = 0
        self.resyncs = 0
        self.foreign_frames = 0
        self.handler_errors = 0
        self.last_handler_error = ""
        self.internal_errors = 0


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


class BitgetPublicFeed:
    """Bitget public market data for `config.symbols` over one websocket connection.

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
        self._backoff = ReconnectBackoff(config.backoff_initial_s, config.backoff_max_s)
        self._consecutive_failures = 0
        self._run_task: asyncio.Task[None] | None = None
        self._stopped = False
        self._resync_pending: dict[str, None] = {}  # insertion-ordered set
        self._resync_requested = asyncio.Event()
        self._pong_received = asyncio.Event()
        self._ping_sent_ns = 0

    async def start(self) -> None:
        """Start connecting in the background and return at once."""
        if self._run_task is not None or self._stopped:
            raise RuntimeError("a BitgetPublicFeed can be started only once")
        for symbol_feed in self._symbols.values():
            self._set_state(symbol_feed, FeedState.CONNECTING, f"connecting to {self.config.url}")
        self._run_task = asyncio.create_task(self._run(), name="bitget-feed")

    async def stop(self) -> None:
        """Cancel every task, close the connection, and move every symbol to STOPPED."""
        if self._stopped:
            return
        self._stopped = True
        if self._run_task is not None:
            self._run_task.cancel()
            await asyncio.wait([self._run_task])
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
        self._resync_pending[symbol] = None
        self._resync_requested.set()

    @property
    def stats(self) -> FeedStats:
        counters = self._counters
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
        return FeedStats(
            frames=counters.frames,
            bytes=counters.bytes,
            connects=counters.connects,
            reconnects=counters.reconnects,
            connect_failures=counters.connect_failures,
            consecutive_failures=self._consecutive_failures,
            last_backoff_s=counters.last_backoff_s,
            last_disconnect=counters.last_disconnect,
            messages_sent=counters.messages_sent,
            pings_sent=counters.pings_sent,
            pongs=counters.pongs,
            pong_timeouts=counters.pong_timeouts,
            last_pong_latency_ms=counters.last_pong_latency_ms,
            channel_errors=counters.channel_errors,
            resyncs=counters.resyncs,
            foreign_frames=counters.foreign_frames,
            handler_errors=counters.handler_errors,
            last_handler_error=counters.last_handler_error,
            internal_errors=counters.internal_errors,
            symbols=MappingProxyType(symbols),
            parser=MappingProxyType(self._parser.stats.as_dict()),
        )

    def _symbol_feed(self, symbol: str) -> _SymbolFeed:
        try:
            return self._symbols[symbol]
        except KeyError:
            raise KeyError(f"{symbol!r} is not a symbol of this feed") from None

    # Connection lifecycle

    async def _run(self) -> None:
        config = self.config
        counters = self._counters
        while True:
            try:
                websocket = await connect(
                    config.url,
                    open_timeout=config.open_timeout_s,
                    ping_interval=None,  # Bitget's keep-alive is the text "ping", sent below
                    close_timeout=config.close_timeout_s,
                    max_size=config.max_frame_bytes,
                    compression=None,  # inflating every frame costs more than it saves here
                )
            except Exception as error:  # refused, timed out, bad handshake: all retried
                counters.connect_failures += 1
                reason = f"connect failed: {_describe(error)}"
            else:
                counters.connects += 1
                connected_at = time.monotonic()
                reason = await self._session(websocket)
                if time.monotonic() - connected_at >= config.backoff_reset_after_s:
                    self._consecutive_failures = 0
            counters.last_disconnect = reason
            self._consecutive_failures += 1
            # Symbols the exchange refused stay FAILED with the exchange's own reason.
            retried = [s for s in self._symbols.values() if s.state is not FeedState.FAILED]
            if 0 < config.max_reconnect_attempts <= self._consecutive_failures:
                for symbol_feed in retried:
                    self._set_state(
                        symbol_feed,
                        FeedState.FAILED,
                        f"gave up after {self._consecutive_failures} consecutive connection "
                        f"failures; last: {reason}",
                    )
                return
            delay_s = self._backoff.delay_s(self._consecutive_failures)
            counters.last_backoff_s = delay_s
            for symbol_feed in retried:
                self._set_state(
                    symbol_feed, FeedState.RECONNECTING, f"{reason}; retry in {delay_s:.2f} s"
                )
            await asyncio.sleep(delay_s)
            counters.reconnects += 1

    async def _session(self, websocket: ClientConnection) -> str:
        """Run one connection until it ends; returns why it ended."""
        self._resync_pending.clear()
        self._resync_requested.clear()
        self._pong_received.clear()
        self._ping_sent_ns = 0
        limiter = ClientMessageLimiter(
            self.config.max_client_messages_per_s, 1.0 + self.config.send_window_margin_s
        )
        receiver = asyncio.create_task(self._receive(websocket), name="bitget-feed-receive")
        tasks = {
            receiver,
            asyncio.create_task(self._control(websocket, limiter), name="bitget-feed-control"),
            asyncio.create_task(self._keep_alive(websocket, limiter), name="bitget-feed-keepalive"),
            asyncio.create_task(self._watch_staleness(), name="bitget-feed-staleness"),
        }
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            # The receiver knows the close code; prefer its account when it ended too.
            ended = receiver if receiver in done else done.pop()
            if ended.exception() is not None:
                self._counters.internal_errors += 1
                return f"internal error: {_describe(ended.exception())}"
            return ended.result()
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.wait(tasks)
            for symbol_feed in self._symbols.values():
                symbol_feed.subscribed.clear()
                symbol_feed.subscribed_ns = 0
            # The connection is being dropped either way; a failing close changes nothing.
            with contextlib.suppress(Exception):
                await websocket.close()

    async def _send(
        self, websocket: ClientConnection, limiter: ClientMessageLimiter, message: bytes
    ) -> None:
        async with limiter:
            await websocket.send(message, text=True)
        self._counters.messages_sent += 1

    async def _control(self, websocket: ClientConnection, limiter: ClientMessageLimiter) -> str:
        """Subscribe everything, then serve resync requests, all through the rate limiter."""
        config = self.config
        symbols = self._symbols
        try:
            args = [
                channel_arg(config.inst_type, channel, symbol)
                for symbol, symbol_feed in symbols.items()
                if symbol_feed.state is not FeedState.FAILED
                for channel in config.channels
            ]
            for batch in batch_channel_args(args, config.max_subscribe_args_bytes):
                await self._send(websocket, limiter, encode_op("subscribe", batch))
                sent_ns = time.time_ns()
                for arg in batch:
                    symbols[arg["instId"]].subscribed_ns = sent_ns
            while True:
                await self._resync_requested.wait()
                self._resync_requested.clear()
                args = [
                    channel_arg(config.inst_type, INCREMENTAL_CHANNEL, symbol)
                    for symbol in self._resync_pending
                    if symbols[symbol].state is not FeedState.FAILED
                ]
                self._resync_pending.clear()
                for op in ("unsubscribe", "subscribe"):
                    for batch in batch_channel_args(args, config.max_subscribe_args_bytes):
                        await self._send(websocket, limiter, encode_op(op, batch))
                self._counters.resyncs += len(args)
        except ConnectionClosed as closed:
            return f"{_describe_close(closed)} while sending"

    async def _keep_alive(self, websocket: ClientConnection, limiter: ClientMessageLimiter) -> str:
        """Ping every `ping_interval_s`; a missing pong ends the connection."""
        config = self.config
        pong_received = self._pong_received
        try:
            while True:
                await asyncio.sleep(config.ping_interval_s)
                pong_received.clear()
                await self._send(websocket, limiter, PING)
                self._ping_sent_ns = time.time_ns()
                self._counters.pings_sent += 1
                try:
                    async with asyncio.timeout(config.pong_timeout_s):
                        await pong_received.wait()
                except TimeoutError:
                    self._counters.pong_timeouts += 1
                    return f"no pong within {config.pong_timeout_s:g} s of a ping"
        except ConnectionClosed as closed:
            return f"{_describe_close(closed)} while pinging"

    async def _watch_staleness(self) -> str:
        """Mark symbols STALE when no book frame came for `stale_after_s`; never returns."""
        stale_after_s = self.config.stale_after_s
        stale_after_ns = int(stale_after_s * _NS_PER_S)
        period_s = min(stale_after_s / _STALE_CHECKS_PER_PERIOD, _MAX_STALE_CHECK_PERIOD_S)
        while True:
            await asyncio.sleep(period_s)
            now_ns = time.time_ns()
            for symbol_feed in self._symbols.values():
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

    async def _receive(self, websocket: ClientConnection) -> str:
        """Receive until the connection closes; returns why it closed."""
        counters = self._counters
        symbols = self._symbols
        parse = self._parser.parse
        on_market = self._sink.on_market
        record = self._recorder.write if self._recorder is not None else None
        receive = websocket.recv
        time_ns = time.time_ns
        live = FeedState.LIVE
        # From the receive stamp: parse, and the whole frame through the sink (one clock pair).
        parse_times, totals, trade_times = (
            self.timings.parse,
            self.timings.total,
            self.timings.trade,
        )
        while True:
            try:
                raw = await receive(decode=False)
            except ConnectionClosed as closed:
                return _describe_close(closed)
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
                if kind is BookSnapshot or kind is BookUpdate:
                    symbol_feed = symbols.get(frame.symbol)
                    if symbol_feed is None:
                        counters.foreign_frames += 1
                        continue
                    symbol_feed.count_frame(recv_ns)
                    symbol_feed.book_frames += 1
                    symbol_feed.last_book_ns = recv_ns
                    if symbol_feed.state is not live:
                        self._on_book_resumed(symbol_feed)
                    on_market(frame)
                    totals.record(time_ns() - recv_ns)
                    parse_times.record(parsed_ns - recv_ns)
                elif kind is Trades:
                    symbol_feed = symbols.get(frame.symbol)
                    if symbol_feed is None:
                        counters.foreign_frames += 1
                        continue
                    symbol_feed.count_frame(recv_ns)
                    symbol_feed.trade_frames += 1
                    on_market(frame)
                    trade_times.record(time_ns() - recv_ns)
                elif kind is Pong:
                    self._on_pong(frame)
                elif kind is ChannelAck:
                    self._on_ack(frame)
                else:
                    self._on_channel_error(frame)
            except Exception as error:  # a parser or sink bug must not take the feed down
                counters.handler_errors += 1
                counters.last_handler_error = _describe(error)

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

    def _on_pong(self, pong: Pong) -> None:
        counters = self._counters
        counters.pongs += 1
        if self._ping_sent_ns:
            counters.last_pong_latency_ms = (pong.recv_ns - self._ping_sent_ns) / 1e6
        self._pong_received.set()

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
            self._counters.last_handler_error = _describe(error)


def _describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _describe_close(closed: ConnectionClosed) -> str:
    if closed.rcvd is not None:
        detail = f", {closed.rcvd.reason}" if closed.rcvd.reason else ""
        return f"server closed the connection (code {closed.rcvd.code}{detail})"
    if closed.sent is not None:
        detail = f", {closed.sent.reason}" if closed.sent.reason else ""
        return f"connection closed by this client (code {closed.sent.code}{detail})"
    return "connection lost without a close frame"
