"""Bitget-speaking test clients (real httpx and websockets) for the simulated exchange."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import orjson
import websockets
from support.sim import sim_config as support_sim_config

from engine.bitget.signing import canonical_query, signed_headers
from engine.sim.server import SimExchange, SimExchangeConfig

BOOK_INTERVAL_MS = 30
WAIT_S = 5.0
"""Upper bound for waiting on something that should happen within a few intervals."""


def sim_config(**overrides: Any) -> SimExchangeConfig:
    """The simulator tests' exchange: support's, on seed 7."""
    return support_sim_config(7, **{"book_interval_ms": BOOK_INTERVAL_MS, **overrides})


class BitgetRest:
    """A signed Bitget v2 REST client (httpx) for the sim's credentials."""

    def __init__(self, exchange: SimExchange, client: httpx.AsyncClient) -> None:
        self.exchange = exchange
        self.client = client

    def headers(
        self, method: str, path: str, query: str = "", body: str = "", skew_ms: int = 0
    ) -> dict[str, str]:
        config = self.exchange.config
        timestamp = str(int(time.time() * 1000) + skew_ms)
        return signed_headers(
            config.api_key, config.api_secret, config.passphrase, timestamp,
            method, path, query, body, demo=config.demo,
        )  # fmt: skip

    async def post(
        self,
        path: str,
        payload: Mapping[str, object] | str,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        body = payload if isinstance(payload, str) else orjson.dumps(payload).decode()
        sent = self.headers("POST", path, body=body)
        sent.update(headers or {})
        return await self.client.post(path, content=body, headers=sent)

    async def get(self, path: str, params: Mapping[str, object]) -> httpx.Response:
        query = canonical_query(params)
        return await self.client.get(f"{path}?{query}", headers=self.headers("GET", path, query))

    async def place(self, **fields: object) -> httpx.Response:
        """Place an order from defaults plus `fields`; a field set to None is left out."""
        body: dict[str, object] = {
            "symbol": "BTCUSDT",
            "productType": "USDT-FUTURES",
            "marginMode": "crossed",
            "marginCoin": "USDT",
            "side": "buy",
            "orderType": "limit",
            "force": "gtc",
            "size": "0.010",
        }
        body.update(fields)
        present = {key: value for key, value in body.items() if value is not None}
        return await self.post("/api/v2/mix/order/place-order", present)

    async def pending(self, **params: object) -> list[dict[str, Any]]:
        response = await self.get(
            "/api/v2/mix/order/orders-pending", {"productType": "USDT-FUTURES", **params}
        )
        assert response.status_code == 200, response.text
        return response.json()["data"]["entrustedList"]


class PublicSocket:
    """A websockets client on the sim's public endpoint."""

    def __init__(self, connection: websockets.ClientConnection) -> None:
        self.connection = connection

    async def send_json(self, message: object) -> None:
        await self.connection.send(orjson.dumps(message).decode())

    async def subscribe(self, *pairs: tuple[str, str], op: str = "subscribe") -> None:
        args = [
            {"instType": "USDT-FUTURES", "channel": channel, "instId": symbol}
            for channel, symbol in pairs
        ]
        await self.send_json({"op": op, "args": args})

    async def recv_text(self, timeout: float = WAIT_S) -> str:
        message = await asyncio.wait_for(self.connection.recv(), timeout)
        assert isinstance(message, str)
        return message

    async def recv_json(self, timeout: float = WAIT_S) -> dict[str, Any]:
        return orjson.loads(await self.recv_text(timeout))

    async def recv_until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S
    ) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                text = await self.recv_text(timeout)
                if text == "pong":
                    continue
                message = orjson.loads(text)
                if predicate(message):
                    return message


def is_push(channel: str, symbol: str | None = None) -> Callable[[dict[str, Any]], bool]:
    def matches(message: dict[str, Any]) -> bool:
        arg = message.get("arg", {})
        return (
            "action" in message
            and arg.get("channel") == channel
            and (symbol is None or arg.get("instId") == symbol)
        )

    return matches
