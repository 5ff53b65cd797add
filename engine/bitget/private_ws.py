"""Bitget v2 private websocket: login, the `orders`, `fill` and `positions` channels, and the
events of engine/bitget/private_events.py.

One connection: connect -> login (signed with engine/bitget/signing.py) -> subscribe the three
channels for every symbol (`instId: default`) -> LIVE once all three are acknowledged. The
text `ping` goes out every `ping_interval_s`; a missing `pong` ends the connection. A lost
connection is retried with capped exponential backoff and full jitter (engine/bitget/websocket.py,
shared with the public feed), then logs in and subscribes again; pushes sent while it was down
are lost, which is why LIVE after RECONNECTING tells the executor to reconcile over REST. A
refused login (bad key, passphrase, signature, timestamp) or a refused channel is FAILED at once:
retrying cannot fix credentials, and hammering the exchange with them gets an IP blocked.

Whatever arrives (non-JSON, unknown events or channels, entries with missing or mistyped
fields) is counted by reason in `stats.rejected` and never raises out of the feed. A positions
push is the full list of open positions, so one bad entry rejects the whole push: a partial
list would read as "flat" for the symbol left out. The credentials never appear in a state
reason, a stat or a repr; exchange text is scrubbed of them before it is kept.
"""

from __future__ import annotations

import asyncio
import enum
import math
import random
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TypeVar

import orjson
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import (
    ALL_SYMBOLS,
    BITGET_PRIVATE_URL,
    FILL_CHANNEL,
    ORDERS_CHANNEL,
    PRIVATE_CHANNELS,
)
from engine.bitget.errors import describe_error
from engine.bitget.orders import OrderSide, OrderStatus
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PositionEntry,
    PositionsUpdate,
    PrivateEvent,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.bitget.signing import ws_login_args
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

LOGIN_REFUSAL_CODES = frozenset({"30005", "30011", "30012", "30013", "30014", "30015"})
"""Error codes that answer a login with "these credentials will not do": never retried."""
CHANNEL_REFUSAL_CODES = frozenset({"30001", "30016"})
"""Error codes that refuse a channel subscription: retrying cannot help either."""
NOT_LOGGED_IN_CODE = "30004"
_Entry = TypeVar("_Entry")
_LOGIN_SUCCESS_CODES = frozenset({"0", "00000"})
_PONG = b"pong"
_NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_TIME_MAX_DIGITS = 16
_FILL_TOLERANCE = 1e-9


class RejectReason(enum.StrEnum):
    """Why a received frame (or one entry of a push) was not turned into an event."""

    NOT_JSON = "not_json"
    NOT_AN_OBJECT = "not_an_object"
    UNKNOWN_EVENT = "unknown_event"
    UNEXPECTED_EVENT = "unexpected_event"
    """A well-formed event this connection did not ask for (an ack of another channel...)."""
    PUSH_BEFORE_LOGIN = "push_before_login"
    UNKNOWN_CHANNEL = "unknown_channel"
    NO_DATA = "no_data"
    BAD_ORDER = "bad_order"
    BAD_FILL = "bad_fill"
    BAD_POSITIONS = "bad_positions"


@dataclass(frozen=True, slots=True)
class BitgetPrivateFeedConfig(SocketSettings):
    """Where the private stream is and how to keep it healthy. Credentials are passed apart."""

    url: str = BITGET_PRIVATE_URL
    login_timeout_s: float = 10.0
    subscribe_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        check_socket_settings(
            self, ("login_timeout_s", "subscribe_timeout_s"), min_frame_bytes=1024
        )


@dataclass(frozen=True, slots=True)
class PrivateFeedStats(SocketStats):
    """A snapshot of the feed's counters, safe to hand to another thread.

    `rejected` counts frames (or push entries) by `RejectReason`, `last_rejection` says what
    was wrong with the latest; `exchange_errors` are `event: error` frames; `handler_errors`
    are exceptions raised by the sink (the event is skipped); `internal_errors` are unexpected
    exceptions that ended a connection.
    """

    state: PrivateStreamState
    reason: str
    logins: int
    order_updates: int
    fill_updates: int
    positions_updates: int
    rejected: Mapping[str, int]
    last_rejection: str
    exchange_errors: int
    last_exchange_error: str


@dataclass(slots=True)
class _Counters(SocketCounters):
    logins: int = 0
    order_updates: int = 0
    fill_updates: int = 0
    positions_updates: int = 0
    last_rejection: str = ""
    exchange_errors: int = 0
    last_exchange_error: str = ""


class _Phase(enum.Enum):
    LOGIN = enum.auto()
    SUBSCRIBING = enum.auto()
    LIVE = enum.auto()


class MalformedEntry(ValueError):
    """A push entry that cannot become an event; the message says which field and why."""


class BitgetPrivateFeed:
    """The private stream of one Bitget account, delivered to `sink` as `PrivateEvent`s.

    State: STOPPED (not started) -> CONNECTING -> LIVE when logged in and subscribed;
    RECONNECTING after a connection loss, LIVE again once resubscribed; FAILED when the
    exchange refuses the login or a channel, or after `max_reconnect_attempts`; STOPPED after
    `stop()`. Every change reaches the sink as a `PrivateStreamChanged`, on the event loop that
    started the feed, as do the order, fill and positions events.

    `clock` gives epoch nanoseconds for event stamps and the login timestamp;
    `exchange_offset_ms` (exchange time minus local time, e.g. the REST client's
    `clock_offset_ms`) is added to the login timestamp, which Bitget refuses beyond 30 s.
    """

    def __init__(
        self,
        config: BitgetPrivateFeedConfig,
        credentials: Credentials,
        sink: Callable[[PrivateEvent], None],
        clock: Callable[[], int] = time.time_ns,
        *,
        exchange_offset_ms: Callable[[], int] = lambda: 0,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._credentials = credentials
        self._sink = sink
        self._clock = clock
        self._exchange_offset_ms = exchange_offset_ms
        self._counters = _Counters()
        self._socket = ReconnectingSocket(
            config, self._counters, clock=clock, rng=rng, scrub=credentials.scrubbed
        )
        self._rejected: Counter[str] = Counter()
        self._state = PrivateStreamState.STOPPED
        self._reason = "not started"
        self._was_live = False
        self._phase = _Phase.LOGIN
        self._acked: set[str] = set()
        self._logged_in = asyncio.Event()
        self._subscribed = asyncio.Event()

    def __repr__(self) -> str:
        return f"BitgetPrivateFeed(url={self.config.url!r}, state={self._state.value!r})"

    # Lifecycle

    async def start(self) -> None:
        """Start connecting in the background and return at once."""
        self._socket.start(self, "bitget-private-feed")
        self._set_state(PrivateStreamState.CONNECTING, f"connecting to {self.config.url}")

    async def stop(self) -> None:
        """Close the connection, end every task, and move to STOPPED."""
        if not await self._socket.stop():
            return
        self._set_state(PrivateStreamState.STOPPED, "stopped")

    @property
    def state(self) -> PrivateStreamState:
        return self._state

    @property
    def stats(self) -> PrivateFeedStats:
        return PrivateFeedStats(
            **self._socket.stats_fields(),
            state=self._state,
            reason=self._reason,
            rejected=MappingProxyType(dict(self._rejected)),
        )

    # Connection lifecycle

    def session_tasks(self, websocket: ClientConnection) -> SessionTasks:
        self._phase = _Phase.LOGIN
        self._acked.clear()
        self._logged_in.clear()
        self._subscribed.clear()
        return SessionTasks(
            "bitget-private-receive",
            self._receive(websocket),
            {
                "bitget-private-login": self._handshake(),
                "bitget-private-keepalive": self._socket.keep_alive(),
            },
        )

    def session_closed(self) -> bool:
        return self._phase is _Phase.LIVE  # a session that never got live does not count

    def connection_down(self, reason: str, *, failed: bool) -> None:
        state = PrivateStreamState.FAILED if failed else PrivateStreamState.RECONNECTING
        self._set_state(state, reason)

    async def _handshake(self) -> SessionEnd | None:
        """Log in and subscribe; None once every channel is acknowledged."""
        config = self.config
        try:
            await self._socket.send(self._login_message())
            try:
                async with asyncio.timeout(config.login_timeout_s):
                    await self._logged_in.wait()
            except TimeoutError:
                return SessionEnd(f"no login answer within {config.login_timeout_s:g} s")
            args: list[ChannelArg] = [
                channel_arg(config.inst_type, channel, ALL_SYMBOLS) for channel in PRIVATE_CHANNELS
            ]
            await self._socket.send(encode_op("subscribe", args))
            try:
                async with asyncio.timeout(config.subscribe_timeout_s):
                    await self._subscribed.wait()
            except TimeoutError:
                missing = ", ".join(c for c in PRIVATE_CHANNELS if c not in self._acked)
                return SessionEnd(
                    f"no subscribe ack for {missing} within {config.subscribe_timeout_s:g} s"
                )
        except ConnectionClosed as closed:
            return SessionEnd(f"{describe_close(closed)} while logging in")
        return None

    def _login_message(self) -> bytes:
        credentials = self._credentials
        now_ms = self._clock() // 1_000_000 + self._exchange_offset_ms()
        login = ws_login_args(
            credentials.api_key,
            credentials.api_secret,
            credentials.passphrase,
            str(now_ms // 1000),
        )
        return orjson.dumps({"op": "login", "args": [login]})

    # Receiving

    async def _receive(self, websocket: ClientConnection) -> SessionEnd:
        """Receive until the connection closes or the exchange refuses us."""
        counters = self._counters
        receive = websocket.recv
        clock = self._clock
        while True:
            # A burst of pushes (a kill's cancels, fills and positions) is read from the buffer
            # without suspending: let the kill's own answers in between each.
            await asyncio.sleep(0)
            try:
                raw = await receive(decode=False)
            except ConnectionClosed as closed:
                return SessionEnd(describe_close(closed))
            recv_ns = clock()
            counters.frames += 1
            counters.bytes += len(raw)
            if raw == _PONG:
                self._socket.pong(recv_ns)
                continue
            try:
                message = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self._reject(RejectReason.NOT_JSON, f"not JSON: {_preview(raw)}")
                continue
            if not isinstance(message, dict):
                self._reject(RejectReason.NOT_AN_OBJECT, f"not a JSON object: {_preview(raw)}")
                continue
            if "event" in message:
                end = self._on_event(message)
                if end is not None:
                    return end
            elif "action" in message:
                self._on_push(message, recv_ns)
            else:
                self._reject(RejectReason.UNKNOWN_EVENT, f"neither event nor push: {_preview(raw)}")

    def _on_event(self, message: dict[str, object]) -> SessionEnd | None:
        event = message.get("event")
        if event == "login":
            code = _code_text(message.get("code"))
            if code not in _LOGIN_SUCCESS_CODES:
                return self._on_error(message)
            if self._phase is not _Phase.LOGIN:
                self._reject(RejectReason.UNEXPECTED_EVENT, "login answer after logging in")
                return None
            self._counters.logins += 1
            self._phase = _Phase.SUBSCRIBING
            self._logged_in.set()
            return None
        if event == "subscribe":
            self._on_ack(message.get("arg"))
            return None
        if event == "unsubscribe":
            self._reject(RejectReason.UNEXPECTED_EVENT, "unsubscribe ack; none was sent")
            return None
        if event == "error":
            return self._on_error(message)
        self._reject(RejectReason.UNKNOWN_EVENT, f"event {_preview(event)}")
        return None

    def _on_ack(self, arg: object) -> None:
        channel = arg.get("channel") if isinstance(arg, dict) else None
        if self._phase is _Phase.LOGIN or channel not in PRIVATE_CHANNELS:
            self._reject(RejectReason.UNEXPECTED_EVENT, f"subscribe ack for {_preview(arg)}")
            return
        assert isinstance(channel, str)
        self._acked.add(channel)
        if self._phase is _Phase.SUBSCRIBING and len(self._acked) == len(PRIVATE_CHANNELS):
            # Set here, not in the handshake task, so LIVE precedes the pushes behind the acks.
            self._phase = _Phase.LIVE
            reason = (
                "reconnected, logged in and resubscribed: reconcile orders and positions over "
                "REST, pushes may have been lost"
                if self._was_live
                else "logged in; orders, fill and positions subscribed"
            )
            self._was_live = True
            self._subscribed.set()
            self._set_state(PrivateStreamState.LIVE, reason)

    def _on_error(self, message: dict[str, object]) -> SessionEnd | None:
        counters = self._counters
        counters.exchange_errors += 1
        code = _code_text(message.get("code"))
        exchange_text = self._credentials.scrubbed(message.get("msg"))
        text = f"{describe_error(code)} (exchange said: {exchange_text or 'nothing'})"
        counters.last_exchange_error = text
        if self._phase is _Phase.LOGIN:
            refused = code in LOGIN_REFUSAL_CODES
            return SessionEnd(f"login {'refused' if refused else 'failed'}: {text}", refused)
        if code == NOT_LOGGED_IN_CODE:
            return SessionEnd(f"the exchange no longer sees a login: {text}")
        arg = message.get("arg")
        channel = arg.get("channel") if isinstance(arg, dict) else None
        if channel in PRIVATE_CHANNELS and code in CHANNEL_REFUSAL_CODES:
            return SessionEnd(f"the exchange refused the {channel} channel: {text}", True)
        return None

    def _on_push(self, message: dict[str, object], recv_ns: int) -> None:
        if self._phase is _Phase.LOGIN:
            self._reject(RejectReason.PUSH_BEFORE_LOGIN, "a push before the login answer")
            return
        arg = message.get("arg")
        channel = arg.get("channel") if isinstance(arg, dict) else None
        data = message.get("data")
        if channel not in PRIVATE_CHANNELS:
            self._reject(RejectReason.UNKNOWN_CHANNEL, f"push for {_preview(arg)}")
            return
        if not isinstance(data, list):
            self._reject(RejectReason.NO_DATA, f"{channel} push without a data list")
            return
        counters = self._counters
        if channel == ORDERS_CHANNEL:
            for update in self._entries(
                data, recv_ns, parse_order_update, RejectReason.BAD_ORDER, "orders"
            ):
                counters.order_updates += 1
                self._emit(update)
        elif channel == FILL_CHANNEL:
            for fill in self._entries(
                data, recv_ns, parse_fill_update, RejectReason.BAD_FILL, "fill"
            ):
                counters.fill_updates += 1
                self._emit(fill)
        else:
            try:
                positions = parse_positions_update(data, message.get("ts"), recv_ns)
            except MalformedEntry as error:
                self._reject(RejectReason.BAD_POSITIONS, f"positions: {error}")
                return
            counters.positions_updates += 1
            self._emit(positions)

    def _entries(
        self,
        data: list[object],
        recv_ns: int,
        parse: Callable[[object, int], _Entry],
        reason: RejectReason,
        channel: str,
    ) -> Iterator[_Entry]:
        """The entries of a push that `parse` reads; each malformed one is rejected and skipped."""
        for entry in data:
            try:
                yield parse(entry, recv_ns)
            except MalformedEntry as error:
                self._reject(reason, f"{channel}: {error}")

    def _reject(self, reason: RejectReason, detail: str) -> None:
        self._rejected[reason] += 1
        self._counters.last_rejection = self._credentials.scrubbed(f"{reason}: {detail}")

    # Events

    def _set_state(self, state: PrivateStreamState, reason: str) -> None:
        self._reason = reason
        if self._state is state:
            return
        self._state = state
        self._emit(PrivateStreamChanged(state, reason, self._clock()))

    def _emit(self, event: PrivateEvent) -> None:
        try:
            self._sink(event)
        except Exception as error:  # a sink bug must not take the stream down
            self._counters.handler_errors += 1
            self._counters.last_handler_error = self._credentials.scrubbed(describe(error))


# Push entries -> events


def parse_order_update(entry: object, recv_ns: int) -> OrderUpdate:
    """One entry of an `orders` push; raises `MalformedEntry` naming the bad field."""
    fields = _object(entry)
    size = _number(fields, "size", minimum=0.0, inclusive=False)
    filled = _number(fields, "accBaseVolume", minimum=0.0)
    if filled > size * (1.0 + _FILL_TOLERANCE):
        raise MalformedEntry(f"accBaseVolume {filled:g} exceeds size {size:g}")
    status_text = _text(fields, "status")
    try:
        status = OrderStatus(status_text)
    except ValueError:
        raise MalformedEntry(f"status {status_text!r} is not a Bitget order status") from None
    if status is OrderStatus.FILLED and filled <= 0:
        raise MalformedEntry("status filled with accBaseVolume 0")
    return OrderUpdate(
        symbol=_text(fields, "instId"),
        order_id=_text(fields, "orderId"),
        client_oid=_text(fields, "clientOid", allow_empty=True),
        side=_side(fields),
        price=_optional_price(fields, "price"),
        size=size,
        filled_size=filled,
        average_price=_optional_price(fields, "priceAvg"),
        status=status,
        reduce_only=_yes_no(fields, "reduceOnly"),
        updated_ms=_millis(fields, "uTime"),
        recv_ns=recv_ns,
        cancel_reason=_text(fields, "cancelReason", allow_empty=True, required=False),
    )


def parse_fill_update(entry: object, recv_ns: int) -> FillUpdate:
    """One entry of a `fill` push; the fee is what `feeDetail[].totalFee` charges (Bitget
    writes a charge as a negative amount), positive when paid, negative when rebated."""
    fields = _object(entry)
    details = fields.get("feeDetail")
    if not isinstance(details, list):
        raise MalformedEntry("feeDetail missing or not a list")
    fee = -sum(_number(_object(detail), "totalFee") for detail in details)
    if not math.isfinite(fee):
        raise MalformedEntry("feeDetail totalFee sums to an infinite fee")
    scope = _text(fields, "tradeScope")
    if scope not in ("maker", "taker", "M", "T"):
        raise MalformedEntry(f"tradeScope {scope!r} is neither maker nor taker")
    return FillUpdate(
        symbol=_text(fields, "symbol"),
        order_id=_text(fields, "orderId"),
        client_oid=_text(fields, "clientOid", allow_empty=True),
        trade_id=_text(fields, "tradeId"),
        side=_side(fields),
        price=_number(fields, "price", minimum=0.0, inclusive=False),
        size=_number(fields, "baseVolume", minimum=0.0, inclusive=False),
        fee=fee + 0.0,  # no -0.0 for a free fill
        maker=scope in ("maker", "M"),
        filled_ms=_millis(fields, "cTime"),
        recv_ns=recv_ns,
    )


def parse_positions_update(data: list[object], push_ms: object, recv_ns: int) -> PositionsUpdate:
    """A `positions` push: every open position (entries with `total` 0 are flat, left out)."""
    if isinstance(push_ms, bool) or not isinstance(push_ms, int) or push_ms <= 0:
        raise MalformedEntry(f"envelope ts {_preview(push_ms)} is not epoch milliseconds")
    positions: list[PositionEntry] = []
    for index, entry in enumerate(data):
        try:
            fields = _object(entry)
            total = _number(fields, "total", minimum=0.0)
            hold_side = _text(fields, "holdSide")
            if hold_side not in ("long", "short"):
                raise MalformedEntry(f"holdSide {hold_side!r} is neither long nor short")
            symbol = _text(fields, "instId")
            if total == 0:
                continue
            positions.append(
                PositionEntry(
                    symbol=symbol,
                    size=total if hold_side == "long" else -total,
                    entry_price=_number(fields, "openPriceAvg", minimum=0.0, inclusive=False),
                    mark_price=_optional_price(fields, "markPrice"),
                    unrealized_pnl=_number(fields, "unrealizedPL"),
                )
            )
        except MalformedEntry as error:
            raise MalformedEntry(f"entry {index}: {error}") from None
    return PositionsUpdate(tuple(positions), push_ms, recv_ns)


def _object(entry: object) -> dict[str, object]:
    if not isinstance(entry, dict):
        raise MalformedEntry(f"entry {_preview(entry)} is not an object")
    return entry


def _text(
    fields: dict[str, object], name: str, *, allow_empty: bool = False, required: bool = True
) -> str:
    value = fields.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise MalformedEntry(f"{name} missing or not a string")
    if not value and not allow_empty:
        raise MalformedEntry(f"{name} is empty")
    return value


def _number(
    fields: dict[str, object],
    name: str,
    *,
    minimum: float | None = None,
    inclusive: bool = True,
) -> float:
    """A decimal string (Bitget's form) or a JSON number, finite and within bounds."""
    value = fields.get(name)
    is_text = isinstance(value, str) and _NUMBER.fullmatch(value) is not None
    is_json_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (is_text or is_json_number):
        raise MalformedEntry(f"{name} {_preview(value)} is not a number")
    number = float(value)  # type: ignore[arg-type]  # checked just above
    if not math.isfinite(number):
        raise MalformedEntry(f"{name} {_preview(value)} is not finite")
    if minimum is not None and (number < minimum or (number == minimum and not inclusive)):
        bound = ">=" if inclusive else ">"
        raise MalformedEntry(f"{name} {_preview(value)} must be {bound} {minimum:g}")
    return number


def _optional_price(fields: dict[str, object], name: str) -> float | None:
    """A price that may be absent: missing, "" or 0 mean none (a market order, no fills)."""
    value = fields.get(name)
    if value is None or value == "":
        return None
    price = _number(fields, name, minimum=0.0)
    return price if price > 0 else None


def _side(fields: dict[str, object]) -> OrderSide:
    text = _text(fields, "side")
    try:
        return OrderSide(text)
    except ValueError:
        raise MalformedEntry(f"side {text!r} is neither buy nor sell") from None


def _yes_no(fields: dict[str, object], name: str) -> bool:
    text = _text(fields, name).lower()
    if text not in ("yes", "no"):
        raise MalformedEntry(f"{name} {text!r} is neither yes nor no")
    return text == "yes"


def _millis(fields: dict[str, object], name: str) -> int:
    value = fields.get(name)
    if isinstance(value, str) and value.isascii() and value.isdigit():
        if len(value) > _TIME_MAX_DIGITS:
            raise MalformedEntry(f"{name} {_preview(value)} is too long for epoch milliseconds")
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise MalformedEntry(f"{name} {_preview(value)} is not epoch milliseconds")


def _code_text(code: object) -> str:
    if isinstance(code, (str, int)) and not isinstance(code, bool):
        return str(code).strip()
    return "<missing code>"


def _preview(value: object, limit: int = 80) -> str:
    try:
        text = repr(value)
    except RecursionError:  # orjson reads 1024 levels of nesting, repr manages fewer
        return f"a {type(value).__name__} nested too deep to show"
    return text if len(text) <= limit else f"{text[:limit]}…"
