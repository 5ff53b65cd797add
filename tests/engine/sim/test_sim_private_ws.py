"""The sim's private websocket (`/v2/ws/private`), driven by a real `websockets` client and
signed REST calls: login checks, subscriptions, and the orders/fill/positions pushes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
import pytest
import websockets
from sim_clients import WAIT_S, BitgetRest, is_push

from engine.bitget.orders import OrderSide
from engine.bitget.signing import ws_login_args
from engine.sim.server import SimExchange

POSITIONS_DEFAULT = ("positions", "default")
ORDER_FIELDS = {
    "orderId", "clientOid", "instId", "price", "size", "notionalUsd", "side", "tradeSide",
    "posSide", "posMode", "orderType", "force", "status", "accBaseVolume", "fillNotionalUsd",
    "leverage", "marginMode", "marginCoin", "reduceOnly", "enterPointSource", "stpMode",
    "cancelReason", "feeDetail", "pnl", "totalProfits", "presetStopSurplusPrice",
    "presetStopLossPrice", "cTime", "uTime",
}  # fmt: skip
"""Fields of every `orders` push; `priceAvg` is added unless canceled, the fill fields on a fill."""
ORDER_FILL_FIELDS = {
    "fillPrice", "tradeId", "baseVolume", "fillTime", "fillFee", "fillFeeCoin", "tradeScope",
}  # fmt: skip
FILL_FIELDS = {
    "orderId", "clientOid", "tradeId", "symbol", "side", "orderType", "posMode", "price",
    "baseVolume", "quoteVolume", "profit", "tradeSide", "tradeScope", "feeDetail", "cTime",
    "uTime",
}  # fmt: skip
POSITION_FIELDS = {
    "posId", "instId", "marginCoin", "marginSize", "marginMode", "holdSide", "posMode", "total",
    "available", "frozen", "openPriceAvg", "leverage", "achievedProfits", "unrealizedPL",
    "unrealizedPLR", "liquidationPrice", "keepMarginRate", "marginRate", "breakEvenPrice",
    "totalFee", "deductedFee", "markPrice", "assetMode", "autoMargin", "cTime", "uTime",
}  # fmt: skip


class PrivateSocket:
    """A websockets client on the sim's private endpoint."""

    def __init__(self, exchange: SimExchange, connection: websockets.ClientConnection) -> None:
        self.exchange = exchange
        self.connection = connection

    async def send_json(self, message: object) -> None:
        await self.connection.send(orjson.dumps(message).decode())

    async def login(self, **overrides: str) -> dict[str, Any]:
        config = self.exchange.config
        args = ws_login_args(
            overrides.pop("api_key", config.api_key),
            overrides.pop("secret", config.api_secret),
            overrides.pop("passphrase", config.passphrase),
            overrides.pop("timestamp", str(int(time.time()))),
        )
        args.update(overrides)
        await self.send_json({"op": "login", "args": [args]})
        return await self.recv_json()

    async def subscribe(self, *pairs: tuple[str, str], op: str = "subscribe") -> None:
        args = [
            {"instType": "USDT-FUTURES", "channel": channel, "instId": inst_id}
            for channel, inst_id in pairs
        ]
        await self.send_json({"op": op, "args": args})

    async def recv_json(self, timeout: float = WAIT_S) -> dict[str, Any]:
        text = await asyncio.wait_for(self.connection.recv(), timeout)
        assert isinstance(text, str)
        return orjson.loads(text)

    async def recv_until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S
    ) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                text = await self.connection.recv()
                if text != "pong" and predicate(message := orjson.loads(text)):
                    return message

    async def pushes_until(
        self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S
    ) -> list[dict[str, Any]]:
        """Every push up to and including the first that matches `predicate`."""
        seen: list[dict[str, Any]] = []

        def keep(message: dict[str, Any]) -> bool:
            if "action" in message:
                seen.append(message)
            return predicate(message)

        await self.recv_until(keep, timeout)
        return seen


@pytest.fixture
async def private_ws(sim: SimExchange) -> AsyncIterator[PrivateSocket]:
    async with websockets.connect(sim.private_ws_url) as connection:
        yield PrivateSocket(sim, connection)


@pytest.fixture
async def subscribed(private_ws: PrivateSocket) -> PrivateSocket:
    """Logged in, subscribed to orders, fill and positions for every symbol, the initial
    (empty) positions snapshot read."""
    assert (await private_ws.login())["code"] == 0
    await private_ws.subscribe(("orders", "default"), ("fill", "default"), POSITIONS_DEFAULT)
    for _ in range(3):
        assert (await private_ws.recv_json())["event"] == "subscribe"
    snapshot = await private_ws.recv_json()
    assert is_push("positions")(snapshot) and snapshot["data"] == []
    return private_ws


def passive_bid(sim: SimExchange, symbol: str = "BTCUSDT", ticks: int = 3000) -> str:
    assert sim.market is not None
    book = sim.market.book(symbol, 1)
    tick = sim.engine(symbol).instrument.tick_size
    return sim.engine(symbol).instrument.format_price(book.best_bid - ticks * tick)


def is_order(status: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: is_push("orders")(m) and m["data"][0]["status"] == status


def all_strings(entry: dict[str, Any], *, except_fields: tuple[str, ...] = ()) -> bool:
    return all(isinstance(value, str) for name, value in entry.items() if name not in except_fields)


# Login


@pytest.mark.parametrize("timestamp_unit_ms", [1000, 1], ids=["seconds", "milliseconds"])
async def test_login_is_accepted_in_seconds_and_milliseconds(
    private_ws: PrivateSocket, timestamp_unit_ms: int
) -> None:
    timestamp = str(int(time.time() * 1000) // timestamp_unit_ms)
    answer = await private_ws.login(timestamp=timestamp)
    assert answer["event"] == "login" and answer["code"] == 0 and answer["connId"]


@pytest.mark.parametrize(
    ("overrides", "code", "message"),
    [
        ({"secret": "not-the-secret"}, 30015, "Invalid signature"),
        ({"passphrase": "not-the-passphrase"}, 30012, "Invalid ACCESS_PASSPHRASE"),
        ({"api_key": "bg_unknown_key"}, 30011, "Invalid ACCESS_KEY"),
        ({"timestamp": str(int(time.time()) - 31)}, 30014, "Request timestamp expired"),
        ({"timestamp": "yesterday"}, 30013, "Invalid ACCESS_TIMESTAMP"),
        ({"sign": ""}, 30015, "Invalid signature"),
    ],
    ids=["bad-signature", "wrong-passphrase", "unknown-key", "stale", "not-a-number", "no-sign"],
)
async def test_refused_login_is_answered_then_the_connection_closes(
    private_ws: PrivateSocket, overrides: dict[str, str], code: int, message: str
) -> None:
    answer = await private_ws.login(**overrides)
    assert answer == {"event": "error", "code": code, "msg": message, "op": "login"}
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(private_ws.connection.recv(), WAIT_S)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_malformed_login_args_get_30005(private_ws: PrivateSocket) -> None:
    await private_ws.send_json({"op": "login", "args": "key"})
    assert (await private_ws.recv_json())["code"] == 30005


async def test_private_channels_need_a_login_first(private_ws: PrivateSocket) -> None:
    await private_ws.subscribe(("orders", "default"))
    error = await private_ws.recv_json()
    assert error == {
        "event": "error",
        "arg": {"instType": "USDT-FUTURES", "channel": "orders", "instId": "default"},
        "code": 30004,
        "msg": "User needs to log in",
        "op": "subscribe",
    }
    # Still open: the client may log in now.
    assert (await private_ws.login())["code"] == 0


# Subscriptions


async def test_subscriptions_are_acked_or_refused_like_bitget(private_ws: PrivateSocket) -> None:
    await private_ws.login()
    await private_ws.connection.send("ping")
    assert await asyncio.wait_for(private_ws.connection.recv(), WAIT_S) == "pong"
    await private_ws.subscribe(
        ("orders", "BTCUSDT"),
        ("fill", "default"),
        ("positions", "BTCUSDT"),
        ("orders", "NOPEUSDT"),
        ("account", "default"),
        ("books15", "BTCUSDT"),
    )
    answers = [await private_ws.recv_json() for _ in range(6)]
    assert [(a["event"], a.get("code")) for a in answers] == [
        ("subscribe", None),
        ("subscribe", None),
        ("error", 30016),  # positions only takes `default`
        ("error", 30001),
        ("error", 30016),
        ("error", 30016),  # public channels are not served here
    ]
    assert answers[0]["arg"] == {
        "instType": "USDT-FUTURES",
        "channel": "orders",
        "instId": "BTCUSDT",
    }
    await private_ws.send_json({"op": "trade", "args": []})
    assert (await private_ws.recv_json())["code"] == 30003
    await private_ws.connection.send("{not json")
    assert (await private_ws.recv_json())["code"] == 30002


async def test_a_symbol_subscription_only_sees_that_symbol(
    sim: SimExchange, private_ws: PrivateSocket, rest: BitgetRest
) -> None:
    await private_ws.login()
    await private_ws.subscribe(("orders", "BTCUSDT"))
    await private_ws.recv_json()
    eth = await rest.place(symbol="ETHUSDT", size="0.10", price=passive_bid(sim, "ETHUSDT", 500))
    btc = await rest.place(price=passive_bid(sim))
    push = await private_ws.recv_until(is_push("orders"))
    assert push["arg"]["instId"] == "BTCUSDT"
    assert push["data"][0]["orderId"] == btc.json()["data"]["orderId"]
    assert eth.status_code == 200


# Pushes


async def test_resting_order_is_pushed_live_then_canceled(
    sim: SimExchange, subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    price = passive_bid(sim)
    placed = await rest.place(price=price, clientOid="rest-1", marginMode="isolated")
    order_id = placed.json()["data"]["orderId"]
    live = await subscribed.recv_json()
    assert live["action"] == "snapshot" and isinstance(live["ts"], int)
    assert live["arg"] == {"instType": "USDT-FUTURES", "channel": "orders", "instId": "default"}
    (entry,) = live["data"]
    assert set(entry) == ORDER_FIELDS | {"priceAvg"}
    assert all_strings(entry, except_fields=("feeDetail",))
    assert entry["orderId"] == order_id and entry["clientOid"] == "rest-1"
    assert (entry["status"], entry["price"], entry["size"]) == ("live", price, "0.010")
    assert (entry["accBaseVolume"], entry["priceAvg"]) == ("0.000", "0")
    assert (entry["side"], entry["tradeSide"], entry["posSide"]) == ("buy", "buy_single", "net")
    assert (entry["reduceOnly"], entry["marginMode"], entry["force"]) == ("no", "isolated", "gtc")
    assert entry["cancelReason"] == "" and entry["feeDetail"] == [{"feeCoin": "USDT", "fee": "0"}]
    # Positions follow every order change, flat here.
    assert (await subscribed.recv_json())["data"] == []

    await rest.post(
        "/api/v2/mix/order/cancel-order",
        {"symbol": "BTCUSDT", "productType": "USDT-FUTURES", "orderId": order_id},
    )
    canceled = (await subscribed.recv_until(is_order("canceled")))["data"][0]
    assert canceled["cancelReason"] == "normal_cancel" and "priceAvg" not in canceled
    assert canceled["orderId"] == order_id


async def test_marketable_order_pushes_orders_fills_and_the_position(
    sim: SimExchange, subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    placed = await rest.place(orderType="market", size="0.050", price=None, clientOid="taker-1")
    assert placed.status_code == 200, placed.text
    pushes = await subscribed.pushes_until(is_push("positions"))
    orders = [p["data"][0] for p in pushes if is_push("orders")(p)]
    fills = [p["data"][0] for p in pushes if is_push("fill")(p)]
    assert orders[0]["status"] == "live" and orders[-1]["status"] == "filled"
    assert {o["status"] for o in orders[1:-1]} <= {"partially_filled"}
    assert len(fills) == len(orders) - 1 >= 1
    for fill, order in zip(fills, orders[1:], strict=True):
        assert set(fill) == FILL_FIELDS and all_strings(fill, except_fields=("feeDetail",))
        assert set(order) == ORDER_FIELDS | ORDER_FILL_FIELDS | {"priceAvg"}
        assert fill["tradeId"] == order["tradeId"] and fill["price"] == order["fillPrice"]
        assert (fill["tradeScope"], order["tradeScope"]) == ("taker", "T")
        assert (fill["clientOid"], fill["side"], fill["symbol"]) == ("taker-1", "buy", "BTCUSDT")
        (detail,) = fill["feeDetail"]
        assert detail["feeCoin"] == "USDT" and float(detail["totalFee"]) < 0
        assert fill["profit"] == "0"
    assert sum(float(f["baseVolume"]) for f in fills) == pytest.approx(0.05)
    assert orders[-1]["accBaseVolume"] == "0.050" and float(orders[-1]["priceAvg"]) > 0
    (position,) = pushes[-1]["data"]
    assert set(position) == POSITION_FIELDS
    assert all_strings(position, except_fields=("leverage",))
    assert position["leverage"] == 20  # a JSON number on Bitget's positions channel
    assert (position["instId"], position["holdSide"], position["total"]) == (
        "BTCUSDT",
        "long",
        "0.050",
    )
    assert position["available"] == "0.050" and position["frozen"] == "0.000"
    (sim_position,) = sim.positions()
    assert float(position["openPriceAvg"]) == pytest.approx(sim_position.entry_price, abs=0.05)


async def test_close_positions_pushes_the_reduce_only_close_and_a_flat_list(
    subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    await rest.place(orderType="market", price=None)
    await subscribed.pushes_until(is_push("positions"))
    closed = await rest.post(
        "/api/v2/mix/order/close-positions", {"productType": "USDT-FUTURES", "symbol": "BTCUSDT"}
    )
    assert closed.status_code == 200, closed.text
    pushes = await subscribed.pushes_until(is_push("positions"))
    orders = [p["data"][0] for p in pushes if is_push("orders")(p)]
    fills = [p["data"][0] for p in pushes if is_push("fill")(p)]
    assert orders[-1]["status"] == "filled" and orders[-1]["reduceOnly"] == "yes"
    assert orders[-1]["side"] == "sell" and orders[-1]["orderType"] == "market"
    assert all(f["side"] == "sell" for f in fills) and fills
    realized = sum(float(f["profit"]) for f in fills)
    assert float(orders[-1]["totalProfits"]) == pytest.approx(realized, abs=1e-8)
    assert pushes[-1]["data"] == []


async def test_cancel_all_pushes_every_canceled_order(
    sim: SimExchange, subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    ids = set()
    for ticks in (3000, 3010, 3020):
        ids.add((await rest.place(price=passive_bid(sim, ticks=ticks))).json()["data"]["orderId"])
    await rest.post("/api/v2/mix/order/cancel-all-orders", {"productType": "USDT-FUTURES"})
    canceled: set[str] = set()
    while canceled != ids:
        entry = (await subscribed.recv_until(is_order("canceled")))["data"][0]
        canceled.add(entry["orderId"])
    assert sim.open_orders() == []


async def test_resting_order_filled_by_the_market_is_pushed_as_maker(
    sim: SimExchange, subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    price = passive_bid(sim)
    order_id = (await rest.place(price=price)).json()["data"]["orderId"]
    await subscribed.pushes_until(is_push("positions"))
    # A print through our bid fills the whole order at its price (engine/market/matching.py).
    engine = sim.engine("BTCUSDT")
    engine.on_trade(float(price) - engine.instrument.tick_size, 1.0, OrderSide.SELL, sim.now_ms())
    pushes = await subscribed.pushes_until(is_push("positions"))
    order = next(p["data"][0] for p in pushes if is_order("filled")(p))
    fill = next(p["data"][0] for p in pushes if is_push("fill")(p))
    assert order["orderId"] == fill["orderId"] == order_id
    assert (order["tradeScope"], fill["tradeScope"]) == ("M", "maker")
    assert fill["price"] == price and pushes[-1]["data"][0]["total"] == "0.010"


async def test_unsubscribed_channels_stop_pushing(
    sim: SimExchange, subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    await subscribed.subscribe(("orders", "default"), op="unsubscribe")
    assert (await subscribed.recv_json())["event"] == "unsubscribe"
    await rest.place(price=passive_bid(sim))
    # Only the positions push arrives now.
    push = await subscribed.recv_until(lambda m: "action" in m)
    assert push["arg"]["channel"] == "positions"


# Faults


async def test_disconnect_fault_drops_private_connections(
    sim: SimExchange, subscribed: PrivateSocket
) -> None:
    sim.faults.disconnect()
    with pytest.raises(websockets.ConnectionClosed) as closed:
        async with asyncio.timeout(WAIT_S):
            while True:
                await subscribed.connection.recv()
    assert closed.value.rcvd is None  # dropped without a close frame (1006)
    async with websockets.connect(sim.private_ws_url) as connection:
        assert (await PrivateSocket(sim, connection).login())["code"] == 0


async def test_silence_loses_private_pushes(
    sim: SimExchange, subscribed: PrivateSocket, rest: BitgetRest
) -> None:
    sim.faults.silence(30.0)
    lost = (await rest.place(price=passive_bid(sim))).json()["data"]["orderId"]
    await subscribed.connection.send("ping")
    assert await asyncio.wait_for(subscribed.connection.recv(), WAIT_S) == "pong"
    sim.faults.clear()
    kept = (await rest.place(price=passive_bid(sim, ticks=3010))).json()["data"]["orderId"]
    push = await subscribed.recv_until(is_push("orders"))
    assert push["data"][0]["orderId"] == kept != lost
