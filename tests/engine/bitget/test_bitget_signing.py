"""Signing against every vector in docs/bitget-v2.md section 5."""

from __future__ import annotations

import pytest

from engine.bitget.signing import (
    canonical_query,
    rest_prehash,
    sign,
    signed_headers,
    ws_login_args,
    ws_login_prehash,
)

PLACE_ORDER_BODY = (
    '{"symbol":"BTCUSDT","productType":"USDT-FUTURES","marginMode":"crossed","marginCoin":"USDT",'
    '"size":"0.01","price":"60000","side":"buy","tradeSide":"open","orderType":"limit",'
    '"force":"gtc","clientOid":"test-0001"}'
)


@pytest.mark.parametrize(
    ("secret", "prehash", "expected"),
    [
        (
            "testsecret",
            "1659927630000GET/api/mix/v2/market/depth?limit=20&symbol=BTCUSDT",
            "BUbassOUwHdAjeOFu8D5FZfp4i2JGYCsS9yBvRLaC0U=",
        ),
        (
            "testsecret",
            "1659927630000GET/user/verify",
            "ReLoBF0dP2l8UDnVe5VABcut6c7GGb+QFkEZ/KeNw8k=",
        ),
        (
            "bitget_secret",
            "1627366780545GET/user/verify",
            "BsKPjD3dd8QMqNVXiQvXERNK4rH2ckyjbnX3Ra/wqNs=",
        ),
        (
            "bitget_secret",
            "1627366780545GET/api/v3/account/assets",
            "oRC2tj1pFkWAp8ZR0/oISVKUKhUZELuXDfxSK5oABOQ=",
        ),
        (
            "bitget_secret",
            "1627366780545GET/api/v3/account/assets?coin=USDT",
            "q36nay1fFMpxaFJw2DnH7GLRlYB5ORygL9jq6JYzbnU=",
        ),
        (
            "bitget_secret",
            '1627366780545POST/api/v3/trade/place-order{"category":"USDT-FUTURES"}',
            "u93SJEta4wfTR/CVwZbg6x2XG+8o2Cm9mNHtOdZpLqk=",
        ),
        (
            "bitget_secret",
            "1627366780545POST/api/v2/mix/order/place-order" + PLACE_ORDER_BODY,
            "MO97InGzkwUI8mL7fOpZKC2iW52kKUNDO/2AZF6zkJs=",
        ),
        (
            "bitget_secret",
            "1627366780545GET/api/v2/mix/position/all-position"
            "?marginCoin=USDT&productType=USDT-FUTURES",
            "laF6WV49crt0afUt5QGRn9ZthV5FJg4dTAe2X7YnNfc=",
        ),
        (
            "bitget_secret",
            "1627366780GET/user/verify",
            "wkpFPOpOKjCcS621EFt1DuFfySEUvOuzkTtcC3g95gk=",
        ),
    ],
)
def test_sign_matches_documented_vector(secret: str, prehash: str, expected: str) -> None:
    assert sign(secret, prehash) == expected


def test_prehash_of_depth_query_builds_the_nautilus_vector() -> None:
    query = canonical_query({"symbol": "BTCUSDT", "limit": 20})
    prehash = rest_prehash("1659927630000", "GET", "/api/mix/v2/market/depth", query, "")
    assert prehash == "1659927630000GET/api/mix/v2/market/depth?limit=20&symbol=BTCUSDT"
    assert sign("testsecret", prehash) == "BUbassOUwHdAjeOFu8D5FZfp4i2JGYCsS9yBvRLaC0U="


def test_prehash_without_query_has_no_question_mark() -> None:
    assert (
        rest_prehash("1627366780545", "get", "/api/v3/account/assets", "", "")
        == "1627366780545GET/api/v3/account/assets"
    )


def test_all_position_query_is_sorted_and_signs_to_the_vector() -> None:
    query = canonical_query({"productType": "USDT-FUTURES", "marginCoin": "USDT"})
    assert query == "marginCoin=USDT&productType=USDT-FUTURES"
    headers = signed_headers(
        "key", "bitget_secret", "pass", "1627366780545", "GET",
        "/api/v2/mix/position/all-position", query, "", demo=False,
    )  # fmt: skip
    assert headers["ACCESS-SIGN"] == "laF6WV49crt0afUt5QGRn9ZthV5FJg4dTAe2X7YnNfc="


def test_place_order_headers_carry_the_documented_signature() -> None:
    headers = signed_headers(
        "my-key", "bitget_secret", "my-pass", "1627366780545", "POST",
        "/api/v2/mix/order/place-order", "", PLACE_ORDER_BODY, demo=False,
    )  # fmt: skip
    assert headers == {
        "ACCESS-KEY": "my-key",
        "ACCESS-SIGN": "MO97InGzkwUI8mL7fOpZKC2iW52kKUNDO/2AZF6zkJs=",
        "ACCESS-TIMESTAMP": "1627366780545",
        "ACCESS-PASSPHRASE": "my-pass",
        "Content-Type": "application/json",
        "locale": "en-US",
    }


def test_demo_headers_add_paptrading() -> None:
    headers = signed_headers("k", "s", "p", "1", "GET", "/x", "", "", demo=True)
    assert headers["paptrading"] == "1"


def test_ws_login_signs_seconds_timestamp_against_user_verify() -> None:
    assert ws_login_prehash("1627366780") == "1627366780GET/user/verify"
    args = ws_login_args("my-key", "bitget_secret", "my-pass", "1627366780")
    assert args == {
        "apiKey": "my-key",
        "passphrase": "my-pass",
        "timestamp": "1627366780",
        "sign": "wkpFPOpOKjCcS621EFt1DuFfySEUvOuzkTtcC3g95gk=",
    }
    nautilus = ws_login_args("k", "testsecret", "p", "1659927630000")
    assert nautilus["sign"] == "ReLoBF0dP2l8UDnVe5VABcut6c7GGb+QFkEZ/KeNw8k="


def test_canonical_query_escapes_only_what_must_be_escaped() -> None:
    assert canonical_query({"b": "x y", "a": True, "c": "A-Z_0.9~"}) == "a=true&b=x%20y&c=A-Z_0.9~"
    assert canonical_query({}) == ""
