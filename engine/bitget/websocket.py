"""What Bitget's public and private websockets share: connect, send within the message limit,
keep alive with the text `ping`, and reconnect with capped exponential backoff.

`ReconnectingSocket` owns the loop: connect, run one session with the tasks its `SocketOwner`
gives, count why the session ended, back off and connect again, until the exchange refuses the
session or `max_reconnect_attempts` consecutive failures give up. The owner (the public feed,
the private stream) hears every drop through `connection_down` and keeps its own state.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple, Protocol

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from engine.bitget.rate_limit import SlidingWindowRateLimiter, backoff_ceiling_s

PING = b"ping"

ChannelArg = dict[str, str]


def channel_arg(inst_type: str, channel: str, symbol: str) -> ChannelArg:
    return {"instType": inst_type, "channel": channel, "instId": symbol}


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
        return backoff_ceiling_s(failures, self.initial_s, self.max_s)

    def delay_s(self, failures: int) -> float:
        return self._rng.uniform(0.0, self.ceiling_s(failures))


class SessionEnd(NamedTuple):
    """Why a session ended."""

    reason: str
    refused: bool = False
    """The exchange refused the login or a channel: FAILED, not retried."""


@dataclass(frozen=True, slots=True)
class SocketSettings:
    """The connection settings both feeds' configs carry: each config is one of these with its
    own `url` default and fields, checked by `check_socket_settings`."""

    url: str
    inst_type: str = "USDT-FUTURES"
    ping_interval_s: float = 25.0
    pong_timeout_s: float = 10.0
    open_timeout_s: float = 10.0
    close_timeout_s: float = 1.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 30.0
    backoff_reset_after_s: float = 10.0
    """A session that lasted this long (and counts, see `SocketOwner.session_closed`) resets
    the failure count and the backoff."""
    max_reconnect_attempts: int = 0
    """Consecutive connection failures after which the feed gives up, FAILED (0: forever)."""
    max_client_messages_per_s: int = 10
    send_window_margin_s: float = 0.1
    """Widens the 1 s rate window, so network jitter cannot squeeze one message too many into
    the exchange's window."""
    max_frame_bytes: int = 1 << 20


_SHARED_DURATIONS = (
    "ping_interval_s",
    "pong_timeout_s",
    "open_timeout_s",
    "close_timeout_s",
    "backoff_initial_s",
    "backoff_max_s",
)


def check_socket_settings(
    settings: SocketSettings, own_durations: Sequence[str], *, min_frame_bytes: int
) -> None:
    """Raise ValueError on the first connection setting out of range; `own_durations` names
    the feed's own durations that must be > 0 beside the shared ones (its timeouts)."""
    if not isinstance(settings.url, str) or not settings.url.startswith(("ws://", "wss://")):
        raise ValueError(f"url must start with ws:// or wss://, got {settings.url!r}")
    if not isinstance(settings.inst_type, str) or not settings.inst_type:
        raise ValueError("inst_type must be a non-empty string such as USDT-FUTURES")
    for name in (*_SHARED_DURATIONS, *own_durations):
        value = getattr(settings, name)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {value}")
    if settings.backoff_max_s < settings.backoff_initial_s:
        raise ValueError(
            f"backoff_max_s ({settings.backoff_max_s}) must be >= backoff_initial_s "
            f"({settings.backoff_initial_s})"
        )
    for name in ("backoff_reset_after_s", "send_window_margin_s"):
        value = getattr(settings, name)
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {value}")
    if settings.max_reconnect_attempts < 0:
        raise ValueError(
            f"max_reconnect_attempts must be >= 0 (0 = forever), "
            f"got {settings.max_reconnect_attempts}"
        )
    if settings.max_client_messages_per_s < 1:
        raise ValueError(
            f"max_client_messages_per_s must be >= 1, got {settings.max_client_messages_per_s}"
        )
    if settings.max_frame_bytes < min_frame_bytes:
        raise ValueError(
            f"max_frame_bytes must be >= {min_frame_bytes}, got {settings.max_frame_bytes}"
        )


class SessionTasks(NamedTuple):
    """One session's coroutines, each named for its task. The first to return a `SessionEnd`
    ends the session, the receiver's when several have (it knows the close code and the
    exchange's refusals); one of the others that returns None has done its part (the login)."""

    receiver_name: str
    receiver: Coroutine[Any, Any, SessionEnd]
    others: Mapping[str, Coroutine[Any, Any, SessionEnd | None]]


class SocketOwner(Protocol):
    """The feed a `ReconnectingSocket` connects for."""

    def session_tasks(self, websocket: ClientConnection) -> SessionTasks: ...

    def session_closed(self) -> bool:
        """The session's tasks have ended and the connection is about to close; whether the
        session counts towards resetting the backoff."""
        ...

    def connection_down(self, reason: str, *, failed: bool) -> None:
        """The connection is lost: retried after a backoff, or given up when `failed`."""
        ...


@dataclass(slots=True)
class SocketCounters:
    """What both feeds count about their connection; each feed's counters add their own. Each
    counter is the field of the same name in the feed's stats snapshot."""

    frames: int = 0
    bytes: int = 0
    connects: int = 0
    reconnects: int = 0
    connect_failures: int = 0
    last_backoff_s: float = 0.0
    last_disconnect: str = ""
    messages_sent: int = 0
    pings_sent: int = 0
    pongs: int = 0
    pong_timeouts: int = 0
    last_pong_latency_ms: float | None = None
    handler_errors: int = 0
    last_handler_error: str = ""
    internal_errors: int = 0


@dataclass(frozen=True, slots=True)
class SocketStats:
    """What both feeds' stats snapshots say about their connection; each feed's adds its own."""

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
    handler_errors: int
    last_handler_error: str
    internal_errors: int


class ReconnectingSocket:
    """One Bitget websocket kept connected for a `SocketOwner`; see the module docstring.

    `clock` stamps the pings (epoch ns, the clock the owner stamps received frames with);
    `scrub` cleans the text of a connect failure before it is kept.
    """

    def __init__(
        self,
        settings: SocketSettings,
        counters: SocketCounters,
        *,
        clock: Callable[[], int] = time.time_ns,
        rng: random.Random | None = None,
        scrub: Callable[[str], str] = str,
    ) -> None:
        self._settings = settings
        self._counters = counters
        self._counted = tuple(counter.name for counter in fields(counters))
        self._clock = clock
        self._scrub = scrub
        self._backoff = ReconnectBackoff(settings.backoff_initial_s, settings.backoff_max_s, rng)
        self.consecutive_failures = 0
        self._run_task: asyncio.Task[None] | None = None
        self._stopped = False
        self._websocket: ClientConnection | None = None
        self._limiter: SlidingWindowRateLimiter | None = None
        self._pong_received = asyncio.Event()
        self._ping_sent_ns = 0

    def start(self, owner: SocketOwner, task_name: str) -> None:
        """Start connecting in the background."""
        if self._run_task is not None or self._stopped:
            raise RuntimeError(f"a {type(owner).__name__} can be started only once")
        self._run_task = asyncio.create_task(self._run(owner), name=task_name)

    async def stop(self) -> bool:
        """Cancel every task and close the connection; False when stopped already."""
        if self._stopped:
            return False
        self._stopped = True
        if self._run_task is not None:
            self._run_task.cancel()
            await asyncio.wait([self._run_task])
        return True

    def stats_fields(self) -> dict[str, Any]:
        """The fields of the owner's stats snapshot its counters hold, and the run of failures."""
        counters = self._counters
        values = {name: getattr(counters, name) for name in self._counted}
        values["consecutive_failures"] = self.consecutive_failures
        return values

    async def send(self, message: bytes) -> None:
        """Send on the session's connection within the exchange's message limit."""
        websocket, limiter = self._websocket, self._limiter
        assert websocket is not None and limiter is not None, "send outside a session"
        with await limiter.acquire():
            await websocket.send(message, text=True)
        self._counters.messages_sent += 1

    async def keep_alive(self) -> SessionEnd:
        """Ping every `ping_interval_s`; a missing pong ends the connection."""
        settings = self._settings
        counters = self._counters
        pong_received = self._pong_received
        try:
            while True:
                await asyncio.sleep(settings.ping_interval_s)
                pong_received.clear()
                await self.send(PING)
                self._ping_sent_ns = self._clock()
                counters.pings_sent += 1
                try:
                    async with asyncio.timeout(settings.pong_timeout_s):
                        await pong_received.wait()
                except TimeoutError:
                    counters.pong_timeouts += 1
                    return SessionEnd(f"no pong within {settings.pong_timeout_s:g} s of a ping")
        except ConnectionClosed as closed:
            return SessionEnd(f"{describe_close(closed)} while pinging")

    def pong(self, recv_ns: int) -> None:
        counters = self._counters
        counters.pongs += 1
        if self._ping_sent_ns:
            counters.last_pong_latency_ms = (recv_ns - self._ping_sent_ns) / 1e6
        self._pong_received.set()

    async def _run(self, owner: SocketOwner) -> None:
        settings = self._settings
        counters = self._counters
        while True:
            try:
                websocket = await connect(
                    settings.url,
                    open_timeout=settings.open_timeout_s,
                    ping_interval=None,  # Bitget's keep-alive is the text "ping", see keep_alive
                    close_timeout=settings.close_timeout_s,
                    max_size=settings.max_frame_bytes,
                    compression=None,  # inflating every frame costs more than it saves here
                )
            except Exception as error:  # refused, timed out, bad handshake: all retried
                counters.connect_failures += 1
                end = SessionEnd(f"connect failed: {self._scrub(describe(error))}")
            else:
                counters.connects += 1
                connected_at = time.monotonic()
                end, was_live = await self._session(owner, websocket)
                lasted_s = time.monotonic() - connected_at
                if lasted_s >= settings.backoff_reset_after_s and was_live:
                    self.consecutive_failures = 0
            counters.last_disconnect = end.reason
            if end.refused:
                owner.connection_down(end.reason, failed=True)
                return
            self.consecutive_failures += 1
            failures = self.consecutive_failures
            if 0 < settings.max_reconnect_attempts <= failures:
                owner.connection_down(
                    f"gave up after {failures} consecutive connection failures; last: {end.reason}",
                    failed=True,
                )
                return
            delay_s = self._backoff.delay_s(failures)
            counters.last_backoff_s = delay_s
            owner.connection_down(f"{end.reason}; retry in {delay_s:.2f} s", failed=False)
            await asyncio.sleep(delay_s)
            counters.reconnects += 1

    async def _session(
        self, owner: SocketOwner, websocket: ClientConnection
    ) -> tuple[SessionEnd, bool]:
        """Run one connection until it ends; returns why, and whether the owner counts it
        towards resetting the backoff."""
        settings = self._settings
        self._pong_received.clear()
        self._ping_sent_ns = 0
        self._websocket = websocket
        self._limiter = SlidingWindowRateLimiter(
            settings.max_client_messages_per_s, 1.0 + settings.send_window_margin_s
        )
        tasks = owner.session_tasks(websocket)
        receiver = asyncio.create_task(tasks.receiver, name=tasks.receiver_name)
        running = {receiver}
        running.update(
            asyncio.create_task(coroutine, name=name) for name, coroutine in tasks.others.items()
        )
        try:
            end = await self._first_end(receiver, running)
        finally:
            for task in running:
                task.cancel()
            await asyncio.wait(running)
            was_live = owner.session_closed()
            # The connection is being dropped either way; a failing close changes nothing.
            with contextlib.suppress(Exception):
                await websocket.close()
            # Nothing sends between sessions, and the next one brings its own.
            self._websocket = self._limiter = None
        return end, was_live

    async def _first_end(
        self, receiver: asyncio.Task[SessionEnd], running: set[asyncio.Task[Any]]
    ) -> SessionEnd:
        """Wait for the session's first `SessionEnd`; a task that ends without one leaves
        `running`."""
        while True:
            done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            ended = receiver if receiver in done else done.pop()
            error = ended.exception()
            if error is not None:
                self._counters.internal_errors += 1
                return SessionEnd(f"internal error: {describe(error)}")
            end = ended.result()
            if end is not None:
                return end
            running.discard(ended)  # its part is done: the others run on


def describe(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def describe_close(closed: ConnectionClosed) -> str:
    if closed.rcvd is not None:
        detail = f", {closed.rcvd.reason}" if closed.rcvd.reason else ""
        return f"server closed the connection (code {closed.rcvd.code}{detail})"
    if closed.sent is not None:
        detail = f", {closed.sent.reason}" if closed.sent.reason else ""
        return f"connection closed by this client (code {closed.sent.code}{detail})"
    return "connection lost without a close frame"
