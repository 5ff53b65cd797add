"""The sim's public websocket, driven by a real `websockets` client."""

from __future__ import annotations

import asyncio
import itertools
import statistics
from collections.abc import Awaitable, Callable

import pytest
import websockets
from sim_clients import BOOK_INTERVAL_MS, WAIT_S, PublicSocket, is_push

from engine.bitget.checksum import book_checksum
from engine.sim.server import SimExchange

ARG_BOOKS = {"instType": "USDT-FUTURES", "channel": "books", "instId": "BTCUSDT"}


async def test_subscribe_is_acked_per_arg(public_ws: PublicSocket) -> None:
    await public_ws.subscribe(("books5", "BTCUSDT"), ("books1", "ETHUSDT"))
    first = await public_ws.recv_until(lambda m: "event" in m)
    second = await public_ws.recv_until(lambda m: "event" in m)
    assert first == {
        "event": "subscribe",
        "arg": {"instType": "USDT-FUTURES", "channel": "books5", "instId": "BTCUSDT"},
    }
    assert second["arg"]["instId"] == "ETHUSDT" and second["event"] == "subscribe"


async def test_unknown_symbol_gets_30001(public_ws: PublicSocket) -> None:
    await public_ws.subscribe(("books15", "NOPEUSDT"))
    error = await public_ws.recv_json()
    assert error == {
        "event": "error",
        "arg": {"instType": "USDT-FUTURES", "channel": "books15", "instId": "NOPEUSDT"},
        "code": 30001,
        "msg": "instType:USDT-FUTURES,channel:books15,instId:NOPEUSDT doesn't exist",
        "op": "subscribe",
    }


async def test_unknown_channel_gets_30016(public_ws: PublicSocket) -> None:
    await public_ws.subscribe(("books50", "BTCUSDT"))
    error = await public_ws.recv_json()
    assert error["event"] == "error" and error["code"] == 30016 and error["msg"] == "Param error"


async def test_bad_json_and_unknown_op_get_errors(public_ws: PublicSocket) -> None:
    await public_ws.connection.send("{not json")
    assert (await public_ws.recv_json())["code"] == 30002
    await public_ws.send_json({"op": "dance", "args": []})
    error = await public_ws.recv_json()
    assert error["code"] == 30003 and error["op"] == "dance"
    await public_ws.send_json({"op": "subscribe", "args": "books"})
    assert (await public_ws.recv_json())["code"] == 30016
    await public_ws.send_json({"op": "subscribe", "args": [42]})
    assert (await public_ws.recv_json())["code"] == 30016
    await public_ws.connection.send(b"\x00binary")
    assert (await public_ws.recv_json())["code"] == 30002


async def test_wrong_inst_type_is_acked_then_silent(public_ws: PublicSocket) -> None:
    await public_ws.send_json(
        {
            "op": "subscribe",
            "args": [{"instType": "SPOT", "channel": "books1", "instId": "BTCUSDT"}],
        }
    )
    ack = await public_ws.recv_json()
    assert ack["event"] == "subscribe" and ack["arg"]["instType"] == "SPOT"
    await public_ws.subscribe(("books1", "ETHUSDT"))
    # Several pushes of the other subscription go by without any for the SPOT one.
    for _ in range(5):
        push = await public_ws.recv_until(lambda m: "action" in m)
        assert push["arg"]["instId"] == "ETHUSDT"
    # Unsubscribing under the wrong instType leaves the real subscription alone.
    await public_ws.send_json(
        {
            "op": "unsubscribe",
            "args": [{"instType": "SPOT", "channel": "books1", "instId": "ETHUSDT"}],
        }
    )
    await public_ws.recv_until(lambda m: m.get("event") == "unsubscribe")
    push = await public_ws.recv_until(lambda m: "action" in m)
    assert push["arg"]["instId"] == "ETHUSDT"


async def test_text_ping_gets_text_pong(public_ws: PublicSocket) -> None:
    await public_ws.connection.send("ping")
    assert await public_ws.recv_text() == "pong"


async def test_more_than_ten_messages_in_a_second_closes_the_connection(
    public_ws: PublicSocket,
) -> None:
    for _ in range(11):
        await public_ws.connection.send("ping")
    pongs = 0
    with pytest.raises(websockets.ConnectionClosed) as closed:
        while True:
            pongs += await public_ws.recv_text() == "pong"
    assert pongs == 10
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008


async def test_books15_pushes_valid_snapshots_at_the_configured_interval(
    public_ws: PublicSocket,
) -> None:
    await public_ws.subscribe(("books15", "BTCUSDT"))
    stamps = []
    seqs = []
    for _ in range(8):
        frame = await public_ws.recv_until(is_push("books15"))
        assert frame["action"] == "snapshot"
        assert isinstance(frame["ts"], int)
        (data,) = frame["data"]
        bids = [(float(p), float(s)) for p, s in data["bids"]]
        asks = [(float(p), float(s)) for p, s in data["asks"]]
        assert len(bids) == len(asks) == 15
        assert all(a[0] > b[0] for a, b in itertools.pairwise(bids))
        assert all(a[0] < b[0] for a, b in itertools.pairwise(asks))
        assert bids[0][0] < asks[0][0]
        assert all(size > 0 for _, size in bids + asks)
        assert all(p.count(".") == 1 and len(p.split(".")[1]) == 1 for p, _ in data["bids"])
        assert all(len(s.split(".")[1]) == 3 for _, s in data["asks"])
        assert data["checksum"] == 0 and data["pseq"] == 0
        assert isinstance(data["ts"], str)
        stamps.append(int(data["ts"]))
        seqs.append(data["seq"])
    gaps = [b - a for a, b in itertools.pairwise(stamps)]
    assert BOOK_INTERVAL_MS * 0.5 <= statistics.median(gaps) <= BOOK_INTERVAL_MS * 4
    assert seqs == sorted(seqs) and len(set(seqs)) > 1


async def test_books_channel_chains_seq_and_checksums_verify(public_ws: PublicSocket) -> None:
    await public_ws.subscribe(("books", "BTCUSDT"))
    ack = await public_ws.recv_json()
    assert ack == {"event": "subscribe", "arg": ARG_BOOKS}
    snapshot = await public_ws.recv_until(is_push("books"))
    assert snapshot["action"] == "snapshot"
    (data,) = snapshot["data"]
    bids: dict[str, str] = dict(data["bids"])
    asks: dict[str, str] = dict(data["asks"])
    assert len(bids) >= 50 and len(asks) >= 50
    last_seq = data["seq"]
    for _ in range(15):
        update = await public_ws.recv_until(is_push("books"))
        assert update["action"] == "update"
        (data,) = update["data"]
        assert data["pseq"] == last_seq
        last_seq = data["seq"]
        for side, book in (("bids", bids), ("asks", asks)):
            for price, size in data[side]:
                if size == "0":
                    book.pop(price, None)
                else:
                    book[price] = size
        ordered_bids = sorted(bids.items(), key=lambda level: -float(level[0]))
        ordered_asks = sorted(asks.items(), key=lambda level: float(level[0]))
        assert data["checksum"] != 0
        assert book_checksum(ordered_bids, ordered_asks) == data["checksum"]
        assert float(ordered_bids[0][0]) < float(ordered_asks[0][0])


async def test_trade_channel_sends_snapshot_then_updates(public_ws: PublicSocket) -> None:
    await public_ws.subscribe(("trade", "BTCUSDT"))
    snapshot = await public_ws.recv_until(is_push("trade"))
    assert snapshot["action"] == "snapshot" and snapshot["data"]
    seen = {trade["tradeId"] for trade in snapshot["data"]}
    newest = max(int(trade["tradeId"]) for trade in snapshot["data"])
    for _ in range(3):
        update = await public_ws.recv_until(is_push("trade"))
        assert update["action"] == "update"
        ids = [int(trade["tradeId"]) for trade in update["data"]]
        assert ids == sorted(ids, reverse=True), "newest first"
        assert min(ids) > newest and not seen & {str(i) for i in ids}
        newest = max(ids)
        for trade in update["data"]:
            assert set(trade) == {"ts", "price", "size", "side", "tradeId"}
            assert trade["side"] in ("buy", "sell")
            assert float(trade["size"]) > 0 and isinstance(trade["ts"], str)


async def test_pushes_only_for_subscribed_pairs_and_stop_after_unsubscribe(
    public_ws: PublicSocket,
) -> None:
    await public_ws.subscribe(("books5", "ETHUSDT"), ("books1", "BTCUSDT"))
    seen: set[tuple[str, str]] = set()
    for _ in range(10):
        push = await public_ws.recv_until(lambda m: "action" in m)
        seen.add((push["arg"]["channel"], push["arg"]["instId"]))
    assert seen == {("books5", "ETHUSDT"), ("books1", "BTCUSDT")}
    await public_ws.subscribe(("books1", "BTCUSDT"), op="unsubscribe")
    ack = await public_ws.recv_until(lambda m: m.get("event") == "unsubscribe")
    assert ack["arg"]["channel"] == "books1"
    for _ in range(10):
        push = await public_ws.recv_until(lambda m: "action" in m)
        assert push["arg"] == {"instType": "USDT-FUTURES", "channel": "books5", "instId": "ETHUSDT"}


async def test_connection_without_ping_is_dropped(
    start_sim: Callable[..., Awaitable[SimExchange]],
) -> None:
    exchange = await start_sim(ping_timeout_s=0.3)
    async with websockets.connect(exchange.ws_url) as connection:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            async with asyncio.timeout(WAIT_S):
                while True:
                    await connection.recv()
        assert closed.value.rcvd is None  # dropped without a close frame, like Bitget (1006)


async def test_stop_closes_clients_and_releases_the_port(
    start_sim: Callable[..., Awaitable[SimExchange]],
) -> None:
    exchange = await start_sim()
    connection = await websockets.connect(exchange.ws_url)
    await exchange.stop()
    with pytest.raises(websockets.ConnectionClosed) as closed:
        await asyncio.wait_for(connection.recv(), WAIT_S)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
    with pytest.raises(OSError):
        await websockets.connect(exchange.ws_url, open_timeout=WAIT_S)
