"""BitgetPrivateFeed against the real simulated exchange, and a scripted loopback server for
what the simulator never sends (garbage, refused channels, missing pongs)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from support.waiting import eventually, most_per_loop_turn
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from engine.bitget.credentials import Credentials
from engine.bitget.endpoints import BITGET_DEMO_PRIVATE_URL, BITGET_PRIVATE_URL
from engine.bitget.orders import OrderSide, OrderStatus
from engine.bitget.private_events import (
    FillUpdate,
    OrderUpdate,
    PositionEntry,
    PositionsUpdate,
    PrivateEvent,
    PrivateStreamChanged,
    PrivateStreamState,
)
from engine.bitget.private_ws import (
    BitgetPrivateFeed,
    BitgetPrivateFeedConfig,
    MalformedEntry,
    RejectReason,
    parse_fill_update,
    parse_order_update,
)
from engine.bitget.rest import BitgetRestClient
from engine.sim.server import SimExchange

StartClient = Callable[..., Awaitable[BitgetRestClient]]
WAIT_S = 5.0
FAST: dict[str, Any] = {
    "backoff_initial_s": 0.01,
    "backoff_max_s": 0.05,
    "open_timeout_s": 2.0,
    "close_timeout_s": 0.5,
}
"""Loopback-sized timings: reconnects within tens of ms; pings stay at 25 s unless a test
shortens them."""
SCRIPTED_CREDENTIALS = Credentials("bg_key_scripted", "bitget_secret", "pass-phrase-77")
ORDERS = {"instType": "USDT-FUTURES", "channel": "orders", "instId": "default"}
FILL = {"instType": "USDT-FUTURES", "channel": "fill", "instId": "default"}
POSITIONS = {"instType": "USDT-FUTURES", "channel": "positions", "instId": "default"}


class Recorder:
    """The feed's sink: keeps every event; `raise_on` makes it fail for one event type."""

    def __init__(self) -> None:
        self.events: list[PrivateEvent] = []
        self.raise_on: type | None = None

    def __call__(self, event: PrivateEvent) -> None:
        self.events.append(event)
        if self.raise_on is not None and isinstance(event, self.raise_on):
            raise RuntimeError("sink bug")

    def of(self, kind: type) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    def states(self) -> list[PrivateStreamState]:
        return [event.state for event in self.of(PrivateStreamChanged)]


class ScriptedPrivateServer:
    """A Bitget-like private websocket on 127.0.0.1: answers login with `login_answer` (None:
    never), acks subscriptions except `refused_channels`, answers pings while `answer_pings`,
    records client messages and pushes whatever a test hands it."""

    def __init__(self) -> None:
        self.login_answer: dict[str, Any] | None = {"event": "login", "code": 0}
        self.refused_channels: set[str] = set()
        self.answer_pings = True
        self.messages: list[str | bytes] = []
        self.connections: set[ServerConnection] = set()
        self.accepted = 0
        self._server: Server | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"ws://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v2/ws/private"

    async def start(self) -> None:
        self._server = await serve(self._handle, "127.0.0.1", 0, ping_interval=None)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    def requests(self, op: str) -> list[dict[str, Any]]:
        parsed = [orjson.loads(m) for m in self.messages if m != "ping"]
        return [request for request in parsed if request.get("op") == op]

    async def push(self, *frames: object) -> None:
        """Send each frame (bytes as is, anything else as JSON) to every client."""
        for connection in list(self.connections):
            for frame in frames:
                data = frame if isinstance(frame, bytes) else orjson.dumps(frame)
                await connection.send(data, text=True)

    async def _handle(self, connection: ServerConnection) -> None:
        self.accepted += 1
        self.connections.add(connection)
        try:
            async for message in connection:
                self.messages.append(message)
                await self._answer(connection, message)
        except ConnectionClosed:
            return
        finally:
            self.connections.discard(connection)

    async def _answer(self, connection: ServerConnection, message: str | bytes) -> None:
        if message == "ping":
            if self.answer_pings:
                await connection.send("pong")
            return
        request = orjson.loads(message)
        if request["op"] == "login":
            if self.login_answer is not None:
                await connection.send(orjson.dumps(self.login_answer).decode())
            return
        for arg in request["args"]:
            if arg["channel"] in self.refused_channels:
                error = {"event": "error", "arg": arg, "code": 30016, "msg": "Param error"}
                await connection.send(orjson.dumps(error).decode())
            else:
                await connection.send(orjson.dumps({"event": "subscribe", "arg": arg}).decode())


@pytest.fixture
async def scripted_ws() -> AsyncIterator[ScriptedPrivateServer]:
    server = ScriptedPrivateServer()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def start_feed() -> AsyncIterator[Callable[..., Awaitable[BitgetPrivateFeed]]]:
    """Start feeds: `start_feed(url, credentials, sink, clock=..., **config)`; all stopped after."""
    feeds: list[BitgetPrivateFeed] = []

    async def start(
        url: str,
        credentials: Credentials,
        sink: Recorder,
        clock: Callable[[], int] = time.time_ns,
        exchange_offset_ms: Callable[[], int] = lambda: 0,
        **overrides: Any,
    ) -> BitgetPrivateFeed:
        config = BitgetPrivateFeedConfig(url=url, **{**FAST, **overrides})
        feed = BitgetPrivateFeed(
            config, credentials, sink, clock, exchange_offset_ms=exchange_offset_ms
        )
        feeds.append(feed)
        await feed.start()
        return feed

    yield start
    for feed in feeds:
        await feed.stop()


@pytest.fixture
async def live_on_sim(
    sim: SimExchange, start_feed: Callable[..., Awaitable[BitgetPrivateFeed]]
) -> tuple[BitgetPrivateFeed, Recorder]:
    sink = Recorder()
    feed = await start_feed(sim.private_ws_url, sim_credentials(sim), sink)
    await eventually(lambda: sink.of(PositionsUpdate), what="LIVE and the positions snapshot")
    return feed, sink


def sim_credentials(sim: SimExchange) -> Credentials:
    config = sim.config
    return config.credentials()


def passive_bid(sim: SimExchange) -> str:
    assert sim.market is not None
    return f"{sim.market.book('BTCUSDT', 1).best_bid - 300.0:.1f}"


def order_entry(**fields: object) -> dict[str, object]:
    """An `orders` push entry as Bitget sends it (bitget-v2.md §7), with overrides."""
    entry: dict[str, object] = {
        "orderId": "1300000000000000042",
        "clientOid": "hc-test-1",
        "instId": "BTCUSDT",
        "price": "63000.0",
        "size": "0.010",
        "side": "buy",
        "tradeSide": "buy_single",
        "posSide": "net",
        "posMode": "one_way_mode",
        "orderType": "limit",
        "force": "gtc",
        "status": "live",
        "accBaseVolume": "0",
        "priceAvg": "0",
        "leverage": "20",
        "marginMode": "crossed",
        "marginCoin": "USDT",
        "reduceOnly": "no",
        "cancelReason": "",
        "feeDetail": [{"feeCoin": "USDT", "fee": "0"}],
        "cTime": "1726000000000",
        "uTime": "1726000000000",
    }
    entry.update(fields)
    return {key: value for key, value in entry.items() if value is not None}


def fill_entry(**fields: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "orderId": "111",
        "clientOid": "111",
        "tradeId": "222",
        "symbol": "BTCUSDT",
        "side": "buy",
        "orderType": "market",
        "posMode": "one_way_mode",
        "price": "51000.5",
        "baseVolume": "0.01",
        "quoteVolume": "510.005",
        "profit": "0",
        "tradeSide": "buy_single",
        "tradeScope": "taker",
        "feeDetail": [
            {"feeCoin": "USDT", "deduction": "no", "totalDeductionFee": "0", "totalFee": "-0.3"}
        ],
        "cTime": "1703577336606",
        "uTime": "1703577336606",
    }
    entry.update(fields)
    return {key: value for key, value in entry.items() if value is not None}


def position_entry(**fields: object) -> dict[str, object]:
    entry: dict[str, object] = {
        "posId": "1",
        "instId": "ETHUSDT",
        "marginCoin": "USDT",
        "holdSide": "short",
        "posMode": "one_way_mode",
        "total": "0.10",
        "available": "0.10",
        "frozen": "0",
        "openPriceAvg": "1900",
        "leverage": 20,
        "unrealizedPL": "-1.5",
        "markPrice": "1915",
        "cTime": "1695649246169",
        "uTime": "1695711602568",
    }
    entry.update(fields)
    return {key: value for key, value in entry.items() if value is not None}


def push(arg: dict[str, str], data: object, ts: object = 1726000000100) -> dict[str, object]:
    return {"action": "snapshot", "arg": arg, "data": data, "ts": ts}


# Configuration


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"url": "https://ws.bitget.com/v2/ws/private"}, "ws:// or wss://"),
        ({"inst_type": ""}, "inst_type"),
        ({"ping_interval_s": 0.0}, "ping_interval_s"),
        ({"pong_timeout_s": float("nan")}, "pong_timeout_s"),
        ({"login_timeout_s": -1.0}, "login_timeout_s"),
        ({"subscribe_timeout_s": 0.0}, "subscribe_timeout_s"),
        ({"open_timeout_s": float("inf")}, "open_timeout_s"),
        ({"backoff_initial_s": 2.0, "backoff_max_s": 1.0}, "backoff_max_s"),
        ({"backoff_reset_after_s": float("inf")}, "backoff_reset_after_s"),
        ({"max_reconnect_attempts": -1}, "max_reconnect_attempts"),
        ({"max_client_messages_per_s": 0}, "max_client_messages_per_s"),
        ({"max_frame_bytes": 10}, "max_frame_bytes"),
    ],
)
def test_config_rejects_bad_values_with_a_clear_message(overrides, message):
    with pytest.raises(ValueError, match=message):
        BitgetPrivateFeedConfig(**overrides)


def test_config_defaults_are_bitget_live_with_a_25_s_ping():
    config = BitgetPrivateFeedConfig()
    assert config.url == BITGET_PRIVATE_URL == "wss://ws.bitget.com/v2/ws/private"
    assert BITGET_DEMO_PRIVATE_URL == "wss://wspap.bitget.com/v2/ws/private"
    assert config.ping_interval_s == 25.0 and config.inst_type == "USDT-FUTURES"


# Login and subscription, on the wire


@pytest.mark.parametrize(("offset_ms", "timestamp"), [(0, "1627366780"), (-20_000, "1627366760")])
async def test_login_is_signed_like_the_documented_vector_then_all_channels_subscribed(
    scripted_ws: ScriptedPrivateServer, start_feed, offset_ms: int, timestamp: str
) -> None:
    # bitget-v2.md §5: secret bitget_secret, "1627366780GET/user/verify" -> wkpF...gk=
    clock = lambda: 1_627_366_780_545_000_000  # noqa: E731
    sink = Recorder()
    feed = await start_feed(
        scripted_ws.url, SCRIPTED_CREDENTIALS, sink, clock, exchange_offset_ms=lambda: offset_ms
    )
    await eventually(lambda: feed.state is PrivateStreamState.LIVE, what="LIVE")
    (login,) = scripted_ws.requests("login")
    (subscribe,) = scripted_ws.requests("subscribe")
    assert login["args"][0]["timestamp"] == timestamp
    if offset_ms == 0:
        assert login == {
            "op": "login",
            "args": [
                {
                    "apiKey": "bg_key_scripted",
                    "passphrase": "pass-phrase-77",
                    "timestamp": "1627366780",
                    "sign": "wkpFPOpOKjCcS621EFt1DuFfySEUvOuzkTtcC3g95gk=",
                }
            ],
        }
    assert subscribe == {"op": "subscribe", "args": [ORDERS, FILL, POSITIONS]}
    assert sink.states() == [PrivateStreamState.CONNECTING, PrivateStreamState.LIVE]
    assert feed.stats.logins == 1 and feed.stats.messages_sent == 2


# Against the simulated exchange


async def test_login_on_the_sim_goes_live_with_the_positions_snapshot(
    live_on_sim: tuple[BitgetPrivateFeed, Recorder],
) -> None:
    feed, sink = live_on_sim
    assert sink.states() == [PrivateStreamState.CONNECTING, PrivateStreamState.LIVE]
    assert [type(event) for event in sink.events] == [
        PrivateStreamChanged,
        PrivateStreamChanged,
        PositionsUpdate,
    ]
    assert sink.of(PositionsUpdate)[0].positions == ()
    assert feed.state is PrivateStreamState.LIVE and feed.stats.rejected == {}


@pytest.mark.parametrize(
    ("credentials", "skew_s", "code"),
    [
        (lambda c: Credentials(c.api_key, "not-the-secret", c.passphrase), 0, "30015"),
        (lambda c: Credentials(c.api_key, c.api_secret, "not-the-passphrase"), 0, "30012"),
        (lambda c: Credentials("bg_unknown_key", c.api_secret, c.passphrase), 0, "30011"),
        (lambda c: c, -45, "30014"),
    ],
    ids=["bad-signature", "wrong-passphrase", "unknown-key", "stale-timestamp"],
)
async def test_refused_login_fails_once_without_retrying(
    sim: SimExchange, start_feed, credentials, skew_s: int, code: str
) -> None:
    used = credentials(sim_credentials(sim))
    sink = Recorder()
    clock = lambda: time.time_ns() + skew_s * 1_000_000_000  # noqa: E731
    feed = await start_feed(sim.private_ws_url, used, sink, clock)
    await eventually(lambda: feed.state is PrivateStreamState.FAILED, what="FAILED")
    await asyncio.sleep(0.2)  # ten backoff ceilings: a retry would have connected by now
    assert sink.states() == [PrivateStreamState.CONNECTING, PrivateStreamState.FAILED]
    failed = sink.of(PrivateStreamChanged)[-1]
    assert failed.reason.startswith(f"login refused: {code}:")
    stats = feed.stats
    assert stats.connects == 1 and stats.reconnects == 0 and stats.logins == 0
    shown = " ".join([failed.reason, repr(feed), repr(stats), repr(used)])
    for secret in (*used.secrets, *sim_credentials(sim).secrets):
        assert secret not in shown


async def test_order_lifecycle_reaches_the_sink(
    sim: SimExchange,
    live_on_sim: tuple[BitgetPrivateFeed, Recorder],
    client: BitgetRestClient,
) -> None:
    feed, sink = live_on_sim
    price = passive_bid(sim)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price=price, client_oid="life-1")
    await eventually(lambda: sink.of(OrderUpdate), what="the live OrderUpdate")
    (live,) = sink.of(OrderUpdate)
    assert live == OrderUpdate(
        symbol="BTCUSDT",
        order_id=ack.order_id,
        client_oid="life-1",
        side=OrderSide.BUY,
        price=float(price),
        size=0.01,
        filled_size=0.0,
        average_price=None,
        status=OrderStatus.LIVE,
        reduce_only=False,
        updated_ms=live.updated_ms,
        recv_ns=live.recv_ns,
        cancel_reason="",
    )
    assert abs(live.updated_ms - sim.now_ms()) < 5_000 and live.recv_ns > 0
    await client.cancel_order("BTCUSDT", client_oid="life-1")
    await eventually(lambda: len(sink.of(OrderUpdate)) == 2, what="the canceled OrderUpdate")
    canceled = sink.of(OrderUpdate)[-1]
    assert canceled.status is OrderStatus.CANCELED and canceled.status.terminal
    assert canceled.cancel_reason == "normal_cancel" and canceled.order_id == ack.order_id
    assert feed.stats.order_updates == 2 and feed.stats.rejected == {}


async def test_fills_orders_and_positions_from_a_marketable_order_then_a_flash_close(
    sim: SimExchange,
    live_on_sim: tuple[BitgetPrivateFeed, Recorder],
    client: BitgetRestClient,
) -> None:
    feed, sink = live_on_sim
    ack = await client.place_order("BTCUSDT", "buy", "0.050", order_type="market")
    await eventually(lambda: len(sink.of(PositionsUpdate)) >= 2, what="the position after the fill")
    fills: list[FillUpdate] = sink.of(FillUpdate)
    assert fills and all(f.order_id == ack.order_id and not f.maker for f in fills)
    assert sum(f.size for f in fills) == pytest.approx(0.05)
    assert all(f.fee > 0 and f.side is OrderSide.BUY for f in fills)
    assert len({f.trade_id for f in fills}) == len(fills)
    filled = sink.of(OrderUpdate)[-1]
    assert filled.status is OrderStatus.FILLED and filled.filled_size == pytest.approx(0.05)
    assert filled.price is None and filled.average_price == pytest.approx(
        sum(f.price * f.size for f in fills) / 0.05, abs=0.05
    )
    (position,) = sink.of(PositionsUpdate)[-1].positions
    (sim_position,) = sim.positions()
    assert position.symbol == "BTCUSDT" and position.size == pytest.approx(0.05)
    assert position.entry_price == pytest.approx(sim_position.entry_price, abs=0.05)
    assert position.mark_price is not None and position.mark_price > 0

    seen = len(sink.events)
    closed = await client.close_positions("BTCUSDT")
    assert closed.succeeded
    await eventually(
        lambda: any(isinstance(e, PositionsUpdate) for e in sink.events[seen:]),
        what="flat positions",
    )
    after = sink.events[seen:]
    close_order = [e for e in after if isinstance(e, OrderUpdate)][-1]
    assert close_order.reduce_only and close_order.side is OrderSide.SELL
    assert close_order.status is OrderStatus.FILLED
    assert [e for e in after if isinstance(e, PositionsUpdate)][-1].positions == ()
    assert feed.stats.fill_updates == len(sink.of(FillUpdate)) and feed.stats.rejected == {}


async def test_disconnect_fault_reconnects_relogs_and_resubscribes(
    sim: SimExchange,
    live_on_sim: tuple[BitgetPrivateFeed, Recorder],
    client: BitgetRestClient,
) -> None:
    feed, sink = live_on_sim
    sim.faults.disconnect()
    await eventually(lambda: len(sink.states()) == 4, what="RECONNECTING, then LIVE again")
    assert sink.states() == [
        PrivateStreamState.CONNECTING,
        PrivateStreamState.LIVE,
        PrivateStreamState.RECONNECTING,
        PrivateStreamState.LIVE,
    ]
    lost, back = sink.of(PrivateStreamChanged)[2:]
    assert "connection lost without a close frame" in lost.reason and "retry in" in lost.reason
    assert "reconcile" in back.reason
    stats = feed.stats
    assert (stats.connects, stats.reconnects, stats.logins) == (2, 1, 2)
    ack = await client.place_order("BTCUSDT", "buy", "0.010", price=passive_bid(sim))
    await eventually(
        lambda: any(u.order_id == ack.order_id for u in sink.of(OrderUpdate)),
        what="an order pushed on the new connection",
    )


async def test_stop_moves_to_stopped_and_a_feed_starts_only_once(
    live_on_sim: tuple[BitgetPrivateFeed, Recorder],
) -> None:
    feed, sink = live_on_sim
    await feed.stop()
    assert feed.state is PrivateStreamState.STOPPED and sink.states()[-1] is feed.state
    with pytest.raises(RuntimeError, match="only once"):
        await feed.start()


# What a real exchange (or the network) might send: scripted


async def test_malformed_and_unexpected_frames_are_counted_not_raised(
    scripted_ws: ScriptedPrivateServer, start_feed
) -> None:
    sink = Recorder()
    feed = await start_feed(scripted_ws.url, SCRIPTED_CREDENTIALS, sink)
    await eventually(lambda: feed.state is PrivateStreamState.LIVE, what="LIVE")
    await scripted_ws.push(
        b"<html>502 Bad Gateway</html>",
        b'{"action":"snapshot","arg":',
        [1, 2],
        {"hello": "world"},
        {"event": "dance"},
        {"event": "subscribe", "arg": {"channel": "account"}},
        push({"instType": "USDT-FUTURES", "channel": "account"}, []),
        push(ORDERS, {"orderId": "1"}),
        push(
            ORDERS,
            [
                order_entry(size=None),
                order_entry(size="-0.01"),
                order_entry(price="NaN"),
                order_entry(status="open"),
                order_entry(side="long"),
                order_entry(reduceOnly=True),
                order_entry(accBaseVolume="0.02"),
                order_entry(uTime="soon"),
                "not an entry",
            ],
        ),
        push(FILL, [fill_entry(feeDetail=None), fill_entry(tradeScope="x"), fill_entry(price="0")]),
        push(POSITIONS, [position_entry(), position_entry(instId="BTCUSDT", total="1e999")]),
        push(POSITIONS, [position_entry()], ts="1726000000100"),
        # Then good ones: still delivered.
        push(ORDERS, [order_entry(orderId="ok-1")]),
    )
    await eventually(lambda: feed.stats.order_updates == 1, what="the good order")
    stats = feed.stats
    assert stats.rejected == {
        RejectReason.NOT_JSON: 2,
        RejectReason.NOT_AN_OBJECT: 1,
        RejectReason.UNKNOWN_EVENT: 2,
        RejectReason.UNEXPECTED_EVENT: 1,
        RejectReason.UNKNOWN_CHANNEL: 1,
        RejectReason.NO_DATA: 1,
        RejectReason.BAD_ORDER: 9,
        RejectReason.BAD_FILL: 3,
        RejectReason.BAD_POSITIONS: 2,
    }
    assert stats.last_rejection.startswith("bad_positions: positions: envelope ts")
    assert [u.order_id for u in sink.of(OrderUpdate)] == ["ok-1"]
    assert sink.of(FillUpdate) == [] and feed.state is PrivateStreamState.LIVE
    # A positions push with one bad entry is dropped whole: a partial list would read as flat.
    assert sink.of(PositionsUpdate) == []
    assert stats.internal_errors == 0 and stats.handler_errors == 0


async def test_good_entries_become_events_with_bitget_conventions(
    scripted_ws: ScriptedPrivateServer, start_feed
) -> None:
    sink = Recorder()
    feed = await start_feed(scripted_ws.url, SCRIPTED_CREDENTIALS, sink)
    await eventually(lambda: feed.state is PrivateStreamState.LIVE, what="LIVE")
    await scripted_ws.push(
        push(
            ORDERS,
            [
                order_entry(
                    orderType="market",
                    price="0",
                    status="filled",
                    accBaseVolume="0.010",
                    priceAvg="63010.5",
                    reduceOnly="YES",
                ),
                order_entry(status="canceled", priceAvg=None, cancelReason="normal_cancel"),
            ],
        ),
        push(
            FILL,
            [
                fill_entry(),
                fill_entry(
                    tradeId="223",
                    tradeScope="maker",
                    feeDetail=[{"feeCoin": "USDT", "totalFee": "0.02"}],
                ),
            ],
        ),
        push(
            POSITIONS,
            [
                position_entry(),
                position_entry(instId="BTCUSDT", holdSide="long", total="0.5", markPrice=""),
                position_entry(instId="XRPUSDT", total="0"),
            ],
        ),
    )
    await eventually(lambda: sink.of(PositionsUpdate), what="the positions")
    market, canceled = sink.of(OrderUpdate)
    assert market.price is None and market.average_price == 63010.5 and market.reduce_only
    assert market.status is OrderStatus.FILLED and market.filled_size == 0.01
    assert canceled.average_price is None and canceled.cancel_reason == "normal_cancel"
    taker, maker = sink.of(FillUpdate)
    assert (taker.fee, taker.maker, taker.filled_ms) == (0.3, False, 1703577336606)
    assert (maker.fee, maker.maker) == (-0.02, True)  # a rebate
    (positions,) = sink.of(PositionsUpdate)
    assert positions.updated_ms == 1726000000100
    assert positions.positions == (
        PositionEntry("ETHUSDT", -0.1, 1900.0, 1915.0, -1.5),
        PositionEntry("BTCUSDT", 0.5, 1900.0, None, -1.5),
    )


async def test_a_failing_sink_is_counted_and_the_stream_goes_on(
    scripted_ws: ScriptedPrivateServer, start_feed
) -> None:
    sink = Recorder()
    sink.raise_on = OrderUpdate
    feed = await start_feed(scripted_ws.url, SCRIPTED_CREDENTIALS, sink)
    await eventually(lambda: feed.state is PrivateStreamState.LIVE, what="LIVE")
    await scripted_ws.push(push(ORDERS, [order_entry()]), push(FILL, [fill_entry()]))
    await eventually(lambda: sink.of(FillUpdate), what="the fill after the failing order")
    stats = feed.stats
    assert stats.handler_errors == 1 and stats.last_handler_error == "RuntimeError: sink bug"
    assert feed.state is PrivateStreamState.LIVE


async def test_a_burst_of_pushes_lets_the_loop_run_between_them(
    scripted_ws: ScriptedPrivateServer, start_feed
) -> None:
    """A kill's cancels, fills and positions arrive at once: read one by one from the buffer,
    they would hold the loop (and the kill's own answers) for the whole burst."""
    sink = Recorder()
    feed = await start_feed(scripted_ws.url, SCRIPTED_CREDENTIALS, sink)
    await eventually(lambda: feed.state is PrivateStreamState.LIVE, what="LIVE")
    watching = asyncio.ensure_future(most_per_loop_turn(lambda: len(sink.of(OrderUpdate)), 30))
    await scripted_ws.push(
        *(push(ORDERS, [order_entry(clientOid=f"burst-{k}")]) for k in range(30))
    )
    most = await asyncio.wait_for(watching, 10)
    assert most <= 2, f"{most} pushes handled without the loop running between"


async def test_refused_channel_fails_and_login_errors_never_leak_secrets(
    scripted_ws: ScriptedPrivateServer, start_feed
) -> None:
    scripted_ws.refused_channels = {"fill"}
    sink = Recorder()
    feed = await start_feed(scripted_ws.url, SCRIPTED_CREDENTIALS, sink)
    await eventually(lambda: feed.state is PrivateStreamState.FAILED, what="FAILED")
    assert sink.of(PrivateStreamChanged)[-1].reason.startswith(
        "the exchange refused the fill channel: 30016:"
    )
    # A login error whose text echoes the credentials: kept redacted.
    scripted_ws.login_answer = {
        "event": "error",
        "code": 30005,
        "msg": f"bad login {SCRIPTED_CREDENTIALS.api_secret} {SCRIPTED_CREDENTIALS.passphrase}",
    }
    sink = Recorder()
    feed = await start_feed(scripted_ws.url, SCRIPTED_CREDENTIALS, sink)
    await eventually(lambda: feed.state is PrivateStreamState.FAILED, what="FAILED")
    reason = sink.of(PrivateStreamChanged)[-1].reason
    assert reason.startswith("login refused: 30005:") and "<redacted>" in reason
    shown = reason + repr(feed.stats)
    for secret in SCRIPTED_CREDENTIALS.secrets:
        assert secret not in shown


async def test_missing_pong_or_login_answer_reconnects_with_backoff(
    scripted_ws: ScriptedPrivateServer, start_feed
) -> None:
    scripted_ws.answer_pings = False
    sink = Recorder()
    feed = await start_feed(
        scripted_ws.url,
        SCRIPTED_CREDENTIALS,
        sink,
        ping_interval_s=0.05,
        pong_timeout_s=0.05,
        login_timeout_s=0.1,
    )
    await eventually(lambda: feed.stats.pong_timeouts >= 1, what="a pong timeout")
    await eventually(lambda: PrivateStreamState.RECONNECTING in sink.states(), what="RECONNECTING")
    assert "no pong within 0.05 s" in sink.of(PrivateStreamChanged)[2].reason
    # From here no session logs in. Pings stay unanswered until a session has started since,
    # so one that logged in just before is ended by its pongs rather than staying LIVE; with
    # pings answered again, sessions end only at the login timeout.
    scripted_ws.login_answer = None
    connects = feed.stats.connects
    await eventually(
        lambda: feed.stats.connects > connects, what="a session without a login answer"
    )
    scripted_ws.answer_pings = True
    await eventually(
        lambda: "no login answer" in feed.stats.last_disconnect, what="a login timeout"
    )
    scripted_ws.login_answer = {"event": "login", "code": "0", "msg": ""}
    await eventually(lambda: feed.state is PrivateStreamState.LIVE, what="LIVE again")
    await eventually(lambda: feed.stats.pongs >= 1, what="a pong on the new session")
    assert feed.stats.last_pong_latency_ms is not None


async def test_gives_up_after_max_reconnect_attempts(start_feed) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = Recorder()
    feed = await start_feed(
        f"ws://127.0.0.1:{port}/v2/ws/private",
        SCRIPTED_CREDENTIALS,
        sink,
        max_reconnect_attempts=3,
    )
    await eventually(lambda: feed.state is PrivateStreamState.FAILED, what="FAILED")
    assert sink.states() == [
        PrivateStreamState.CONNECTING,
        PrivateStreamState.RECONNECTING,
        PrivateStreamState.FAILED,
    ]
    assert sink.of(PrivateStreamChanged)[-1].reason.startswith(
        "gave up after 3 consecutive connection failures; last: connect failed:"
    )
    assert feed.stats.connect_failures == 3


# Entry parsing edge cases


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"instId": ""}, "instId is empty"),
        ({"status": "filled"}, "status filled with accBaseVolume 0"),
        ({"priceAvg": "-1"}, "priceAvg '-1' must be >= 0"),
        ({"uTime": "1" * 17}, "too long"),
        ({"size": "1_000"}, "is not a number"),
        ({"size": True}, "is not a number"),
    ],
)
def test_order_entry_errors_name_the_field(fields: dict[str, object], message: str) -> None:
    with pytest.raises(MalformedEntry, match=message):
        parse_order_update(order_entry(**fields), 1)


def test_fill_fee_sums_every_fee_detail_and_accepts_json_numbers() -> None:
    fill = parse_fill_update(
        fill_entry(
            price=51000.5,
            cTime=1703577336606,
            feeDetail=[{"totalFee": "-0.25"}, {"totalFee": -0.05}],
        ),
        7,
    )
    assert (fill.price, fill.fee, fill.filled_ms, fill.recv_ns) == (51000.5, 0.3, 1703577336606, 7)
    assert parse_fill_update(fill_entry(feeDetail=[]), 1).fee == 0.0


def test_fill_fees_summing_to_infinity_are_malformed() -> None:
    """Found by tests/fuzz: two finite fees of -1e308 summed to an infinite fee."""
    entry = fill_entry(feeDetail=[{"totalFee": "-1e308"}, {"totalFee": "-1e308"}])
    with pytest.raises(MalformedEntry, match="infinite fee"):
        parse_fill_update(entry, 1)


def test_an_entry_nested_too_deep_to_show_is_malformed_not_raised() -> None:
    """Found by tests/fuzz: repr of a 999-deep entry raised RecursionError, which ended the
    private session as an internal error."""
    entry = orjson.loads(b"[" * 999 + b"]" * 999)
    with pytest.raises(MalformedEntry, match="nested too deep"):
        parse_order_update(entry, 1)
