"""Bitget v2 error codes: the text the exchange sends and what the operator should do.

Codes are strings, as REST sends them; websocket codes arrive as JSON numbers and are looked up
by their decimal text. Never match on the exchange message (it is parameterised); match on the
code. Entries marked "(sim)" are codes the simulated exchange uses for request-validation
failures whose exact exchange text is not documented.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

SUCCESS_CODE = "00000"


class BitgetError(NamedTuple):
    code: str
    exchange_message: str
    """The `msg` Bitget sends (or a faithful paraphrase)."""
    explanation: str
    """A short operator message that says what is wrong and how to fix it."""


_ERRORS: tuple[BitgetError, ...] = (
    # Public and private websocket (section 1 of the protocol notes).
    BitgetError(
        "30001",
        "channel or instrument doesn't exist",
        "the subscribed channel/instrument does not exist: check the instId (BTCUSDT, no "
        "_UMCBL suffix on v2) and instType USDT-FUTURES",
    ),
    BitgetError(
        "30002",
        "illegal request",
        "the exchange could not read a websocket message: send JSON objects or the text 'ping'",
    ),
    BitgetError("30003", "invalid op", "unknown websocket op: use subscribe, unsubscribe or login"),
    BitgetError(
        "30004", "User needs to log in", "private channel before login: send op login first"
    ),
    BitgetError(
        "30005",
        "Login failed",
        "websocket login refused: check key, passphrase, a seconds timestamp and the sign of "
        "timestamp+GET+/user/verify",
    ),
    BitgetError(
        "30006",
        "request too many",
        "too many websocket messages: stay under 10 per second per connection, pings included",
    ),
    BitgetError(
        "30007",
        "request over limit,connection close",
        "websocket message limit exceeded and the connection was closed: slow down, reconnect",
    ),
    BitgetError(
        "30011", "Invalid ACCESS_KEY", "websocket login with an unknown API key: check the key"
    ),
    BitgetError(
        "30012",
        "Invalid ACCESS_PASSPHRASE",
        "websocket login with a wrong passphrase: use the passphrase set when the key was made",
    ),
    BitgetError(
        "30013",
        "Invalid ACCESS_TIMESTAMP",
        "websocket login timestamp is not a number: send Unix seconds as a string",
    ),
    BitgetError(
        "30014",
        "Request timestamp expired",
        "websocket login timestamp more than 30 s off: sync the system clock (NTP)",
    ),
    BitgetError(
        "30015",
        "Invalid signature",
        "websocket login signature wrong: check the API secret and the signed text",
    ),
    BitgetError(
        "30016",
        "Param error",
        "a subscribe argument is invalid, e.g. a channel v2 does not offer (books50 is v3 only)",
    ),
    # REST (section 4).
    BitgetError(
        "429",
        "Too Many Requests",
        "rate limit hit: slow down (place-order 10/s, close-positions 1/s, all-position 5/s); "
        "the 6000/min/IP limit blocks for 5 minutes",
    ),
    BitgetError(
        "503",
        "Service Unavailable",
        "exchange gateway unavailable: retry with backoff, often a release window",
    ),
    BitgetError(
        "40001",
        "ACCESS_KEY cannot be empty",
        "request sent without the ACCESS-KEY header: configure the API key",
    ),
    BitgetError(
        "40002",
        "SECRET_KEY cannot be empty",
        "no API secret configured: add the secret of the key",
    ),
    BitgetError(
        "40003",
        "Signature cannot be empty",
        "request sent without the ACCESS-SIGN header: the request was not signed",
    ),
    BitgetError(
        "40005",
        "Invalid ACCESS_TIMESTAMP",
        "ACCESS-TIMESTAMP missing or not a number: send Unix milliseconds as a string",
    ),
    BitgetError(
        "40006",
        "Invalid ACCESS_KEY",
        "the API key is malformed: copy it again from API management",
    ),
    BitgetError(
        "40008",
        "Request timestamp expired",
        "clock skew over 30 s against the exchange: sync the system clock (NTP); compare with "
        "GET /api/v2/public/time",
    ),
    BitgetError(
        "40009",
        "sign signature error",
        "signature mismatch: check the API secret, and that the signed body and query are "
        "byte-identical to the ones sent",
    ),
    BitgetError(
        "40011",
        "ACCESS_PASSPHRASE cannot be empty",
        "request sent without the ACCESS-PASSPHRASE header: configure the passphrase",
    ),
    BitgetError(
        "40012",
        "apikey/password is incorrect",
        "wrong passphrase for this key: use the passphrase chosen when the key was created",
    ),
    BitgetError(
        "40014",
        "Incorrect permissions",
        "the API key lacks the needed permission: enable futures trading on the key",
    ),
    BitgetError(
        "40015",
        "System error",
        "transient exchange error (often a Tue-Thu release window): retry with backoff",
    ),
    BitgetError(
        "40018",
        "Invalid IP",
        "this machine's IP is not on the key's whitelist: add it in API management",
    ),
    BitgetError(
        "40019",
        "Parameter cannot be empty",
        "(sim) a required request field is missing: see the message for which one",
    ),
    BitgetError(
        "40020",
        "Parameter verification failed",
        "(sim) a request field has an invalid value: see the message for which one",
    ),
    BitgetError(
        "40034",
        "Parameter does not exist",
        "(sim) unknown symbol: v2 symbols are like BTCUSDT with productType USDT-FUTURES",
    ),
    BitgetError(
        "40037",
        "Apikey does not exist",
        "the API key is unknown: deleted, mistyped, or a demo key used on live (or vice versa)",
    ),
    BitgetError(
        "40085",
        "You are in Unified Account mode, and the Classic Account API is not supported at "
        "this time",
        "account is in Unified Trading Account mode; the v2 Classic API is refused: switch the "
        "account back to Classic in Bitget settings or use a Classic sub-account",
    ),
    BitgetError(
        "40099",
        "exchange environment is incorrect",
        "demo/live mismatch: a demo key needs the paptrading: 1 header (demo mode on), a live "
        "key must not send it",
    ),
    BitgetError(
        "40109",
        "The data of the order cannot be found",
        "order not found: it may be filled or cancelled already; reconcile open orders",
    ),
    BitgetError(
        "40304",
        "clientOid length cannot exceed 50",
        "clientOid too long: use at most 32 characters of [0-9A-Za-z_#-]",
    ),
    BitgetError(
        "40305",
        "clientOid length cannot exceed 64",
        "clientOid too long: use at most 32 characters of [0-9A-Za-z_#-]",
    ),
    BitgetError(
        "40306",
        "Batch orders cannot exceed 20",
        "too many orders in one batch: send at most 20",
    ),
    BitgetError(
        "40404", "Request URL NOT FOUND", "unknown endpoint path: check the /api/v2/... route"
    ),
    BitgetError(
        "40725",
        "service return an error",
        "transient exchange error (often a release window): retry with backoff",
    ),
    BitgetError(
        "40757",
        "Not enough position is available",
        "reduce-only order without a position to reduce: check the position before closing",
    ),
    BitgetError(
        "40762",
        "The order amount exceeds the balance",
        "order larger than the balance or the maximum openable size: reduce size or leverage",
    ),
    BitgetError(
        "40768",
        "Order does not exist",
        "order not found: it may be filled or cancelled already; reconcile open orders",
    ),
    BitgetError(
        "40774",
        "The order type for unilateral position must also be the unilateral position type",
        "position-mode mismatch: in one-way mode omit tradeSide; in hedge mode send it",
    ),
    BitgetError(
        "40808",
        "Parameter verification exception",
        "request rejected by exchange validation (also seen in release windows): check the "
        "fields, retry with backoff",
    ),
    BitgetError(
        "22001",
        "No order to cancel",
        "nothing to cancel: there were no open orders, which is harmless",
    ),
    BitgetError(
        "22002",
        "No position to close",
        "nothing to close: there is no open position for that symbol",
    ),
    BitgetError(
        "22030",
        "This feature is not available in demo trading",
        "the endpoint is not offered for demo accounts",
    ),
    BitgetError(
        "22035",
        "Demo trading opening too frequently",
        "demo account opens too often: slow the order rate in demo mode",
    ),
    BitgetError(
        "43001",
        "The order does not exist",
        "order not found: it may be filled or cancelled already; reconcile open orders",
    ),
    BitgetError(
        "43004",
        "There is no order to cancel",
        "nothing to cancel: there were no open orders, which is harmless",
    ),
    BitgetError(
        "43012",
        "Insufficient balance",
        "not enough margin: deposit, reduce size or raise leverage",
    ),
    BitgetError(
        "43118",
        "clientOrderId duplicate",
        "clientOid already used by an open order: generate a fresh id per order",
    ),
    BitgetError(
        "45001",
        "Unknown error",
        "transient exchange error (often a release window): retry with backoff",
    ),
    BitgetError(
        "45110",
        "less than the minimum amount 5 USDT",
        "order notional below the 5 USDT minimum: increase size",
    ),
    BitgetError(
        "45111",
        "less than the minimum order quantity",
        "order size below the minimum or not a multiple of the size step: round to the step",
    ),
    BitgetError(
        "45115",
        "The price you enter should be a multiple of the tick size",
        "price not a multiple of the tick size: round the price to the tick",
    ),
)

KNOWN_ERRORS: Mapping[str, BitgetError] = MappingProxyType({err.code: err for err in _ERRORS})


def lookup_error(code: object) -> BitgetError | None:
    """The table entry for a code given as a string or a number; None when unknown."""
    return KNOWN_ERRORS.get(_normalise(code))


def describe_error(code: object) -> str:
    """`"<code>: <operator message>"`; never raises, whatever `code` is."""
    text = _normalise(code)
    known = KNOWN_ERRORS.get(text)
    if known is not None:
        return f"{text}: {known.explanation}"
    return f"{text}: unknown Bitget error code; read the exchange message that came with it"


def _normalise(code: object) -> str:
    try:
        text = str(code).strip()
    except Exception:  # a foreign object whose __str__ fails must not break error reporting
        return "<unprintable code>"
    return text or "<empty code>"
