"""CancelLane: a pre-connected keep-alive HTTP/1.1 connection reserved for cancel-all.

The reaction path (a books15 frame -> Laya says EMERGENCY -> cancel every resting order) must
put its request on the wire within a few hundred microseconds of the frame. Through aiohttp a
request is a task, a connection checkout and a header build away from the socket; here it is
one `transport.write` of a request signed ahead, on the caller's stack. Everything but the
timestamp and the signature is rendered once, at construction; those two are renewed every
half second (Bitget accepts a timestamp within 30 s of its clock), and a request found older
than `PRESIGNED_MAX_AGE_MS` is signed on the spot.

One request at a time: while a request (or the keep-alive probe) waits for its answer, or the
connection is down, or the cancel-all endpoint's window has no room (the REST client's own
limiter for it, shared: Bitget counts both paths' requests together), the lane is not `ready`
and the caller takes the ordinary REST client instead. The lane reconnects by itself
and probes the connection with an unsigned server-time request when idle, so a dead socket is
found before it is needed. The answer is parsed (status line, headers, Content-Length or
chunked body) and handed back for the caller to read as Bitget's envelope.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from collections.abc import Callable

import orjson
from yarl import URL

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import CANCEL_ALL_ORDERS, MARGIN_COIN, PRODUCT_TYPE, SERVER_TIME
from engine.bitget.rate_limit import RateSlot, SlidingWindowRateLimiter
from engine.bitget.rest import BitgetTransportError
from engine.bitget.signing import (
    SIGN_HEADER,
    TIMESTAMP_HEADER,
    KeyedSigner,
    key_headers,
    rest_prehash,
)

logger = logging.getLogger(__name__)

_HEADER_END = b"\r\n\r\n"
_TIMESTAMP_LINE = f"{TIMESTAMP_HEADER}: ".encode()
_SIGN_LINE = f"\r\n{SIGN_HEADER}: ".encode()
_MAX_HEADER_BYTES = 16_384
_MAX_BODY_BYTES = 4 << 20
PRESIGNED_MAX_AGE_MS = 1_000
"""The cancel-all is signed ahead and re-signed twice this often; one older than this is
signed on the spot. Bitget accepts a timestamp within 30 s of its clock, and signing is
~50 us of cold OpenSSL code that the reaction would otherwise pay."""


class LaneAnswer:
    """An HTTP answer: status code and body bytes."""

    __slots__ = ("body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status = status
        self.body = body


class _ResponseReader:
    """Incremental HTTP/1.1 response parsing: feed bytes, get complete answers."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> tuple[list[tuple[LaneAnswer, bool]], str]:
        """Complete answers (with "the server closes after it") and an error text ("" if
        none). An error means the stream cannot be read on: the connection must go."""
        buffer = self._buffer
        buffer += data
        answers: list[tuple[LaneAnswer, bool]] = []
        while True:
            end = buffer.find(_HEADER_END)
            if end < 0:
                if len(buffer) > _MAX_HEADER_BYTES:
                    return answers, "response headers too long"
                return answers, ""
            head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
            parts = head[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                return answers, f"not an HTTP/1.1 status line: {head[0][:60]!r}"
            status = int(parts[1])
            headers: dict[str, str] = {}
            for line in head[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            closes = headers.get("connection", "").lower() == "close"
            start = end + len(_HEADER_END)
            if "chunked" in headers.get("transfer-encoding", "").lower():
                body, consumed, error = _dechunk(buffer, start)
                if error:
                    return answers, error
                if body is None:
                    return answers, ""
            else:
                length_text = headers.get("content-length", "0")
                if not length_text.isdigit() or int(length_text) > _MAX_BODY_BYTES:
                    return answers, f"unusable Content-Length {length_text[:20]!r}"
                consumed = start + int(length_text)
                if len(buffer) < consumed:
                    return answers, ""
                body = bytes(buffer[start:consumed])
            del buffer[:consumed]
            answers.append((LaneAnswer(status, body), closes))


def _dechunk(buffer: bytearray, start: int) -> tuple[bytes | None, int, str]:
    """(body, bytes consumed, error) of a chunked body; body None while incomplete."""
    body = bytearray()
    position = start
    while True:
        line_end = buffer.find(b"\r\n", position)
        if line_end < 0:
            return None, 0, ""
        size_text = bytes(buffer[position:line_end]).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return None, 0, f"bad chunk size {size_text[:20]!r}"
        if len(body) + size > _MAX_BODY_BYTES:
            return None, 0, "chunked body too large"
        chunk_start = line_end + 2
        if size == 0:
            trailer_end = buffer.find(b"\r\n", chunk_start)
            while trailer_end > chunk_start:  # skip trailer headers up to the empty line
                chunk_start = trailer_end + 2
                trailer_end = buffer.find(b"\r\n", chunk_start)
            if trailer_end < 0:
                return None, 0, ""
            return bytes(body), trailer_end + 2, ""
        if len(buffer) < chunk_start + size + 2:
            return None, 0, ""
        body += buffer[chunk_start : chunk_start + size]
        position = chunk_start + size + 2


class _LaneProtocol(asyncio.Protocol):
    def __init__(self, lane: CancelLane) -> None:
        self._lane = lane
        self._reader = _ResponseReader()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self._lane._connection_made(self)

    def data_received(self, data: bytes) -> None:
        answers, error = self._reader.feed(data)
        for answer, closes in answers:
            self._lane._answered(answer)
            if closes:
                self._lane._lost(self, "the server closed the connection after answering")
                return
        if error:
            self._lane._lost(self, error)

    def connection_lost(self, exc: Exception | None) -> None:
        self._lane._lost(self, f"connection lost ({type(exc).__name__})" if exc else "closed")


class CancelLane:
    """See the module docstring. `start` connects and keeps the connection up until `stop`."""

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        demo: bool,
        clock_offset_ms: Callable[[], int],
        wall_clock_ns: Callable[[], int] = time.time_ns,
        keepalive_s: float = 15.0,
        connect_timeout_s: float = 2.0,
        answer_timeout_s: float = 3.0,
        limiter: SlidingWindowRateLimiter,
    ) -> None:
        """`limiter`: the cancel-all endpoint's window, the REST client's (`limiter_for`)."""
        url = URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url must be http(s)://host[:port], got {base_url!r}")
        self._host = url.host
        self._port = url.port or (443 if url.scheme == "https" else 80)
        self._ssl = ssl.create_default_context() if url.scheme == "https" else None
        default_port = self._port == (443 if url.scheme == "https" else 80)
        host_header = self._host if default_port else f"{self._host}:{self._port}"
        self._clock_offset_ms = clock_offset_ms
        self._clock = wall_clock_ns
        self._keepalive_s = keepalive_s
        self._connect_timeout_s = connect_timeout_s
        self._answer_timeout_s = answer_timeout_s
        self._limiter = limiter
        self._signer = KeyedSigner(credentials.api_secret)
        self._cancel_body = orjson.dumps({"productType": PRODUCT_TYPE, "marginCoin": MARGIN_COIN})
        # What Bitget signs after the timestamp (`rest_prehash`), built once: the lane re-signs
        # on the reaction path when its pre-signed request has gone stale.
        self._cancel_prehash_tail = rest_prehash(
            "", "POST", CANCEL_ALL_ORDERS, "", self._cancel_body.decode()
        ).encode()
        headers = key_headers(credentials.api_key, credentials.passphrase, demo)
        lines = [
            f"POST {CANCEL_ALL_ORDERS} HTTP/1.1",
            f"Host: {host_header}",
            *(f"{name}: {value}" for name, value in headers.items()),
            f"Content-Length: {len(self._cancel_body)}",
            "",
        ]
        self._cancel_head = "\r\n".join(lines).encode()
        self._probe = (
            f"GET {SERVER_TIME} HTTP/1.1\r\nHost: {host_header}\r\nlocale: en-US\r\n\r\n"
        ).encode()
        self._signed_cancel = b""
        self._signed_at_ms = -PRESIGNED_MAX_AGE_MS
        self._resign: asyncio.TimerHandle | None = None
        self._protocol: _LaneProtocol | None = None
        self._waiting: asyncio.Future[LaneAnswer] | None = None
        self._timeout: asyncio.TimerHandle | None = None
        # The waiting cancel's place in the endpoint's window, settled with its answer.
        self._cancel_slot: RateSlot | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._connected = asyncio.Event()
        self._stopping = False
        self.connects = 0
        self.sent = 0
        self.last_error = ""

    def __repr__(self) -> str:
        return f"CancelLane({self._host}:{self._port}, ready={self.ready})"

    async def start(self) -> None:
        """Connect (a failure here is not fatal: the keeper retries, the client covers)."""
        self._keep_signed()
        self._keeper = asyncio.create_task(self._keep(), name="cancel-lane")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._connected.wait(), self._connect_timeout_s)

    async def stop(self) -> None:
        self._stopping = True
        if self._resign is not None:
            self._resign.cancel()
            self._resign = None
        if self._keeper is not None:
            self._keeper.cancel()
            await asyncio.gather(self._keeper, return_exceptions=True)
        protocol = self._protocol
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()
        self._fail_waiting(_lane_error("cancel lane stopped before the answer: outcome unknown"))

    @property
    def ready(self) -> bool:
        return self._idle_connection() is not None and self._limiter.has_room()

    def _idle_connection(self) -> asyncio.Transport | None:
        """The connection's transport, when it is up and no request waits on it."""
        protocol = self._protocol
        if protocol is None or self._waiting is not None:
            return None
        return protocol.transport

    def send_cancel_all(self) -> tuple[asyncio.Future[LaneAnswer], int] | None:
        """Write a signed cancel-all now; the answer's future and the epoch ns at which the
        bytes were handed to the socket's write. None when the lane is not ready."""
        transport = self._idle_connection()
        if transport is None:
            return None
        slot = self._limiter.try_acquire()
        if slot is None:
            return None
        now_ns = self._clock()
        if now_ns // 1_000_000 - self._signed_at_ms >= PRESIGNED_MAX_AGE_MS:
            self._sign_cancel(now_ns)
        request = self._signed_cancel
        # Stamped as the bytes are handed to the kernel, as aiohttp's chunk-sent hook stamps
        # the client path: on loopback the write call also runs the receiver's TCP stack and
        # may yield the core to the woken exchange, which is the exchange's time, not ours.
        sent_ns = self._clock()
        try:
            transport.write(request)
        except BaseException:
            slot.settle()  # nothing left, and no answer will settle it
            raise
        self.sent += 1
        answer = self._expect_answer()
        self._cancel_slot = slot
        return answer, sent_ns

    def _keep_signed(self) -> None:
        self._sign_cancel(self._clock())
        self._resign = asyncio.get_running_loop().call_later(
            PRESIGNED_MAX_AGE_MS / 2_000, self._keep_signed
        )

    def _sign_cancel(self, now_ns: int) -> None:
        now_ms = now_ns // 1_000_000
        timestamp = str(now_ms + self._clock_offset_ms())
        stamp = timestamp.encode()
        self._signed_cancel = b"".join(
            (
                self._cancel_head,
                _TIMESTAMP_LINE,
                stamp,
                _SIGN_LINE,
                self._signer.sign(stamp + self._cancel_prehash_tail),
                b"\r\n\r\n",
                self._cancel_body,
            )
        )
        self._signed_at_ms = now_ms

    # Connection keeping

    async def _keep(self) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        while not self._stopping:
            if self._protocol is None:
                try:
                    await asyncio.wait_for(
                        loop.create_connection(
                            lambda: _LaneProtocol(self),
                            self._host,
                            self._port,
                            ssl=self._ssl,
                            server_hostname=self._host if self._ssl is not None else None,
                        ),
                        self._connect_timeout_s,
                    )
                except (OSError, TimeoutError) as error:
                    failures += 1
                    self.last_error = f"connect failed: {type(error).__name__}: {error}"
                    await asyncio.sleep(min(0.25 * 2 ** min(failures, 5), 5.0))
                    continue
                failures = 0
                self.connects += 1
                self._connected.set()
            await asyncio.sleep(self._keepalive_s)
            if self._protocol is not None and self._waiting is None:
                self._send_probe()

    def _send_probe(self) -> None:
        protocol = self._protocol
        if protocol is None or protocol.transport is None:
            return
        protocol.transport.write(self._probe)
        answer = self._expect_answer()
        answer.add_done_callback(_consume)

    def _expect_answer(self) -> asyncio.Future[LaneAnswer]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[LaneAnswer] = loop.create_future()
        self._waiting = future
        self._timeout = loop.call_later(self._answer_timeout_s, self._answer_overdue)
        return future

    def _answer_overdue(self) -> None:
        protocol = self._protocol
        self._fail_waiting(_lane_error(f"no answer within {self._answer_timeout_s:g} s"))
        if protocol is not None:
            self._lost(protocol, "answer overdue")

    # Called by the protocol

    def _connection_made(self, protocol: _LaneProtocol) -> None:
        self._protocol = protocol

    def _answered(self, answer: LaneAnswer) -> None:
        waiting = self._take_waiting()
        if waiting is not None:
            waiting.set_result(answer)

    def _lost(self, protocol: _LaneProtocol, reason: str) -> None:
        if protocol.transport is not None:
            protocol.transport.abort()
            protocol.transport = None
        if self._protocol is protocol:
            self._protocol = None
            self._connected.clear()
            self.last_error = reason
        self._fail_waiting(_lane_error(f"cancel lane {reason} before the answer: outcome unknown"))
        if self._keeper is not None and not self._stopping:
            # Wake the keeper to reconnect now rather than after its keep-alive sleep.
            self._keeper.cancel()
            self._keeper = asyncio.get_running_loop().create_task(self._keep(), name="cancel-lane")

    def _fail_waiting(self, error: Exception) -> None:
        waiting = self._take_waiting()
        if waiting is not None:
            waiting.set_exception(error)

    def _take_waiting(self) -> asyncio.Future[LaneAnswer] | None:
        """The request still waiting for its answer, if any, now no longer awaited; stops the
        answer timeout."""
        waiting = self._waiting
        self._waiting = None
        if self._cancel_slot is not None:
            self._cancel_slot.settle()
            self._cancel_slot = None
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        return waiting if waiting is not None and not waiting.done() else None


def _consume(future: asyncio.Future[LaneAnswer]) -> None:
    if not future.cancelled():
        future.exception()  # a failed probe is handled by the reconnect; mark it retrieved


def _lane_error(detail: str) -> BitgetTransportError:
    """A lane request that left and got no answer, as the REST client says it (the venue falls
    back to the client on any lane failure, so nothing reads more than that it failed)."""
    return BitgetTransportError(CANCEL_ALL_ORDERS, detail, request_sent=True)
