"""Bitget v2 request signing: REST headers and the private websocket login.

Both use `base64(HMAC_SHA256(secret, prehash))`. The REST prehash is
`timestamp_ms + METHOD + path + ("?" + query if query) + body`, where body and query must be
byte-identical to what goes on the wire; the websocket login signs
`timestamp_s + "GET" + "/user/verify"` with a timestamp in seconds.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from urllib.parse import quote

WS_LOGIN_METHOD = "GET"
WS_LOGIN_PATH = "/user/verify"
TIMESTAMP_HEADER = "ACCESS-TIMESTAMP"
SIGN_HEADER = "ACCESS-SIGN"

# Characters left unescaped in query values: RFC 3986 unreserved ones. Symbols, product
# types and ids only use these, so the signed query equals the readable one.
_QUERY_SAFE = "-_.~"


def rest_prehash(timestamp_ms: str, method: str, request_path: str, query: str, body: str) -> str:
    """The string Bitget signs for a REST call; `query` without its leading '?'."""
    query_part = f"?{query}" if query else ""
    return f"{timestamp_ms}{method.upper()}{request_path}{query_part}{body}"


def sign(secret: str, prehash: str) -> str:
    """base64(HMAC-SHA256(secret, prehash)), the value of `ACCESS-SIGN` and of a login `sign`."""
    return sign_bytes(secret, prehash.encode())


def sign_bytes(secret: str, prehash: bytes) -> str:
    """`sign` over raw bytes, for a verifier that must hash a body exactly as received."""
    digest = hmac.new(secret.encode(), prehash, hashlib.sha256).digest()
    return base64.b64encode(digest).decode("ascii")


class KeyedSigner:
    """`sign_bytes` for one secret, keyed once: each signature copies the keyed HMAC, so a
    request signed on a reaction path (the cancel lane's) skips the key schedule."""

    __slots__ = ("_keyed",)

    def __init__(self, secret: str) -> None:
        self._keyed = hmac.new(secret.encode(), digestmod=hashlib.sha256)

    def sign(self, prehash: bytes) -> bytes:
        """The ASCII bytes of base64(HMAC-SHA256(secret, prehash))."""
        mac = self._keyed.copy()
        mac.update(prehash)
        return base64.b64encode(mac.digest())


def canonical_query(params: Mapping[str, object]) -> str:
    """The query string to both send and sign: keys sorted ascending, values percent-encoded.

    Send the request to `path + "?" + canonical_query(params)` verbatim (not through a client's
    own params encoding), so the signed text and the received text cannot differ.
    """
    return "&".join(
        f"{quote(str(key), safe=_QUERY_SAFE)}={quote(_query_value(params[key]), safe=_QUERY_SAFE)}"
        for key in sorted(params)
    )


def _query_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def signed_headers(
    api_key: str,
    secret: str,
    passphrase: str,
    timestamp_ms: str,
    method: str,
    path: str,
    query: str,
    body: str,
    demo: bool,
) -> dict[str, str]:
    """All headers of a signed private REST call; `demo` adds `paptrading: 1`."""
    headers = key_headers(api_key, passphrase, demo)
    headers[TIMESTAMP_HEADER] = timestamp_ms
    headers[SIGN_HEADER] = sign(secret, rest_prehash(timestamp_ms, method, path, query, body))
    return headers


def key_headers(api_key: str, passphrase: str, demo: bool) -> dict[str, str]:
    """The headers of a signed call that stay the same from one call to the next."""
    headers = {
        "ACCESS-KEY": api_key,
        "ACCESS-PASSPHRASE": passphrase,
        "Content-Type": "application/json",
        "locale": "en-US",
    }
    if demo:
        headers["paptrading"] = "1"
    return headers


def ws_login_prehash(timestamp_s: str) -> str:
    """The string signed by a private websocket login (timestamp in seconds)."""
    return f"{timestamp_s}{WS_LOGIN_METHOD}{WS_LOGIN_PATH}"


def ws_login_args(api_key: str, secret: str, passphrase: str, timestamp_s: str) -> dict[str, str]:
    """The single element of `args` in `{"op":"login","args":[...]}`."""
    return {
        "apiKey": api_key,
        "passphrase": passphrase,
        "timestamp": timestamp_s,
        "sign": sign(secret, ws_login_prehash(timestamp_s)),
    }
