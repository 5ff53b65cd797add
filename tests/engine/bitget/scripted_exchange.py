"""A loopback aiohttp server whose answers a test scripts, recording every arrival.

For what the simulated exchange cannot do on cue: drop a connection mid-request, answer
garbage, or refuse a re-send with 43118. Arrival times are `time.monotonic()` on the server
side of the socket, in the same process as the client under test.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import orjson
from aiohttp import web
from support.loopback import Loopback, catch_all

Reply = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Arrival:
    method: str
    path: str
    query: str
    body: bytes
    at: float


def envelope(data: object, code: str = "00000", status: int = 200) -> web.Response:
    body = {"code": code, "msg": "success" if code == "00000" else "error", "data": data}
    body["requestTime"] = int(time.time() * 1000)
    return web.Response(body=orjson.dumps(body), status=status, content_type="application/json")


def ok(data: object) -> Reply:
    async def reply(request: web.Request) -> web.StreamResponse:
        return envelope(data)

    return reply


def error(code: str, status: int = 400) -> Reply:
    async def reply(request: web.Request) -> web.StreamResponse:
        return envelope(None, code, status)

    return reply


def raw(text: str, status: int = 200, content_type: str = "text/html") -> Reply:
    async def reply(request: web.Request) -> web.StreamResponse:
        return web.Response(text=text, status=status, content_type=content_type)

    return reply


def pending(*orders: dict[str, str]) -> Reply:
    return ok({"entrustedList": list(orders) or None, "endId": None})


def pending_order(client_oid: str, order_id: str = "777") -> dict[str, str]:
    return {
        "symbol": "BTCUSDT",
        "orderId": order_id,
        "clientOid": client_oid,
        "side": "buy",
        "orderType": "limit",
        "force": "gtc",
        "price": "60000.0",
        "size": "0.010",
        "baseVolume": "0",
        "status": "live",
        "reduceOnly": "NO",
        "cTime": "1700000000000",
        "uTime": "1700000000000",
    }


class ScriptedExchange:
    """Answers each path from its script in order; the last reply of a script repeats."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self._scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self._late: dict[str, deque[float]] = defaultdict(deque)
        self._server: Loopback | None = None
        self.url = ""

    def script(self, path: str, *replies: Reply) -> None:
        self._scripts[path].extend(replies)

    def arrive_late(self, path: str, *delays_s: float) -> None:
        """The next requests to `path` reach the exchange's clock these many seconds after the
        server has them, one delay each (a cold connection's handshake, a congested route)."""
        self._late[path].extend(delays_s)

    def arrivals_at(self, path: str) -> list[Arrival]:
        return [arrival for arrival in self.arrivals if arrival.path == path]

    async def start(self) -> None:
        self._server = Loopback(catch_all(self._serve))
        await self._server.start()
        self.url = self._server.url

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop()

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        late = self._late.get(request.path)
        if late:
            await asyncio.sleep(late.popleft())
        self.arrivals.append(
            Arrival(
                request.method,
                request.path,
                request.rel_url.raw_query_string,
                body,
                time.monotonic(),
            )
        )
        script = self._scripts.get(request.path)
        if not script:
            return envelope(None, "40404", 404)
        reply = script.popleft() if len(script) > 1 else script[0]
        return await reply(request)
