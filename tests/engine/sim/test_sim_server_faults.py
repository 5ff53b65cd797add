"""Every fault kind, observed by real clients of a running sim."""

from __future__ import annotations

import asyncio
import math
import time

import httpx
import orjson
import pytest
import websockets
from sim_clients import WAIT_S, BitgetRest, PublicSocket, is_push, sim_config

from engine.sim.faults import MalformedKind
from engine.sim.server import SimExchange

POSITIONS = "/api/v2/mix/position/all-position"
PRODUCT = {"productType": "USDT-FUTURES"}


async def test_disconnect_drops_clients_who_can_reconnect(sim: SimExchange) -> None:
    async with websockets.connect(sim.ws_url) as connection:
        client = PublicSocket(connection)
        await client.subscribe(("books1", "BTCUSDT"))
        await client.recv_until(is_push("books1"))
        sim.faults.disconnect()
        with pytest.raises(websockets.ConnectionClosed) as closed:
            async with asyncio.timeout(WAIT_S):
                while True:
                    await connection.recv()
        assert closed.value.rcvd is None  # no close frame: an abrupt drop (1006)
    async with websockets.connect(sim.ws_url) as connection:
        client = PublicSocket(connection)
        await client.subscribe(("books1", "BTCUSDT"))
        assert (await client.recv_until(is_push("books1")))["action"] == "snapshot"


async def test_silence_stops_data_pushes_but_not_pongs(
    sim: SimExchange, public_ws: PublicSocket
) -> None:
    await public_ws.subscribe(("books1", "BTCUSDT"))
    await public_ws.recv_until(is_push("books1"))
    silenced_ms = sim.now_ms()
    sim.faults.silence(1.0)
    await public_ws.connection.send("ping")
    # Frames queued before the silence may still arrive ahead of the pong; none after it.
    async with asyncio.timeout(WAIT_S):
        while (text := await public_ws.recv_text()) != "pong":
            assert orjson.loads(text)["ts"] <= silenced_ms
    resumed = await public_ws.recv_until(is_push("books1"))
    assert resumed["ts"] >= silenced_ms + 1000


async def test_malformed_frames_cover_every_kind_then_recover(
    sim: SimExchange, public_ws: PublicSocket
) -> None:
    await public_ws.subscribe(("books15", "BTCUSDT"))
    await public_ws.recv_until(is_push("books15"))
    sim.faults.malformed(len(MalformedKind))
    kinds: list[MalformedKind] = []
    async with asyncio.timeout(WAIT_S):
        while len(kinds) < len(MalformedKind):
            kind = classify(await public_ws.recv_text())
            if kind is not None:
                kinds.append(kind)
    assert kinds == list(MalformedKind)
    for _ in range(3):
        assert classify(await public_ws.recv_text()) is None


def classify(text: str) -> MalformedKind | None:
    """Which corruption a books15 frame carries; None for a valid one."""
    try:
        frame = orjson.loads(text)
    except orjson.JSONDecodeError:
        return MalformedKind.TRUNCATED if text.startswith("{") else MalformedKind.NON_JSON
    if "data" not in frame:
        return MalformedKind.MISSING_FIELDS
    data = frame["data"][0]
    levels = data["bids"] + data["asks"]
    if any(math.isnan(float(price)) for price, _ in levels):
        return MalformedKind.NAN
    if any(float(size) < 0 for _, size in levels):
        return MalformedKind.NEGATIVE_SIZE
    if float(data["bids"][0][0]) >= float(data["asks"][0][0]):
        return MalformedKind.CROSSED_BOOK
    return None


async def test_slow_rest_delays_answers(sim: SimExchange, rest: BitgetRest) -> None:
    sim.faults.slow_rest(0.4)
    started = time.monotonic()
    response = await rest.client.get("/api/v2/public/time")
    assert response.status_code == 200
    assert time.monotonic() - started >= 0.4
    sim.faults.slow_rest(0)


async def test_rest_error_429_then_recovery(sim: SimExchange, rest: BitgetRest) -> None:
    sim.faults.rest_error(429, 2)
    for _ in range(2):
        response = await rest.get(POSITIONS, PRODUCT)
        assert response.status_code == 429 and response.json()["code"] == "429"
    assert (await rest.get(POSITIONS, PRODUCT)).json()["code"] == "00000"


async def test_rest_error_with_bitget_code_is_http_400_json(
    sim: SimExchange, rest: BitgetRest
) -> None:
    sim.faults.rest_error(40009, 1)
    response = await rest.get(POSITIONS, PRODUCT)
    assert response.status_code == 400
    assert response.json() == {
        "code": "40009",
        "msg": "sign signature error",
        "requestTime": response.json()["requestTime"],
        "data": None,
    }


async def test_rest_error_503_is_a_non_json_gateway_page(
    sim: SimExchange, rest: BitgetRest
) -> None:
    sim.faults.rest_error(503, 1)
    response = await rest.get(POSITIONS, PRODUCT)
    assert response.status_code == 503
    assert response.headers["content-type"].startswith("text/html")
    with pytest.raises(ValueError):
        response.json()
    assert (await rest.get(POSITIONS, PRODUCT)).status_code == 200


async def test_control_route_applies_faults_and_rejects_bad_specs(
    sim: SimExchange, rest: BitgetRest, public_ws: PublicSocket
) -> None:
    response = await rest.client.post(
        "/sim/faults", json={"faults": ["rest-error:45001:1", "silence:0.2"]}
    )
    body = response.json()
    assert response.status_code == 200 and body["code"] == "00000"
    assert body["data"]["accepted"] == ["rest-error:45001:1", "silence:0.2"]
    assert body["data"]["state"]["restError"] == {"code": 45001, "left": 1}
    assert (await rest.get(POSITIONS, PRODUCT)).json()["code"] == "45001"
    bad = await rest.client.post("/sim/faults", json={"faults": ["silence:forever"]})
    assert bad.status_code == 400
    assert "silence:forever" in bad.json()["msg"] and bad.json()["code"] == "40020"
    malformed_body = await rest.client.post("/sim/faults", content=b"faults please")
    assert malformed_body.status_code == 400
    state = await rest.client.get("/sim/faults")
    assert state.json()["data"]["restError"] is None
    await rest.client.post("/sim/faults", json={"faults": ["disconnect@0.1"]})
    with pytest.raises(websockets.ConnectionClosed):
        async with asyncio.timeout(WAIT_S):
            while True:
                await public_ws.connection.recv()


async def test_fault_given_before_start_fires_after_start() -> None:
    exchange = SimExchange(sim_config())
    exchange.faults.add("rest-error:40015:1@1")
    await exchange.start()
    try:
        async with httpx.AsyncClient(base_url=exchange.rest_url, timeout=WAIT_S) as client:
            rest = BitgetRest(exchange, client)
            assert (await rest.get(POSITIONS, PRODUCT)).json()["code"] == "00000"
            async with asyncio.timeout(WAIT_S):
                while (await rest.get(POSITIONS, PRODUCT)).json()["code"] != "40015":
                    await asyncio.sleep(0.25)  # under all-position's 5/s limit
            assert (await rest.get(POSITIONS, PRODUCT)).json()["code"] == "00000"
    finally:
        await exchange.stop()
