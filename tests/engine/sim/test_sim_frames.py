"""Bitget frame rendering and the `books` delta publisher."""

from __future__ import annotations

import numpy as np
import orjson

from engine.bitget.checksum import book_checksum
from engine.bitget.orders import OrderSide
from engine.market.instruments import BTCUSDT, ETHUSDT
from engine.sim.frames import (
    DepthPublisher,
    depth_frame,
    error_frame,
    event_frame,
    format_levels,
    trade_frame,
)
from engine.sim.market import SimTrade


def test_books15_frame_is_the_documented_text() -> None:
    text = depth_frame(
        "books15",
        "BTCUSDT",
        [("64010.0", "2.118"), ("64009.5", "0.900")],
        [("64010.5", "1.203"), ("64011.0", "0.550")],
        action="snapshot",
        seq=1234567950,
        pseq=0,
        checksum=0,
        ts_ms=1726000000150,
        push_ms=1726000000160,
    )
    assert text == (
        '{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books15",'
        '"instId":"BTCUSDT"},"data":[{"asks":[["64010.5","1.203"],["64011.0","0.550"]],'
        '"bids":[["64010.0","2.118"],["64009.5","0.900"]],"checksum":0,"seq":1234567950,'
        '"pseq":0,"ts":"1726000000150"}],"ts":1726000000160}'
    )


def test_trade_frame_lists_newest_first_with_string_fields() -> None:
    trades = [
        SimTrade("BTCUSDT", 64010.5, 0.015, OrderSide.BUY, 1220000000000000001, 1726000000321),
        SimTrade("BTCUSDT", 64010.0, 0.2, OrderSide.SELL, 1220000000000000002, 1726000000322),
    ]
    text = trade_frame("BTCUSDT", reversed(trades), BTCUSDT, action="update", push_ms=1726000000330)
    assert text == (
        '{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"trade",'
        '"instId":"BTCUSDT"},"data":[{"ts":"1726000000322","price":"64010.0","size":"0.200",'
        '"side":"sell","tradeId":"1220000000000000002"},{"ts":"1726000000321",'
        '"price":"64010.5","size":"0.015","side":"buy","tradeId":"1220000000000000001"}],'
        '"ts":1726000000330}'
    )


def test_levels_are_formatted_at_instrument_precision() -> None:
    levels = format_levels(np.array([3400.1, 3399.99]), np.array([1.0, 0.5]), ETHUSDT)
    assert levels == [("3400.10", "1.00"), ("3399.99", "0.50")]


def test_ack_and_error_frames() -> None:
    arg = {"instType": "USDT-FUTURES", "channel": "books", "instId": "BTCUSDT"}
    assert orjson.loads(event_frame("subscribe", arg)) == {"event": "subscribe", "arg": arg}
    error = orjson.loads(error_frame(30001, "nope", op="subscribe", arg=arg))
    assert error == {"event": "error", "arg": arg, "code": 30001, "msg": "nope", "op": "subscribe"}
    assert isinstance(error["code"], int)


def apply(book: dict[str, str], changes: list[list[str]]) -> None:
    for price, size in changes:
        if size == "0":
            book.pop(price, None)
        else:
            book[price] = size


def test_publisher_deltas_rebuild_the_published_book_with_valid_checksums() -> None:
    publisher = DepthPublisher("BTCUSDT", first_seq=100)
    states = [
        ([("100.0", "1.000"), ("99.9", "2.000")], [("100.1", "1.500"), ("100.2", "0.500")]),
        ([("100.0", "1.200"), ("99.8", "3.000")], [("100.1", "1.500"), ("100.3", "0.700")]),
        ([("100.1", "0.100"), ("100.0", "1.200")], [("100.3", "0.700")]),
    ]
    publisher.publish(*states[0], ts_ms=1)
    snapshot = orjson.loads(publisher.snapshot_frame("books", push_ms=2))["data"][0]
    assert snapshot["pseq"] == 0
    assert snapshot["checksum"] == book_checksum(*states[0]) != 0
    bids = {price: size for price, size in snapshot["bids"]}
    asks = {price: size for price, size in snapshot["asks"]}
    last_seq = snapshot["seq"]
    for ts, (want_bids, want_asks) in enumerate(states[1:], start=3):
        delta = publisher.publish(want_bids, want_asks, ts_ms=ts)
        assert delta is not None
        data = orjson.loads(publisher.update_frame(delta, push_ms=ts))["data"][0]
        assert data["pseq"] == last_seq and data["seq"] > last_seq
        last_seq = data["seq"]
        apply(bids, data["bids"])
        apply(asks, data["asks"])
        local_bids = sorted(bids.items(), key=lambda level: -float(level[0]))
        local_asks = sorted(asks.items(), key=lambda level: float(level[0]))
        assert local_bids == want_bids and local_asks == want_asks
        assert data["checksum"] == book_checksum(local_bids, local_asks)


def test_publisher_reports_no_delta_for_an_unchanged_book() -> None:
    publisher = DepthPublisher("BTCUSDT")
    levels = ([("1.0", "1.000")], [("1.1", "1.000")])
    assert publisher.publish(*levels, ts_ms=1) is not None
    assert publisher.publish(list(levels[0]), list(levels[1]), ts_ms=2) is None


def test_snapshot_channels_cut_depth_and_zero_checksum() -> None:
    publisher = DepthPublisher("BTCUSDT")
    bids = [(f"{100 - i}.0", "1.000") for i in range(20)]
    asks = [(f"{101 + i}.0", "1.000") for i in range(20)]
    publisher.publish(bids, asks, ts_ms=5)
    for channel, levels in (("books1", 1), ("books5", 5), ("books15", 15)):
        data = orjson.loads(publisher.snapshot_frame(channel, push_ms=6))["data"][0]
        assert len(data["bids"]) == len(data["asks"]) == levels
        assert data["checksum"] == 0 and data["pseq"] == 0
