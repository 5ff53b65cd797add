"""Fuzz target: Bitget REST answers (HTTP status + body) through the client's answer pipeline.

`check_answer` runs the exact code a `BitgetRestClient` call runs on what it received: the
envelope check (`_data_of`), then the endpoint's parser behind `_parsed` (for place-order,
`parse_order_ack` whose `MalformedAnswer` `_place` turns into an unreadable answer). That is
everything between `response.read()` and the caller, without a socket, so 100,000 answers take
seconds; `test_fuzz_rest.py` also sends fuzzed answers through a real loopback server.
Invariants: the only exceptions are the `BitgetRestError` family, each naming the endpoint,
printable and never echoing a secret; results are the documented types with finite numbers.
"""

from __future__ import annotations

from decimal import Decimal

import hypothesis.strategies as st
import orjson
from fuzz_tally import deep_json, require

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import (
    ALL_POSITION,
    BATCH_CANCEL_ORDERS,
    CANCEL_ALL_ORDERS,
    CANCEL_ORDER,
    CLOSE_POSITIONS,
    ORDERS_PENDING,
    PLACE_ORDER,
    SERVER_TIME,
)
from engine.bitget.models import (
    BatchResult,
    MalformedAnswer,
    OpenPosition,
    OrderAck,
    OrderRef,
    PendingOrder,
    parse_batch_result,
    parse_order_ack,
    parse_order_ref,
    parse_pending_page,
    parse_positions,
    parse_server_time,
)
from engine.bitget.rest import (
    BitgetApiError,
    BitgetRestClient,
    BitgetRestConfig,
    BitgetRestError,
    BitgetTransportError,
)

REST_SECRET = "rest-fuzz-secret-42"
REST_PASSPHRASE = "rest-fuzz-pass-42"
PARSERS = {
    SERVER_TIME: parse_server_time,
    CANCEL_ORDER: parse_order_ref,
    BATCH_CANCEL_ORDERS: parse_batch_result,
    CANCEL_ALL_ORDERS: parse_batch_result,
    CLOSE_POSITIONS: parse_batch_result,
    ORDERS_PENDING: parse_pending_page,
    ALL_POSITION: parse_positions,
    PLACE_ORDER: lambda data: parse_order_ack(data, "hcfuzz1", 1),
}
ENDPOINTS = tuple(PARSERS)
STATUSES = (200, 200, 200, 200, 201, 204, 302, 400, 401, 403, 404, 429, 500, 502, 503, 504)


class RestTarget:
    name = "rest"

    def __init__(self) -> None:
        self.client = BitgetRestClient(
            BitgetRestConfig(base_url="http://127.0.0.1:9"),
            Credentials("rest-fuzz-key", REST_SECRET, REST_PASSPHRASE),
        )

    def check_bytes(self, data: bytes) -> None:
        """First byte: the endpoint; second: the HTTP status; the rest: the body."""
        if len(data) < 2:
            return
        path = ENDPOINTS[data[0] % len(ENDPOINTS)]
        self.check_answer(path, STATUSES[data[1] % len(STATUSES)], data[2:])

    def check_answer(self, path: str, status: int, body: bytes) -> None:
        client = self.client
        try:
            data, _ = client._data_of(path, status, body)
            try:
                result = PARSERS[path](data)
            except MalformedAnswer as error:
                raise client._unreadable(path, error) from None
        except BitgetRestError as error:
            check_error(error, path)
            return
        check_result(path, result)


def check_error(error: BitgetRestError, path: str) -> None:
    text = str(error)
    require(text.startswith(f"{path}: "), f"error does not name the endpoint: {text[:120]!r}")
    require(text.isprintable(), f"error text is not printable: {text[:120]!r}")
    for secret in (REST_SECRET, REST_PASSPHRASE):
        require(secret not in text, "the error echoed a secret")
    require(len(text) < 2_000, f"error text of {len(text)} characters")
    if isinstance(error, BitgetApiError):
        require(isinstance(error.code, str) and error.code, f"api error code {error.code!r}")
        require(isinstance(error.retryable, bool), "retryable is not a bool")
    else:
        require(isinstance(error, BitgetTransportError), f"untyped error {type(error).__name__}")


def check_result(path: str, result: object) -> None:
    if path == SERVER_TIME:
        require(type(result) is int and result >= 0, f"server time {result!r}")
    elif path == PLACE_ORDER:
        require(type(result) is OrderAck, f"place-order answered {type(result).__name__}")
        require(result.order_id is None or isinstance(result.order_id, str), "order id type")
    elif path == CANCEL_ORDER:
        require(type(result) is OrderRef, f"cancel answered {type(result).__name__}")
    elif path == ORDERS_PENDING:
        orders, end_id = result
        require(end_id is None or isinstance(end_id, str), f"endId {end_id!r}")
        for order in orders:
            require(type(order) is PendingOrder, "a pending order of the wrong type")
            for name in ("size", "filled_size", "price"):
                value = getattr(order, name)
                require(value is None or _finite(value), f"pending {name} {value!r}")
            require(order.price is None or order.price > 0, f"price {order.price}")
            require(order.created_ms >= 0 and order.updated_ms >= 0, "negative order times")
    elif path == ALL_POSITION:
        for position in result:
            require(type(position) is OpenPosition, "a position of the wrong type")
            for name in ("total", "available", "open_price_avg", "unrealized_pl", "leverage"):
                require(_finite(getattr(position, name)), f"position {name} not finite")
            liquidation = position.liquidation_price
            require(liquidation is None or liquidation > 0, f"liquidation {liquidation}")
    else:
        require(type(result) is BatchResult, f"{path} answered {type(result).__name__}")
        for ref in (*result.succeeded, *result.failed):
            require(isinstance(ref.order_id, str) and isinstance(ref.client_oid, str), "refs")


def _finite(value: object) -> bool:
    return isinstance(value, Decimal) and value.is_finite()


# Structured inputs (hypothesis)

_TEXTISH = st.one_of(
    st.text(max_size=10),
    st.integers(-(2**63), 2**64 - 1),
    st.sampled_from(["", "0", "-1", "NaN", "Infinity", "1e999999", "9" * 5000, "\u00b2", "\u0663"]),
    st.sampled_from([REST_SECRET, f"bad key {REST_PASSPHRASE}"]),
)
_JUNK = st.recursive(
    st.none() | st.booleans() | st.floats() | _TEXTISH,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=6,
)
_FIELD = st.one_of(_TEXTISH, _TEXTISH, _JUNK)
_PENDING = st.fixed_dictionaries(
    {},
    optional={
        name: _FIELD
        for name in (
            "symbol", "orderId", "clientOid", "side", "orderType", "force", "price", "size",
            "baseVolume", "status", "reduceOnly", "cTime", "uTime",
        )
    },
)  # fmt: skip
_POSITION = st.fixed_dictionaries(
    {},
    optional={
        name: _FIELD
        for name in (
            "symbol", "holdSide", "total", "available", "openPriceAvg", "markPrice",
            "unrealizedPL", "liquidationPrice", "leverage", "marginMode", "posMode", "uTime",
        )
    },
)  # fmt: skip
_REF = st.fixed_dictionaries(
    {}, optional={name: _FIELD for name in ("orderId", "clientOid", "symbol", "errorMsg")}
)
DATA = st.one_of(
    _JUNK,
    st.fixed_dictionaries({"serverTime": _FIELD}),
    st.fixed_dictionaries({"entrustedList": st.lists(_PENDING, max_size=3) | _JUNK}),
    st.lists(_POSITION, max_size=3),
    st.fixed_dictionaries({"successList": st.lists(_REF, max_size=3), "failureList": _JUNK}),
    st.fixed_dictionaries({"orderId": _FIELD, "clientOid": _FIELD}),
)
_DEEP = "\x00deep\x00"


@st.composite
def answers(draw) -> tuple[str, int, bytes]:
    """(endpoint, HTTP status, body): an envelope with a fuzzed code, message and data, or
    bytes that are not one."""
    path = draw(st.sampled_from(ENDPOINTS))
    status = draw(st.sampled_from(STATUSES))
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return path, status, draw(st.binary(max_size=200))
    envelope = {
        "code": draw(st.sampled_from(["00000", "00000", "00000", "40008", "43118", "22001"]))
        if draw(st.integers(0, 3))
        else draw(_FIELD),
        "msg": draw(_FIELD | st.just(_DEEP)),
        "data": draw(DATA | st.just(_DEEP)),
    }
    for key in draw(st.lists(st.sampled_from(sorted(envelope)), max_size=1)):
        del envelope[key]
    body = orjson.dumps(envelope).replace(orjson.dumps(_DEEP), deep_json(1000))
    return path, status, body


SEED_ANSWERS = (
    (SERVER_TIME, 200, b'{"code":"00000","msg":"success","data":{"serverTime":"1726000000000"}}'),
    (PLACE_ORDER, 200, b'{"code":"00000","data":{"orderId":"121","clientOid":"hcfuzz1"}}'),
    (CANCEL_ORDER, 200, b'{"code":"00000","data":{"orderId":"121","clientOid":"hcfuzz1"}}'),
    (
        BATCH_CANCEL_ORDERS,
        200,
        b'{"code":"00000","data":{"successList":[{"orderId":"1","clientOid":"a"}],'
        b'"failureList":[{"orderId":"2","clientOid":"b","errorMsg":"x","errorCode":"40768"}]}}',
    ),
    (
        ORDERS_PENDING,
        200,
        b'{"code":"00000","data":{"entrustedList":[{"symbol":"BTCUSDT","orderId":"1",'
        b'"clientOid":"a","side":"buy","orderType":"limit","force":"gtc","price":"100",'
        b'"size":"1","baseVolume":"0","status":"live","reduceOnly":"NO","cTime":"1",'
        b'"uTime":"2"}],"endId":"1"}}',
    ),
    (
        ALL_POSITION,
        200,
        b'{"code":"00000","data":[{"symbol":"BTCUSDT","holdSide":"long","total":"1",'
        b'"available":"1","openPriceAvg":"100","markPrice":"101","unrealizedPL":"1",'
        b'"liquidationPrice":"50","leverage":"10","marginMode":"crossed","posMode":'
        b'"one_way_mode","uTime":"1"}]}',
    ),
    (CANCEL_ALL_ORDERS, 400, b'{"code":"22001","msg":"No order to cancel","data":null}'),
    (CLOSE_POSITIONS, 429, b'{"code":"429","msg":"Too Many Requests"}'),
    (PLACE_ORDER, 502, b"<html>Bad Gateway</html>"),
)
"""Answers of every endpoint: the atheris corpus starts from these (endpoint and status as
the first two bytes)."""


def seed_bytes() -> list[bytes]:
    return [
        bytes([ENDPOINTS.index(path), STATUSES.index(status)]) + body
        for path, status, body in SEED_ANSWERS
    ]
