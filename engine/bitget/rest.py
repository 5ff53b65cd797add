"""Signed Bitget v2 REST client for USDT-M futures: orders, positions and safe retries.

Every call goes through one pipeline: a per-endpoint sliding-window limiter (delays, never
drops; a placement its caller withdraws while it waits never leaves: `place_order`'s
`departing`), a request whose signed body and query are the exact bytes sent, and an answer check
(HTTP status and `code == "00000"`). Failures become `BitgetApiError` (the exchange answered
no) or `BitgetTransportError` (no usable answer).

Retry rules:
- Retryable answers (429, 5xx, release-window codes 45001/40725/40808/40015, demo 22035) back
  off with capped exponential delay and jitter, up to `max_attempts` sends; anything else raises
  at once. 40008 (clock skew) re-measures exchange time once and retries.
- Reads, cancels, cancel-all and close-positions are idempotent and are also retried after
  transport failures.
- Placing never duplicates: every order carries a clientOid, and every re-send reuses it. After
  an attempt whose outcome is unknown (timeout, dropped connection, unreadable answer, 5xx or a
  release-window code), the clientOid is first looked up among pending orders: present means
  placed. Absent means safe to re-send only for an order that rests on the book (limit gtc or
  post_only); a market/ioc/fok order never rests, so its absence proves nothing and the call
  raises `BitgetTransportError(outcome_unknown=True)` for the caller to reconcile from fills.
  A re-send answered 43118 (duplicate clientOid) means the earlier attempt landed: placed.

The HTTP client is aiohttp, not httpx (docs/architecture.md, "The HTTP client", says why).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import Any, NamedTuple, TypeVar

import aiohttp
import orjson
from yarl import URL

from engine.bitget.credentials import Credentials, printable_text
from engine.bitget.endpoints import (
    ALL_POSITION,
    BATCH_CANCEL_ORDERS,
    BITGET_REST_URL,
    CANCEL_ALL_ORDERS,
    CANCEL_ORDER,
    CLOSE_POSITIONS,
    MARGIN_COIN,
    ORDER_DETAIL,
    ORDER_FILLS,
    ORDERS_PENDING,
    PLACE_ORDER,
    PRODUCT_TYPE,
    RATE_LIMITS_PER_S,
    RATE_WINDOW_S,
    SERVER_TIME,
)
from engine.bitget.errors import SUCCESS_CODE, describe_error, lookup_error
from engine.bitget.models import (
    CLIENT_OID_PATTERN,
    EMPTY_BATCH,
    BatchResult,
    ClockSync,
    MalformedAnswer,
    OpenPosition,
    OrderAck,
    OrderDetail,
    OrderFailure,
    OrderFill,
    OrderRef,
    PendingOrder,
    PositionsAt,
    TradeSide,
    decimal_text,
    parse_batch_result,
    parse_fill_page,
    parse_order_ack,
    parse_order_detail,
    parse_order_ref,
    parse_pending_page,
    parse_positions,
    parse_server_time,
)
from engine.bitget.orders import OrderSide, OrderType, TimeInForce
from engine.bitget.rate_limit import SlidingWindowRateLimiter, backoff_delay_s
from engine.bitget.signing import canonical_query, rest_prehash, signed_headers
from engine.http_session import HttpSessionClient

logger = logging.getLogger(__name__)
_T = TypeVar("_T")

RETRYABLE_CODES = frozenset({"429", "503", "45001", "40725", "40808", "40015", "22035"})
"""Codes worth retrying with backoff: rate limits, gateway trouble, release-window errors."""
_REFUSED_UNPROCESSED = frozenset({"429", "22035", "40008"})
"""Retryable refusals that happen before the order is looked at: a re-send cannot duplicate."""
_DUPLICATE_CLIENT_OID = "43118"
_TIMESTAMP_EXPIRED = "40008"
_NOTHING_TO_CANCEL = frozenset({"22001", "43004"})
_NO_POSITION_TO_CLOSE = "22002"
_TRANSPORT_ERROR_KEY = "transport"

_BATCH_CANCEL_MAX = 50
_PENDING_PAGE_SIZE = 100
_PENDING_PAGES_MAX = 50
_FILL_PAGE_SIZE = 100
_FILL_PAGES_MAX = 20
_CLIENT_OID_MAX = 32


@dataclass(frozen=True, slots=True)
class BitgetRestConfig:
    """Where the exchange is, how long to wait, how to retry. Credentials are passed apart.

    `reconcile_grace_s` is how long to wait after an order-placing attempt with an unknown
    outcome before looking its clientOid up, so a request still in flight can land first.
    `rate_window_margin_s` widens each 1 s limiter window, counted from each request's answer,
    so the exchange's own clock and window edges cannot squeeze one request too many in.
    """

    base_url: str = BITGET_REST_URL
    demo: bool = False
    """Send `paptrading: 1` (a Bitget demo-trading key); a mismatch is answered 40099."""
    connect_timeout_s: float = 2.0
    request_timeout_s: float = 3.0
    max_attempts: int = 4
    retry_initial_s: float = 0.1
    retry_max_s: float = 2.0
    reconcile_grace_s: float = 0.3
    rate_window_margin_s: float = 0.1
    margin_mode: str = "crossed"
    client_oid_prefix: str = "hc"
    max_connections: int = 16

    def __post_init__(self) -> None:
        url = URL(self.base_url)
        if url.scheme not in ("http", "https") or not url.host or url.path not in ("", "/"):
            raise ValueError(
                f"base_url must be http(s)://host[:port] without a path, got {self.base_url!r}"
            )
        object.__setattr__(self, "base_url", self.base_url.rstrip("/"))
        for name in ("connect_timeout_s", "request_timeout_s", "retry_initial_s", "retry_max_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("reconcile_grace_s", "rate_window_margin_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0 <= value <= 10):
                raise ValueError(f"{name} must be within 0..10 s, got {value!r}")
        if self.retry_max_s < self.retry_initial_s:
            raise ValueError(
                f"retry_max_s ({self.retry_max_s}) must be >= retry_initial_s "
                f"({self.retry_initial_s})"
            )
        if not 1 <= self.max_attempts <= 20:
            raise ValueError(f"max_attempts must be within 1..20, got {self.max_attempts}")
        if self.margin_mode not in ("crossed", "isolated"):
            raise ValueError(f"margin_mode must be crossed or isolated, got {self.margin_mode!r}")
        if not 0 <= len(self.client_oid_prefix) <= 8 or (
            self.client_oid_prefix and not CLIENT_OID_PATTERN.match(self.client_oid_prefix)
        ):
            raise ValueError(
                "client_oid_prefix must be at most 8 characters of [0-9A-Za-z_#-], "
                f"got {self.client_oid_prefix!r}"
            )
        if not 1 <= self.max_connections <= 256:
            raise ValueError(f"max_connections must be within 1..256, got {self.max_connections}")


class BitgetRestError(Exception):
    """A REST call that did not succeed; `endpoint` is the request path."""

    def __init__(self, message: str, endpoint: str) -> None:
        super().__init__(message)
        self.endpoint = endpoint


class BitgetApiError(BitgetRestError):
    """The exchange answered with an error code (or an HTTP error status)."""

    def __init__(
        self,
        code: str,
        http_status: int,
        message_for_operator: str,
        retryable: bool,
        endpoint: str,
        exchange_message: str = "",
    ) -> None:
        said = f" (exchange said: {exchange_message})" if exchange_message else ""
        super().__init__(f"{endpoint}: HTTP {http_status}, {message_for_operator}{said}", endpoint)
        self.code = code
        self.http_status = http_status
        self.message_for_operator = message_for_operator
        self.retryable = retryable
        self.exchange_message = exchange_message


class BitgetTransportError(BitgetRestError):
    """No usable answer: connection failure, timeout, or an answer that could not be read.

    `request_sent` is False only when the request provably never left (connect failure);
    `outcome_unknown` is True when an order may have been placed without our knowing: the
    caller must reconcile by `client_oid` before acting as if it was or was not.
    """

    def __init__(
        self,
        endpoint: str,
        detail: str,
        *,
        request_sent: bool,
        outcome_unknown: bool = False,
        client_oid: str | None = None,
    ) -> None:
        unknown = f"; order outcome unknown, clientOid {client_oid}" if outcome_unknown else ""
        super().__init__(f"{endpoint}: {detail}{unknown}", endpoint)
        self.detail = detail
        self.request_sent = request_sent
        self.outcome_unknown = outcome_unknown
        self.client_oid = client_oid


class BitgetRequestWithdrawn(BitgetRestError):
    """A placement its caller withdrew while it waited for the rate limit: it never left."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(f"{endpoint}: withdrawn before it was sent", endpoint)


@dataclass(frozen=True, slots=True)
class SignedRequest:
    """A request ready for the wire: the exact target, body bytes and headers that were signed."""

    method: str
    target: str
    """Path plus `?query` as sent."""
    body: bytes
    prehash: str
    headers: Mapping[str, str] = field(repr=False)
    """Not in the repr: it carries the passphrase."""


def build_signed_request(
    credentials: Credentials,
    method: str,
    path: str,
    timestamp_ms: str,
    *,
    query: Mapping[str, object] | None = None,
    body: Mapping[str, object] | None = None,
    demo: bool = False,
) -> SignedRequest:
    """Serialise once (compact JSON, sorted query) and sign exactly those bytes."""
    query_text = canonical_query(query) if query else ""
    body_bytes = orjson.dumps(body) if body is not None else b""
    body_text = body_bytes.decode()
    headers = signed_headers(
        credentials.api_key,
        credentials.api_secret,
        credentials.passphrase,
        timestamp_ms,
        method,
        path,
        query_text,
        body_text,
        demo,
    )
    target = f"{path}?{query_text}" if query_text else path
    prehash = rest_prehash(timestamp_ms, method, path, query_text, body_text)
    return SignedRequest(method.upper(), target, body_bytes, prehash, MappingProxyType(headers))


def place_order_body(
    symbol: str,
    side: OrderSide | str,
    size: Decimal | str,
    *,
    client_oid: str,
    margin_mode: str = "crossed",
    order_type: OrderType | str = OrderType.LIMIT,
    price: Decimal | str | None = None,
    force: TimeInForce | str = TimeInForce.GTC,
    reduce_only: bool = False,
    trade_side: TradeSide | str | None = None,
) -> dict[str, str]:
    """The place-order body in Bitget's documented field order; validates before anything is sent.

    `size` is in base coin; `price` and `size` must already be on the instrument's tick and step.
    """
    _check_symbol(symbol)
    side = OrderSide(side)
    order_type = OrderType(order_type)
    force = TimeInForce(force)
    if not CLIENT_OID_PATTERN.match(client_oid):
        raise ValueError(
            f"client_oid must be 1..32 characters of [0-9A-Za-z_#-], got {client_oid!r}"
        )
    body = {
        "symbol": symbol,
        "productType": PRODUCT_TYPE,
        "marginMode": margin_mode,
        "marginCoin": MARGIN_COIN,
        "size": decimal_text(size, "size"),
    }
    if order_type is OrderType.LIMIT:
        if price is None:
            raise ValueError("a limit order needs a price")
        body["price"] = decimal_text(price, "price")
    elif price is not None:
        raise ValueError("a market order takes no price")
    body["side"] = side.value
    if trade_side is not None:
        if reduce_only:
            raise ValueError("reduce_only is for one-way mode; in hedge mode close with trade_side")
        body["tradeSide"] = TradeSide(trade_side).value
    body["orderType"] = order_type.value
    if order_type is OrderType.LIMIT:
        body["force"] = force.value
    body["clientOid"] = client_oid
    if reduce_only:
        body["reduceOnly"] = "YES"
    return body


@dataclass(frozen=True, slots=True)
class RestClientStats:
    """A snapshot of the client's counters; endpoint keys are request paths."""

    requests: Mapping[str, int]
    """Requests sent, every attempt counted."""
    errors: Mapping[str, int]
    """Failures by Bitget code or HTTP status; `transport` for no usable answer."""
    retries: int
    rate_limit_waits: Mapping[str, int]
    """Requests the client-side limiter delayed (none are dropped)."""
    rate_limit_wait_s: float
    last_latency_ms: Mapping[str, float]
    reconciliations: int
    """clientOid lookups after a place-order attempt with an unknown outcome."""
    reconciled_placed: int
    """Of those, the orders found placed (plus duplicate-clientOid confirmations)."""
    clock_offset_ms: int
    clock_resyncs: int
    """Clock re-measurements after a 40008 (timestamp outside Bitget's 30 s window)."""


class _Answer(NamedTuple):
    data: object
    sent_wall_ns: int
    received_wall_ns: int
    exchange_ms: int
    """The envelope's `requestTime` (the exchange's clock); the send time on our estimate of
    that clock when the envelope has none."""


class BitgetRestClient(HttpSessionClient):
    """The signed REST client: one keep-alive HTTP connection pool, limiter and stats."""

    def __init__(
        self,
        config: BitgetRestConfig,
        credentials: Credentials | None,
        *,
        wall_clock_ns: Callable[[], int] = time.time_ns,
        rng: random.Random | None = None,
        trace_configs: Iterable[aiohttp.TraceConfig] = (),
    ) -> None:
        self.config = config
        # None: public calls only (the contract table, server time), as `instruments` makes.
        self._credentials = credentials
        # aiohttp request hooks; the executor stamps when a cancel's bytes were written.
        self._trace_configs = tuple(trace_configs)
        self._wall_clock_ns = wall_clock_ns
        self._rng = rng if rng is not None else random.Random()
        window_s = RATE_WINDOW_S + config.rate_window_margin_s
        self._limiters = {
            path: SlidingWindowRateLimiter(limit, window_s)
            for path, limit in RATE_LIMITS_PER_S.items()
        }
        self._offset_ms = 0
        self._requests: Counter[str] = Counter()
        self._errors: Counter[str] = Counter()
        self._rate_limit_waits: Counter[str] = Counter()
        self._rate_limit_wait_s = 0.0
        self._last_latency_ms: dict[str, float] = {}
        self._retries = 0
        self._reconciliations = 0
        self._reconciled_placed = 0
        self._clock_resyncs = 0

    def __repr__(self) -> str:
        return f"BitgetRestClient(base_url={self.config.base_url!r}, demo={self.config.demo})"

    # Lifecycle

    def _open_session(self) -> aiohttp.ClientSession:
        config = self.config
        return aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=config.max_connections),
            timeout=aiohttp.ClientTimeout(
                total=config.request_timeout_s, connect=config.connect_timeout_s
            ),
            # Explicit configuration only: an inherited proxy setting must not reroute orders.
            trust_env=False,
            trace_configs=list(self._trace_configs) or None,
        )

    # Introspection

    @property
    def clock_offset_ms(self) -> int:
        """Exchange time minus local time, as last measured by `sync_time`."""
        return self._offset_ms

    def stats(self) -> RestClientStats:
        return RestClientStats(
            requests=MappingProxyType(dict(self._requests)),
            errors=MappingProxyType(dict(self._errors)),
            retries=self._retries,
            rate_limit_waits=MappingProxyType(dict(self._rate_limit_waits)),
            rate_limit_wait_s=self._rate_limit_wait_s,
            last_latency_ms=MappingProxyType(dict(self._last_latency_ms)),
            reconciliations=self._reconciliations,
            reconciled_placed=self._reconciled_placed,
            clock_offset_ms=self._offset_ms,
            clock_resyncs=self._clock_resyncs,
        )

    def new_client_oid(self) -> str:
        """A fresh clientOid: the configured prefix and random hex, 32 characters in all."""
        prefix = self.config.client_oid_prefix
        return prefix + uuid.uuid4().hex[: _CLIENT_OID_MAX - len(prefix)]

    # Public endpoints

    async def server_time(self) -> int:
        """Exchange time in epoch milliseconds."""
        answer = await self._call("GET", SERVER_TIME, signed=False)
        return self._parsed(SERVER_TIME, parse_server_time, answer.data)

    async def public_data(self, path: str, query: Mapping[str, object]) -> object:
        """The answer's `data` to an unsigned GET of a public endpoint (no key needed), one of
        `RATE_LIMITS_PER_S`'s, whose limit it keeps."""
        answer = await self._call("GET", path, query=query, signed=False)
        return answer.data

    async def sync_time(self) -> ClockSync:
        """Measure the exchange clock and stamp later requests with it (40008 otherwise)."""
        answer = await self._call("GET", SERVER_TIME, signed=False)
        server_ms = self._parsed(SERVER_TIME, parse_server_time, answer.data)
        local_mid_ms = (answer.sent_wall_ns + answer.received_wall_ns) / 2_000_000
        round_trip_ms = (answer.received_wall_ns - answer.sent_wall_ns) / 1_000_000
        sync = ClockSync(server_ms, round(server_ms - local_mid_ms), round_trip_ms)
        self._offset_ms = sync.offset_ms
        if sync.beyond_signing_window:
            logger.warning(
                "local clock is %.1f s %s Bitget's: the exchange refuses requests more than "
                "30 s off (40008). Requests are now stamped with exchange time; fix the "
                "system clock (NTP).",
                abs(sync.offset_ms) / 1000,
                "behind" if sync.offset_ms > 0 else "ahead of",
            )
        return sync

    async def _resync_clock(self) -> None:
        """A 40008: the exchange's clock and ours are apart; measure it again."""
        self._clock_resyncs += 1
        await self.sync_time()

    # Orders

    async def place_order(
        self,
        symbol: str,
        side: OrderSide | str,
        size: Decimal | str,
        *,
        order_type: OrderType | str = OrderType.LIMIT,
        price: Decimal | str | None = None,
        force: TimeInForce | str = TimeInForce.GTC,
        reduce_only: bool = False,
        client_oid: str | None = None,
        trade_side: TradeSide | str | None = None,
        departing: Callable[[], bool] | None = None,
    ) -> OrderAck:
        """Place one order, retrying without ever duplicating it (see the module docstring).

        A clientOid is generated when none is given. Raises `BitgetApiError` when refused and
        `BitgetTransportError` when the outcome could not be established. `departing` is asked
        right before each attempt leaves (once the rate limit lets it), and on each
        `recheck_queued_placements` while it waits, as long as no earlier attempt can have
        placed the order; when it says no, nothing more is sent and `BitgetRequestWithdrawn`
        is raised.
        """
        oid = client_oid if client_oid is not None else self.new_client_oid()
        body = place_order_body(
            symbol,
            side,
            size,
            client_oid=oid,
            margin_mode=self.config.margin_mode,
            order_type=order_type,
            price=price,
            force=force,
            reduce_only=reduce_only,
            trade_side=trade_side,
        )
        rests_on_book = OrderType(order_type) is OrderType.LIMIT and TimeInForce(force) in (
            TimeInForce.GTC,
            TimeInForce.POST_ONLY,
        )
        return await self._place(symbol, body, oid, rests_on_book, departing)

    async def cancel_order(
        self, symbol: str, *, order_id: str | None = None, client_oid: str | None = None
    ) -> OrderRef:
        """Cancel one order by id or clientOid (the id wins when both are given).

        Retried after transport failures; a retry answered "order does not exist" (40768,
        43001) most likely means the earlier attempt cancelled it.
        """
        _check_symbol(symbol)
        if not order_id and not client_oid:
            raise ValueError("cancel_order needs an order_id or a client_oid")
        body: dict[str, object] = {
            "symbol": symbol,
            "productType": PRODUCT_TYPE,
            "marginCoin": MARGIN_COIN,
        }
        if order_id:
            body["orderId"] = order_id
        if client_oid:
            body["clientOid"] = client_oid
        answer = await self._call("POST", CANCEL_ORDER, body=body)
        return self._parsed(CANCEL_ORDER, parse_order_ref, answer.data)

    async def batch_cancel(
        self,
        symbol: str,
        *,
        client_oids: Iterable[str] = (),
        order_ids: Iterable[str] = (),
    ) -> BatchResult:
        """Cancel the given orders of one symbol, 50 per request; per-order results."""
        _check_symbol(symbol)
        refs = [{"orderId": oid} for oid in order_ids] + [{"clientOid": oid} for oid in client_oids]
        if not refs:
            raise ValueError("batch_cancel needs at least one order id or client oid")
        succeeded: list[OrderRef] = []
        failed: list[OrderFailure] = []
        for start in range(0, len(refs), _BATCH_CANCEL_MAX):
            body = {
                "symbol": symbol,
                "productType": PRODUCT_TYPE,
                "marginCoin": MARGIN_COIN,
                "orderIdList": refs[start : start + _BATCH_CANCEL_MAX],
            }
            answer = await self._call("POST", BATCH_CANCEL_ORDERS, body=body)
            result = self._parsed(BATCH_CANCEL_ORDERS, parse_batch_result, answer.data)
            succeeded.extend(result.succeeded)
            failed.extend(result.failed)
        return BatchResult(tuple(succeeded), tuple(failed))

    def limiter_for(self, path: str) -> SlidingWindowRateLimiter:
        """The window `path`'s requests go through, for another sender to the same endpoint to
        share (the cancel lane: Bitget counts the requests of both)."""
        return self._limiters[path]

    def recheck_queued_placements(self) -> None:
        """Ask each placement waiting to leave (for the rate limit, or out the backoff after a
        refusal that left nothing placed) whether it is still wanted, now (its `departing`,
        see `place_order`): one withdrawn gives up at once, unsent."""
        self._limiters[PLACE_ORDER].recheck()

    async def cancel_all(self, symbol: str | None = None) -> BatchResult:
        """Cancel every open order (of one symbol, or of the whole product type).

        "No order to cancel" (22001/43004) is the goal state and returns an empty result.
        """
        if symbol is None:
            path = CANCEL_ALL_ORDERS
            body: dict[str, object] = {"productType": PRODUCT_TYPE, "marginCoin": MARGIN_COIN}
        else:
            _check_symbol(symbol)
            # Without an orderIdList, batch-cancel cancels everything of that symbol.
            path = BATCH_CANCEL_ORDERS
            body = {"symbol": symbol, "productType": PRODUCT_TYPE, "marginCoin": MARGIN_COIN}
        try:
            answer = await self._call("POST", path, body=body)
        except BitgetApiError as error:
            if error.code in _NOTHING_TO_CANCEL:
                return EMPTY_BATCH
            raise
        return self._parsed(path, parse_batch_result, answer.data)

    async def close_positions(self, symbol: str | None = None) -> BatchResult:
        """Flash-close positions at market (one symbol, or all); limited to 1 request/s.

        "No position to close" (22002) is the goal state and returns an empty result.
        """
        body: dict[str, object] = {"productType": PRODUCT_TYPE}
        if symbol is not None:
            _check_symbol(symbol)
            body["symbol"] = symbol
        try:
            answer = await self._call("POST", CLOSE_POSITIONS, body=body)
        except BitgetApiError as error:
            if error.code == _NO_POSITION_TO_CLOSE:
                return EMPTY_BATCH
            raise
        return self._parsed(CLOSE_POSITIONS, parse_batch_result, answer.data)

    async def pending_orders(
        self, symbol: str | None = None, *, client_oid: str | None = None
    ) -> list[PendingOrder]:
        """Open orders, newest first, following the exchange's pages."""
        query: dict[str, object] = {"productType": PRODUCT_TYPE, "limit": _PENDING_PAGE_SIZE}
        if symbol is not None:
            _check_symbol(symbol)
            query["symbol"] = symbol
        if client_oid is not None:
            query["clientOid"] = client_oid
        orders, complete = await self._pages(
            ORDERS_PENDING, parse_pending_page, query, _PENDING_PAGE_SIZE, _PENDING_PAGES_MAX
        )
        if not complete:
            logger.warning(
                "orders-pending: stopped after %d pages of %d orders",
                _PENDING_PAGES_MAX,
                _PENDING_PAGE_SIZE,
            )
        return orders

    async def order_detail(
        self, symbol: str, *, order_id: str | None = None, client_oid: str | None = None
    ) -> OrderDetail:
        """One order, open or finished, by id or clientOid (the id wins when both are given);
        an unknown order is refused (40109)."""
        _check_symbol(symbol)
        if not order_id and not client_oid:
            raise ValueError("order_detail needs an order_id or a client_oid")
        query: dict[str, object] = {"symbol": symbol, "productType": PRODUCT_TYPE}
        if order_id:
            query["orderId"] = order_id
        else:
            query["clientOid"] = client_oid
        answer = await self._call("GET", ORDER_DETAIL, query=query)
        return self._parsed(ORDER_DETAIL, parse_order_detail, answer.data)

    async def order_fills(self, symbol: str, order_id: str) -> list[OrderFill]:
        """Every fill of one order, newest first, following the exchange's pages."""
        _check_symbol(symbol)
        if not order_id:
            raise ValueError("order_fills needs an order_id")
        query: dict[str, object] = {
            "symbol": symbol,
            "productType": PRODUCT_TYPE,
            "orderId": order_id,
            "limit": _FILL_PAGE_SIZE,
        }
        fills, complete = await self._pages(
            ORDER_FILLS, parse_fill_page, query, _FILL_PAGE_SIZE, _FILL_PAGES_MAX
        )
        if complete:
            return fills
        raise BitgetTransportError(
            ORDER_FILLS,
            f"order {order_id} has more than {_FILL_PAGES_MAX * _FILL_PAGE_SIZE} fills: "
            "stopped paging",
            request_sent=True,
        )

    async def _pages(
        self,
        path: str,
        parse: Callable[[object], tuple[list[Any], str | None]],
        query: dict[str, object],
        page_size: int,
        pages_max: int,
    ) -> tuple[list[Any], bool]:
        """A paged GET, newest first, each page after the last one's end id: the items, and
        whether the last page came within `pages_max`."""
        items: list[Any] = []
        for _ in range(pages_max):
            answer = await self._call("GET", path, query=query)
            page, end_id = self._parsed(path, parse, answer.data)
            items.extend(page)
            if len(page) < page_size or end_id is None:
                return items, True
            query["idLessThan"] = end_id
        return items, False

    async def positions(self) -> list[OpenPosition]:
        """All open USDT-M positions."""
        return (await self.positions_at()).positions

    async def positions_at(self) -> PositionsAt:
        """All open USDT-M positions, stamped with the exchange's time of the answer."""
        query = {"productType": PRODUCT_TYPE, "marginCoin": MARGIN_COIN}
        answer = await self._call("GET", ALL_POSITION, query=query)
        return PositionsAt(
            self._parsed(ALL_POSITION, parse_positions, answer.data), answer.exchange_ms
        )

    # Placing without duplicates

    async def _place(
        self,
        symbol: str,
        body: Mapping[str, object],
        client_oid: str,
        rests_on_book: bool,
        departing: Callable[[], bool] | None,
    ) -> OrderAck:
        max_attempts = self.config.max_attempts
        maybe_placed = False
        resynced = False
        attempt = 0
        while True:
            attempt += 1
            failure: BitgetRestError
            try:
                # Once an attempt may have placed it, the order is the venue's: resent, never
                # withdrawn.
                answer = await self._send(
                    "POST", PLACE_ORDER, body=body, departing=None if maybe_placed else departing
                )
                return parse_order_ack(answer.data, client_oid, attempt)
            except MalformedAnswer as error:
                failure = self._unreadable(PLACE_ORDER, error)
                outcome_unknown = True
            except BitgetApiError as error:
                if error.code == _DUPLICATE_CLIENT_OID and maybe_placed:
                    return await self._confirm_duplicate(symbol, client_oid, attempt)
                if error.code == _TIMESTAMP_EXPIRED and not resynced:
                    resynced = True
                    await self._resync_clock()
                elif not error.retryable:
                    raise
                failure = error
                outcome_unknown = error.code not in _REFUSED_UNPROCESSED
            except BitgetTransportError as error:
                failure = error
                outcome_unknown = error.request_sent
            if outcome_unknown:
                maybe_placed = True
                found = await self._reconcile(symbol, client_oid, failure)
                if found is not None:
                    return OrderAck(client_oid, found.order_id, attempt, reconciled=True)
                if not rests_on_book:
                    raise BitgetTransportError(
                        PLACE_ORDER,
                        f"{failure}; the clientOid is not pending, but a market/ioc/fok order "
                        "never rests, so that does not prove it was not executed: reconcile "
                        "from fills and positions",
                        request_sent=True,
                        outcome_unknown=True,
                        client_oid=client_oid,
                    ) from failure
            if attempt >= max_attempts:
                if maybe_placed:
                    raise BitgetTransportError(
                        PLACE_ORDER,
                        f"gave up after {attempt} attempts, last: {failure}",
                        request_sent=True,
                        outcome_unknown=True,
                        client_oid=client_oid,
                    ) from failure
                raise failure
            await self._back_off(PLACE_ORDER, attempt, failure, None if maybe_placed else departing)

    async def _reconcile(
        self, symbol: str, client_oid: str, failure: BitgetRestError
    ) -> PendingOrder | None:
        """Look the clientOid up among pending orders after an attempt with unknown outcome."""
        self._reconciliations += 1
        logger.warning(
            "place-order outcome unknown (%s); looking up clientOid %s", failure, client_oid
        )
        await asyncio.sleep(self.config.reconcile_grace_s)
        try:
            found = await self._pending_order_of(symbol, client_oid)
        except BitgetRestError as error:
            raise BitgetTransportError(
                PLACE_ORDER,
                f"{failure}; the clientOid lookup failed too ({error})",
                request_sent=True,
                outcome_unknown=True,
                client_oid=client_oid,
            ) from error
        if found is not None:
            self._reconciled_placed += 1
        return found

    async def _confirm_duplicate(self, symbol: str, client_oid: str, attempt: int) -> OrderAck:
        """43118 on a re-send: an earlier attempt did land. Find its order id if possible."""
        self._reconciled_placed += 1
        try:
            found = await self._pending_order_of(symbol, client_oid)
        except BitgetRestError as error:
            logger.warning("clientOid %s is placed but its id lookup failed: %s", client_oid, error)
            found = None
        order_id = found.order_id if found is not None else None
        return OrderAck(client_oid, order_id, attempt, reconciled=True)

    async def _pending_order_of(self, symbol: str, client_oid: str) -> PendingOrder | None:
        """The open order with this clientOid, if the exchange lists one."""
        orders = await self.pending_orders(symbol, client_oid=client_oid)
        return next((order for order in orders if order.client_oid == client_oid), None)

    # The request pipeline

    async def _call(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, object] | None = None,
        body: Mapping[str, object] | None = None,
        signed: bool = True,
    ) -> _Answer:
        """Send an idempotent request, retrying retryable answers and transport failures."""
        resynced = False
        attempt = 0
        while True:
            attempt += 1
            failure: BitgetRestError
            try:
                return await self._send(method, path, query=query, body=body, signed=signed)
            except BitgetApiError as error:
                # Only a signed request carries a timestamp: a 40008 to the unsigned server-time
                # request that a resync sends would otherwise resync again, without end.
                if error.code == _TIMESTAMP_EXPIRED and signed and not resynced:
                    resynced = True
                    await self._resync_clock()
                elif not error.retryable:
                    raise
                failure = error
            except BitgetTransportError as error:
                failure = error
            if attempt >= self.config.max_attempts:
                raise failure
            await self._back_off(path, attempt, failure)

    async def _send(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, object] | None = None,
        body: Mapping[str, object] | None = None,
        signed: bool = True,
        departing: Callable[[], bool] | None = None,
    ) -> _Answer:
        """One attempt: wait for the limiter, sign, send, check the answer (`departing`: see
        `place_order`)."""
        http = self._session()
        slot = await self._limiters[path].acquire(departing)
        if slot is None:
            raise BitgetRequestWithdrawn(path)
        # The slot settles when the answer (or the failure) is in: see SlidingWindowRateLimiter.
        with slot:
            if slot.waited_s > 0:
                self._rate_limit_waits[path] += 1
                self._rate_limit_wait_s += slot.waited_s
            if signed:
                if self._credentials is None:
                    raise RuntimeError(f"{path} is signed, and this client has no credentials")
                request = build_signed_request(
                    self._credentials,
                    method,
                    path,
                    self._timestamp_ms(),
                    query=query,
                    body=body,
                    demo=self.config.demo,
                )
                target, content, headers = request.target, request.body, dict(request.headers)
            else:
                query_text = canonical_query(query) if query else ""
                target = f"{path}?{query_text}" if query_text else path
                content, headers = b"", {"locale": "en-US"}
            self._requests[path] += 1
            sent_ns = self._wall_clock_ns()
            started = time.perf_counter()
            # encoded=True: the URL goes out byte for byte as signed, never re-quoted.
            url = URL(self.config.base_url + target, encoded=True)
            try:
                async with http.request(
                    method, url, data=content if method == "POST" else None, headers=headers
                ) as response:
                    status, raw = response.status, await response.read()
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as error:
                raise self._transport_error(
                    path, f"could not connect ({type(error).__name__})", sent=False
                ) from None
            except TimeoutError as error:
                waited = f"{self.config.request_timeout_s:g} s"
                raise self._transport_error(
                    path, f"no answer within {waited} ({type(error).__name__})"
                ) from None
            except aiohttp.ClientError as error:
                raise self._transport_error(
                    path, f"connection failed ({type(error).__name__})"
                ) from None
        self._last_latency_ms[path] = (time.perf_counter() - started) * 1000
        received_ns = self._wall_clock_ns()
        data, exchange_ms = self._data_of(path, status, raw)
        if exchange_ms is None:
            exchange_ms = sent_ns // 1_000_000 + self._offset_ms
        return _Answer(data, sent_ns, received_ns, exchange_ms)

    def _data_of(self, path: str, status: int, raw: bytes) -> tuple[object, int | None]:
        """The envelope's `data` and `requestTime` (None when missing or not a time) on
        success; raises for an error code or an unreadable answer."""
        try:
            envelope = orjson.loads(raw)
        except orjson.JSONDecodeError:
            envelope = None
        if isinstance(envelope, dict) and "code" in envelope:
            code = _code_text(envelope["code"])
            if code == SUCCESS_CODE and 200 <= status < 300:
                return envelope.get("data"), _request_time(envelope.get("requestTime"))
            raise self._api_error(path, code, status, envelope.get("msg"))
        if status >= 400:
            # A gateway's HTML page or a bare status: the HTTP status is the code.
            raise self._api_error(path, str(status), status, None)
        raise self._transport_error(
            path, f"unreadable answer (HTTP {status} without a Bitget envelope)"
        )

    def _api_error(
        self, path: str, code: str, http_status: int, exchange_message: object
    ) -> BitgetApiError:
        self._errors[code] += 1
        # isascii: "²" is a digit to str.isdigit but not to int().
        gateway_error = http_status >= 500 or (
            code.isascii() and code.isdigit() and 500 <= int(code) <= 599
        )
        retryable = code in RETRYABLE_CODES or http_status == 429 or gateway_error
        if lookup_error(code) is None and gateway_error:
            operator_message = f"{code}: exchange gateway error (HTTP {http_status}), transient"
        else:
            operator_message = describe_error(code)
        return BitgetApiError(
            code,
            http_status,
            operator_message,
            retryable,
            path,
            self._scrubbed(exchange_message),
        )

    def _parsed(self, path: str, parse: Callable[[object], _T], data: object) -> _T:
        try:
            return parse(data)
        except MalformedAnswer as error:
            raise self._unreadable(path, error) from None

    def _unreadable(self, path: str, error: MalformedAnswer) -> BitgetTransportError:
        detail = self._scrubbed(str(error))
        return self._transport_error(path, f"unreadable answer ({detail})")

    def _scrubbed(self, text: object) -> str:
        if self._credentials is None:
            return printable_text(text)
        return self._credentials.scrubbed(text)

    def _transport_error(
        self, path: str, detail: str, *, sent: bool = True
    ) -> BitgetTransportError:
        """A request without a usable answer, counted; `sent` False only when it never left."""
        self._errors[_TRANSPORT_ERROR_KEY] += 1
        return BitgetTransportError(path, detail, request_sent=sent)

    async def _back_off(
        self,
        path: str,
        attempt: int,
        failure: BitgetRestError,
        departing: Callable[[], bool] | None = None,
    ) -> None:
        """Wait before the next attempt; a placement `departing` withdraws meanwhile (after a
        `recheck_queued_placements`) raises `BitgetRequestWithdrawn` at once."""
        delay = backoff_delay_s(
            attempt, self.config.retry_initial_s, self.config.retry_max_s, self._rng
        )
        self._retries += 1
        logger.warning(
            "bitget %s attempt %d/%d failed: %s; retrying in %.2f s",
            path,
            attempt,
            self.config.max_attempts,
            failure,
            delay,
        )
        if departing is None:
            await asyncio.sleep(delay)
        elif not await self._limiters[path].hold(delay, departing):
            raise BitgetRequestWithdrawn(path)

    def _timestamp_ms(self) -> str:
        return str(self._wall_clock_ns() // 1_000_000 + self._offset_ms)


def _request_time(value: object) -> int | None:
    """An envelope's `requestTime`, epoch ms (Bitget sends a number; a digit string is taken)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**53:
        return value
    return None


def _code_text(code: object) -> str:
    if isinstance(code, (str, int)) and not isinstance(code, bool):
        text = str(code).strip()
        if text and len(text) <= 16 and text.isprintable():
            return text
    return "<malformed code>"


def _check_symbol(symbol: str) -> None:
    if not isinstance(symbol, str) or not symbol.isascii() or not symbol.isalnum():
        raise ValueError(f"symbol must be letters and digits like BTCUSDT, got {symbol!r}")
