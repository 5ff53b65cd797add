"""Whatever a client sends, the sim answers in Bitget's shapes and keeps serving."""

from __future__ import annotations

import orjson
import pytest
import websockets
from sim_clients import BitgetRest, PublicSocket, is_push

from engine.sim.server import SimExchange

PLACE = "/api/v2/mix/order/place-order"
NASTY_BODIES: list[object] = [
    {"symbol": ["BTCUSDT"]},
    {"symbol": "BTCUSDT", "productType": {"x": 1}},
    {"symbol": "BTCUSDT", "productType": "USDT-FUTURES", "marginMode": "crossed",
     "marginCoin": "USDT", "side": "buy", "orderType": "limit", "size": True, "price": "1"},
    {"symbol": "BTCUSDT", "productType": "USDT-FUTURES", "marginMode": "crossed",
     "marginCoin": "USDT", "side": "buy", "orderType": "limit", "size": "1e999", "price": "1"},
    {"symbol": "BTCUSDT", "productType": "USDT-FUTURES", "marginMode": "crossed",
     "marginCoin": "USDT", "side": "sell", "orderType": "limit", "size": "0.001",
     "price": "1e300"},
    {"symbol": "BTCUSDT", "productType": "USDT-FUTURES", "marginMode": "crossed",
     "marginCoin": "USDT", "side": "buy", "orderType": "market", "size": 12345678901234567890},
    {"symbol": "BTCUSDT", "productType": "USDT-FUTURES", "marginMode": "crossed",
     "marginCoin": "USDT", "side": "buy", "orderType": "limit", "size": "0.001",
     "price": "NaN"},
    {"symbol": "\u0000", "clientOid": "\u00e9\u00e9"},
    [],
    "just a string",
    12,
    None,
]  # fmt: skip


@pytest.mark.parametrize("body", NASTY_BODIES, ids=range(len(NASTY_BODIES)))
async def test_nasty_order_bodies_get_bitget_errors(rest: BitgetRest, body: object) -> None:
    response = await rest.post(PLACE, orjson.dumps(body).decode())
    assert response.status_code == 400, response.text
    payload = response.json()
    assert isinstance(payload["code"], str) and payload["code"] != "00000"
    assert payload["data"] is None


async def test_non_utf8_body_and_odd_query_are_refused_not_crashed(rest: BitgetRest) -> None:
    headers = rest.headers("POST", PLACE, body="")
    response = await rest.client.post(PLACE, content=b"\xff\xfe\x00", headers=headers)
    assert response.status_code == 400 and response.json()["code"] == "40009"
    path = "/api/v2/mix/order/orders-pending"
    query = "productType=USDT-FUTURES&limit=%C2%B2&idLessThan=%FF"
    response = await rest.client.get(f"{path}?{query}", headers=rest.headers("GET", path, query))
    assert response.status_code == 400 and response.json()["code"] == "40020"
    headers: dict[str, str | bytes] = {**rest.headers("GET", path, "productType=USDT-FUTURES")}
    headers["ACCESS-TIMESTAMP"] = "\u00b2\u00b3".encode()
    response = await rest.client.get(f"{path}?productType=USDT-FUTURES", headers=headers)
    assert response.status_code == 400 and response.json()["code"] == "40005"


NASTY_MESSAGES: list[str | bytes] = [
    "",
    "null",
    "[]",
    '"subscribe"',
    '{"op": null}',
    '{"op": "subscribe"}',
    '{"op": "subscribe", "args": [{}]}',
    '{"op": "subscribe", "args": [{"instType": 1, "channel": "books", "instId": "BTCUSDT"}]}',
    '{"op": "subscribe", "args": [{"instType": "USDT-FUTURES", "channel": ["books"]}]}',
    '{"op": "unsubscribe", "args": [null]}',
    "PING",
    '{"op": "login", "args": []}',
    "\ud800".encode("utf-8", "surrogatepass"),
    "x" * 60_000,
    "{" * 5_000,
]


async def test_nasty_websocket_messages_get_errors_and_the_feed_continues(sim: SimExchange) -> None:
    for start in range(0, len(NASTY_MESSAGES), 8):  # stay under 10 messages per second
        async with websockets.connect(sim.ws_url) as connection:
            client = PublicSocket(connection)
            for message in NASTY_MESSAGES[start : start + 8]:
                await connection.send(message)
                reply = await client.recv_json()
                assert reply["event"] == "error" and reply["code"] in (30002, 30003, 30016)
            await client.subscribe(("books1", "BTCUSDT"))
            assert (await client.recv_until(is_push("books1")))["action"] == "snapshot"
