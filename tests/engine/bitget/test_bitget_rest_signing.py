"""The client's request building against bitget-v2.md §5 vectors, and secret hygiene."""

from __future__ import annotations

import dataclasses

import pytest

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import ALL_POSITION, MARGIN_COIN, PLACE_ORDER, PRODUCT_TYPE
from engine.bitget.rest import BitgetRestConfig, build_signed_request, place_order_body

DOC_SECRET = "bitget_secret"
DOC_TIMESTAMP = "1627366780545"
DOC_PLACE_ORDER_BODY = (
    b'{"symbol":"BTCUSDT","productType":"USDT-FUTURES","marginMode":"crossed","marginCoin":"USDT",'
    b'"size":"0.01","price":"60000","side":"buy","tradeSide":"open","orderType":"limit",'
    b'"force":"gtc","clientOid":"test-0001"}'
)
DOC = Credentials("bg_doc_key", DOC_SECRET, "doc-passphrase")


def test_place_order_example_signs_to_the_documented_signature() -> None:
    body = place_order_body(
        "BTCUSDT", "buy", "0.01", price="60000", trade_side="open", client_oid="test-0001"
    )
    request = build_signed_request(DOC, "POST", PLACE_ORDER, DOC_TIMESTAMP, body=body)
    assert request.body == DOC_PLACE_ORDER_BODY, "the body sent is the body signed"
    assert request.prehash == DOC_TIMESTAMP + "POST" + PLACE_ORDER + DOC_PLACE_ORDER_BODY.decode()
    assert request.headers["ACCESS-SIGN"] == "MO97InGzkwUI8mL7fOpZKC2iW52kKUNDO/2AZF6zkJs="
    assert request.headers["ACCESS-TIMESTAMP"] == DOC_TIMESTAMP
    assert request.headers["ACCESS-KEY"] == "bg_doc_key"
    assert request.target == PLACE_ORDER and "paptrading" not in request.headers


def test_all_position_query_is_sorted_and_signs_to_the_documented_signature() -> None:
    # Given in the order the client's positions() builds it; the signed query is sorted.
    query = {"productType": PRODUCT_TYPE, "marginCoin": MARGIN_COIN}
    request = build_signed_request(DOC, "GET", ALL_POSITION, DOC_TIMESTAMP, query=query)
    assert request.target == f"{ALL_POSITION}?marginCoin=USDT&productType=USDT-FUTURES"
    assert request.body == b""
    assert request.headers["ACCESS-SIGN"] == "laF6WV49crt0afUt5QGRn9ZthV5FJg4dTAe2X7YnNfc="


def test_demo_requests_carry_paptrading() -> None:
    request = build_signed_request(DOC, "GET", ALL_POSITION, DOC_TIMESTAMP, demo=True)
    assert request.headers["paptrading"] == "1"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"order_type": "limit"}, "needs a price"),
        ({"order_type": "market", "price": "1"}, "takes no price"),
        ({"price": "-1"}, "positive"),
        ({"price": "abc"}, "decimal"),
        ({"price": "1", "client_oid": "x" * 33}, "client_oid"),
        ({"price": "1", "client_oid": "bad oid"}, "client_oid"),
        ({"price": "1", "reduce_only": True, "trade_side": "close"}, "hedge mode"),
    ],
)
def test_invalid_orders_are_refused_before_sending(fields: dict, message: str) -> None:
    arguments = {"client_oid": "ok-1", **fields}
    with pytest.raises(ValueError, match=message):
        place_order_body("BTCUSDT", "buy", "0.01", **arguments)


def test_market_reduce_only_body_omits_price_and_force() -> None:
    body = place_order_body(
        "BTCUSDT", "sell", "0.5", order_type="market", reduce_only=True, client_oid="c-1"
    )
    assert body == {
        "symbol": "BTCUSDT",
        "productType": "USDT-FUTURES",
        "marginMode": "crossed",
        "marginCoin": "USDT",
        "size": "0.5",
        "side": "sell",
        "orderType": "market",
        "clientOid": "c-1",
        "reduceOnly": "YES",
    }


def test_credentials_never_show_their_secrets() -> None:
    credentials = Credentials("bg_live_key_123456", "s3cr3t-value-x", "pass-phrase-y")
    request = build_signed_request(credentials, "GET", ALL_POSITION, DOC_TIMESTAMP)
    for text in (repr(credentials), str(credentials), f"{credentials}", repr(request)):
        assert "s3cr3t-value-x" not in text and "pass-phrase-y" not in text
    assert "bg_l" in repr(credentials) and "bg_live_key_123456" not in repr(credentials)
    assert credentials.secrets == ("s3cr3t-value-x", "pass-phrase-y")
    with pytest.raises(AttributeError):
        credentials.api_secret = "other"  # type: ignore[misc]


def test_invalid_credentials_are_refused_without_echoing_them() -> None:
    with pytest.raises(ValueError) as caught:
        Credentials("key", "secret with\nnewline", "pass")
    assert "newline" not in str(caught.value) and "api_secret" in str(caught.value)
    with pytest.raises(ValueError, match="passphrase"):
        Credentials("key", "secret", "")


@pytest.mark.parametrize(
    "overrides",
    [
        {"base_url": "api.bitget.com"},
        {"request_timeout_s": 0},
        {"max_attempts": 0},
        {"retry_initial_s": 1.0, "retry_max_s": 0.5},
        {"reconcile_grace_s": -1},
        {"margin_mode": "cross"},
        {"client_oid_prefix": "too-long-prefix"},
        {"client_oid_prefix": "a b"},
    ],
)
def test_config_is_validated(overrides: dict) -> None:
    with pytest.raises(ValueError):
        BitgetRestConfig(**overrides)


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        BitgetRestConfig().demo = True  # type: ignore[misc]
