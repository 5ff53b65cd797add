"""BitgetPublicFeed against a scripted Bitget-like server on loopback."""

from __future__ import annotations

import asyncio
import itertools
import socket
import time

import orjson
import pytest
from support.waiting import most_per_loop_turn

from engine.bitget.public_ws import (
    MAX_SUBSCRIBE_ARGS_BYTES,
    BitgetPublicFeed,
    BitgetPublicFeedConfig,
    batch_channel_args,
)
from engine.bitget.websocket import channel_arg
from engine.feed.events import (
    AggressorSide,
    BookSnapshot,
    ChannelError,
    FeedState,
    TradePrint,
)
from engine.feed.parse import FrameParser
from engine.feed.tape import Trades

# Configuration and pure helpers


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"url": "http://example.com"}, "ws:// or wss://"),
        ({"symbols": ()}, "at least one symbol"),
        ({"symbols": "BTCUSDT"}, "sequence of strings"),
        ({"symbols": ("BTCUSDT", "BTCUSDT")}, "duplicates"),
        ({"channels": ("books50",)}, "unsupported channels"),
        ({"channels": ("trade",)}, "need a book channel"),
        ({"ping_interval_s": 0.0}, "ping_interval_s"),
        ({"pong_timeout_s": float("nan")}, "pong_timeout_s"),
        ({"stale_after_s": 0.0}, "stale_after_s"),
        ({"close_timeout_s": -1.0}, "close_timeout_s"),
        ({"backoff_initial_s": 2.0, "backoff_max_s": 1.0}, "backoff_max_s"),
        ({"max_reconnect_attempts": -1}, "max_reconnect_attempts"),
        ({"max_client_messages_per_s": 0}, "max_client_messages_per_s"),
        ({"max_subscribe_args_bytes": 5000}, "max_subscribe_args_bytes"),
        ({"symbols": tuple(f"S{i}USDT" for i in range(2401))}, "101 connections of at most 49"),
        ({"channels_per_connection": 1}, r"channels_per_connection must be in 2\.\.1000"),
        ({"channels_per_connection": 1001}, "channels_per_connection"),
        ({"symbols": ("X" * 5000,)}, "one subscribe arg takes"),
    ],
)
def test_config_rejects_bad_values_with_a_clear_message(overrides, message):
    with pytest.raises(ValueError, match=message):
        BitgetPublicFeedConfig(**overrides)


def test_config_defaults_follow_the_brief():
    config = BitgetPublicFeedConfig()
    assert config.url == "wss://ws.bitget.com/v2/ws/public"
    assert config.symbols == ("BTCUSDT", "ETHUSDT")
    assert config.channels == ("books15", "trade")
    assert config.inst_type == "USDT-FUTURES"
    assert (config.ping_interval_s, config.pong_timeout_s, config.stale_after_s) == (25, 10, 2)
    assert (config.backoff_initial_s, config.backoff_max_s) == (0.5, 30)
    assert config.max_client_messages_per_s == 10
    assert BitgetPublicFeedConfig(symbols=["BTCUSDT"]).symbols == ("BTCUSDT",)


def test_subscribe_batches_stay_within_the_args_limit_and_keep_order():
    args = [
        channel_arg("USDT-FUTURES", channel, f"SYM{i:04d}USDT")
        for i in range(300)
        for channel in ("books15", "trade")
    ]
    batches = batch_channel_args(args, MAX_SUBSCRIBE_ARGS_BYTES)
    assert len(batches) > 1
    assert [arg for batch in batches for arg in batch] == args
    for batch in batches:
        assert len(orjson.dumps(batch)) <= MAX_SUBSCRIBE_ARGS_BYTES
    # Greedy: each batch would overflow with the next batch's first arg.
    for batch, following in itertools.pairwise(batches):
        assert len(orjson.dumps([*batch, following[0]])) > MAX_SUBSCRIBE_ARGS_BYTES


# Subscribing and receiving


async def test_subscribes_every_channel_in_one_message_and_records_the_acks(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url), sink)
    await feed.start()
    await eventually(
        lambda: feed.stats.symbols["ETHUSDT"].subscribed == ("books15", "trade"), what="acks"
    )
    (request,) = bitget_server.requests("subscribe")
    assert request == {
        "op": "subscribe",
        "args": [
            {"instType": "USDT-FUTURES", "channel": "books15", "instId": "BTCUSDT"},
            {"instType": "USDT-FUTURES", "channel": "trade", "instId": "BTCUSDT"},
            {"instType": "USDT-FUTURES", "channel": "books15", "instId": "ETHUSDT"},
            {"instType": "USDT-FUTURES", "channel": "trade", "instId": "ETHUSDT"},
        ],
    }
    assert all(isinstance(message, str) for _, message in bitget_server.client_messages)
    assert feed.stats.symbols["BTCUSDT"].subscribed == ("books15", "trade")
    assert feed.state("BTCUSDT") is FeedState.CONNECTING
    assert sink.states("BTCUSDT") == [FeedState.CONNECTING]
    with pytest.raises(KeyError, match="SOLUSDT"):
        feed.state("SOLUSDT")


async def test_frames_reach_the_sink_as_typed_events(
    bitget_server, make_feed, make_sink, make_config, frames, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url), sink)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("trade", "ETHUSDT"), what="subscription")
    await bitget_server.push(frames.books15("BTCUSDT", 1_726_000_000_150, bid=64010.0, seq=7))
    await bitget_server.push(frames.trade("ETHUSDT", 1_726_000_000_321, "1001", price=3366.5))
    await eventually(lambda: len(sink.market) == 2, what="two market frames")

    book, trades = sink.market
    assert isinstance(book, BookSnapshot)
    assert (book.symbol, book.channel, book.seq, book.exchange_ts_ms) == (
        "BTCUSDT",
        "books15",
        7,
        1_726_000_000_150,
    )
    assert book.levels == ((64010.0, 64009.5), (2.118, 0.9), (64010.5, 64011.0), (1.203, 0.55))
    assert isinstance(trades, Trades)
    assert trades.prints == (
        TradePrint(
            "ETHUSDT", 3366.5, 0.015, AggressorSide.BUY, "1001", 1_726_000_000_321, trades.recv_ns
        ),
    )
    assert abs(time.time_ns() - book.recv_ns) < 10 * 1_000_000_000

    assert feed.state("BTCUSDT") is FeedState.LIVE
    assert sink.last_state_event("BTCUSDT").reason == "first book frame"
    # A trade alone does not make a symbol live: liveness is judged on book frames.
    assert feed.state("ETHUSDT") is FeedState.CONNECTING
    stats = feed.stats
    assert stats.symbols["BTCUSDT"].book_frames == 1
    assert stats.symbols["ETHUSDT"].trade_frames == 1
    assert stats.symbols["BTCUSDT"].book_age_ms is not None
    assert stats.symbols["ETHUSDT"].book_age_ms is None
    assert stats.frames == len(bitget_server.sent)
    assert stats.bytes == sum(len(frame) for frame in bitget_server.sent)
    assert stats.parser["depth_snapshots"] == 1
    assert stats.parser["trades"] == 1


async def test_a_burst_of_frames_lets_the_loop_run_between_them(
    bitget_server, make_feed, make_sink, make_config, frames, eventually
):
    """Every symbol's book arrives at once: read one by one from the buffer, the burst would
    hold the loop (and a kill's or an order's answer behind it) for all of it."""
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url, symbols=("BTCUSDT",)), sink)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("books15", "BTCUSDT"), what="subscription")
    watching = asyncio.ensure_future(most_per_loop_turn(lambda: len(sink.market), 30))
    for k in range(30):  # back to back, in one task step: one burst in the socket
        await bitget_server.push(frames.books15("BTCUSDT", 1_726_000_000_000 + k, seq=k + 1))
    most = await asyncio.wait_for(watching, 10)
    assert most <= 2, f"{most} frames handled without the loop running between"


async def test_frame_rate_is_reported_per_symbol(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url, symbols=("BTCUSDT",)), sink)
    bitget_server.streaming = True
    await feed.start()
    await eventually(lambda: feed.stats.symbols["BTCUSDT"].frames_per_s > 0, what="a rate")
    # The server streams every 20 ms, at most 50 frames/s; loaded hosts send fewer.
    assert 1 < feed.stats.symbols["BTCUSDT"].frames_per_s < 100


# Reconnecting


async def test_reconnects_and_resubscribes_after_the_server_closes_the_connection(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url), sink)
    bitget_server.streaming = True
    await feed.start()
    await eventually(lambda: feed.state("ETHUSDT") is FeedState.LIVE, what="LIVE")

    await bitget_server.drop_connections(code=1012, reason="service restart")
    await eventually(lambda: len(bitget_server.requests("subscribe")) == 2, what="resubscribe")
    await eventually(lambda: feed.state("ETHUSDT") is FeedState.LIVE, what="LIVE again")

    assert bitget_server.connections_accepted == 2
    first, second = bitget_server.requests("subscribe")
    assert first == second
    assert sink.states("ETHUSDT") == [
        FeedState.CONNECTING,
        FeedState.LIVE,
        FeedState.RECONNECTING,
        FeedState.LIVE,
    ]
    reconnecting = [e for e in sink.events if getattr(e, "state", None) is FeedState.RECONNECTING]
    assert "server closed the connection (code 1012, service restart)" in reconnecting[0].reason
    assert sink.last_state_event("ETHUSDT").reason == "first book frame after reconnecting"
    stats = feed.stats
    assert (stats.connects, stats.reconnects) == (2, 1)
    assert 0.0 <= stats.last_backoff_s <= 0.01


async def test_reconnects_after_the_connection_is_lost_without_a_close_frame(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url), sink)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("books15", "BTCUSDT"), what="subscribed")
    await bitget_server.drop_connections()
    await eventually(lambda: len(bitget_server.requests("subscribe")) == 2, what="resubscribe")
    assert "connection lost without a close frame" in feed.stats.last_disconnect


async def test_a_refused_handshake_is_retried_until_the_server_accepts(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    bitget_server.reject_handshakes = True
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url), sink)
    await feed.start()
    await eventually(lambda: feed.stats.connect_failures >= 2, what="refusals")
    assert feed.state("BTCUSDT") is FeedState.RECONNECTING
    assert "403" in sink.last_state_event("BTCUSDT").reason
    bitget_server.reject_handshakes = False
    await eventually(lambda: bitget_server.subscribed("trade", "ETHUSDT"), what="subscribed")


async def test_gives_up_after_max_consecutive_connection_failures(
    make_feed, make_sink, make_config, eventually
):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = make_sink()
    feed = make_feed(make_config(f"ws://127.0.0.1:{port}", max_reconnect_attempts=3), sink)
    await feed.start()
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.FAILED, what="FAILED")
    stats = feed.stats
    assert stats.connect_failures == 3
    assert stats.consecutive_failures == 3
    assert stats.reconnects == 2
    reason = sink.last_state_event("ETHUSDT").reason
    assert reason.startswith("gave up after 3 consecutive connection failures; last: connect")
    assert sink.states("ETHUSDT") == [
        FeedState.CONNECTING,
        FeedState.RECONNECTING,
        FeedState.FAILED,
    ]


async def test_a_connection_that_stayed_up_resets_the_failure_count(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    async def drop_twice(feed: BitgetPublicFeed) -> int:
        await feed.start()
        for drops in (1, 2):
            await eventually(lambda: len(bitget_server.subscriptions) == 1, what="a client")
            await bitget_server.drop_connections(code=1001)
            await eventually(lambda: feed.stats.reconnects == drops, what="a reconnect")  # noqa: B023
        failures = feed.stats.consecutive_failures
        await feed.stop()
        await eventually(lambda: not bitget_server.subscriptions, what="the client gone")
        return failures

    # Connections shorter than backoff_reset_after_s count as consecutive failures ...
    config = make_config(bitget_server.url, backoff_reset_after_s=60.0)
    assert await drop_twice(make_feed(config, make_sink())) == 2
    # ... and a connection that stayed up long enough starts the count afresh.
    config = make_config(bitget_server.url, backoff_reset_after_s=0.0)
    assert await drop_twice(make_feed(config, make_sink())) == 1


# Liveness


async def test_goes_stale_without_book_frames_and_live_when_they_resume(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url, stale_after_s=0.2), sink)
    bitget_server.streaming = True
    await feed.start()
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="LIVE")

    bitget_server.streaming = False
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.STALE, what="STALE")
    assert sink.last_state_event("BTCUSDT").reason.startswith("no book frame for ")
    assert feed.stats.symbols["BTCUSDT"].book_age_ms >= 200

    bitget_server.streaming = True
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="LIVE again")
    assert sink.last_state_event("BTCUSDT").reason == "book frames resumed"
    assert sink.states("BTCUSDT") == [
        FeedState.CONNECTING,
        FeedState.LIVE,
        FeedState.STALE,
        FeedState.LIVE,
    ]
    assert bitget_server.connections_accepted == 1


async def test_a_symbol_acked_but_never_sent_goes_stale(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url, stale_after_s=0.1), sink)
    await feed.start()
    await eventually(lambda: feed.state("ETHUSDT") is FeedState.STALE, what="STALE")
    assert sink.last_state_event("ETHUSDT").reason == "no book frame within 0.1 s of subscribing"


async def test_pongs_are_counted_with_their_latency(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    feed = make_feed(make_config(bitget_server.url, ping_interval_s=0.05), make_sink())
    await feed.start()
    await eventually(lambda: feed.stats.pongs >= 2, what="pongs")
    stats = feed.stats
    assert stats.pings_sent >= 2
    assert 0.0 <= stats.last_pong_latency_ms < 5_000
    assert stats.pong_timeouts == 0
    assert bitget_server.connections_accepted == 1
    pings = [m for _, m in bitget_server.client_messages if m == "ping"]
    assert len(pings) == stats.pings_sent


async def test_a_missing_pong_reconnects(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    bitget_server.answer_pings = False
    sink = make_sink()
    config = make_config(bitget_server.url, ping_interval_s=0.05, pong_timeout_s=0.1)
    feed = make_feed(config, sink)
    await feed.start()
    await eventually(lambda: bitget_server.connections_accepted >= 2, what="a reconnect")
    assert feed.stats.pong_timeouts >= 1
    reconnecting = [e for e in sink.events if getattr(e, "state", None) is FeedState.RECONNECTING]
    assert reconnecting[0].reason.startswith("no pong within 0.1 s of a ping")


# What the exchange refuses, and garbage


async def test_an_unknown_symbol_fails_with_the_exchange_message(
    bitget_server, make_feed, make_sink, make_config, frames, eventually
):
    bitget_server.unknown_symbols = {"NOPEUSDT"}
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url, symbols=("BTCUSDT", "NOPEUSDT")), sink)
    await feed.start()
    await eventually(lambda: feed.state("NOPEUSDT") is FeedState.FAILED, what="FAILED")
    reason = sink.last_state_event("NOPEUSDT").reason
    assert reason == (
        "instType:USDT-FUTURES,channel:books15,instId:NOPEUSDT,precision:null doesn't exist"
    )
    errors = [event for event in sink.events if isinstance(event, ChannelError)]
    assert {(error.code, error.channel, error.symbol) for error in errors} == {
        (30001, "books15", "NOPEUSDT"),
        (30001, "trade", "NOPEUSDT"),
    }
    assert feed.stats.channel_errors == 2

    await bitget_server.push(frames.books15("BTCUSDT", bitget_server.next_ts_ms()))
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="BTCUSDT LIVE")

    # A refused symbol is not asked for again after a reconnect, and stays FAILED.
    await bitget_server.drop_connections(code=1001)
    await eventually(lambda: len(bitget_server.requests("subscribe")) == 2, what="resubscribe")
    resubscribed = {arg["instId"] for arg in bitget_server.requests("subscribe")[1]["args"]}
    assert resubscribed == {"BTCUSDT"}
    assert feed.state("NOPEUSDT") is FeedState.FAILED
    assert sink.last_state_event("NOPEUSDT").reason == reason


async def test_malformed_frames_are_counted_and_the_feed_carries_on(
    bitget_server, make_feed, make_sink, make_config, frames, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url), sink)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("trade", "ETHUSDT"), what="subscription")
    crossed = frames.books15("BTCUSDT", bitget_server.next_ts_ms()).replace(
        b'"bids":[["100.0"', b'"bids":[["500.0"'
    )
    garbage = [
        b"garbage",
        b"{",
        b"[1,2,3]",
        b'{"event":"mystery"}',
        b'{"arg":{"channel":"books15","instId":"BTCUSDT"}}',
        crossed,
    ]
    for frame in garbage:
        await bitget_server.push(frame)
    await bitget_server.push(b"\x00\xff\xfe binary junk", binary=True)
    await bitget_server.push(frames.books15("BTCUSDT", bitget_server.next_ts_ms()))
    await eventually(lambda: len(sink.market) == 1, what="the valid frame")

    assert feed.stats.parser["rejected"] == {
        "not_json": 3,  # "garbage", "{" and the binary junk
        "not_object": 1,
        "unknown_event": 1,
        "missing_field": 1,
        "crossed_book": 1,
    }
    assert feed.stats.handler_errors == 0
    assert bitget_server.connections_accepted == 1
    assert feed.state("BTCUSDT") is FeedState.LIVE


async def test_a_failing_sink_is_counted_and_does_not_stop_the_feed(
    bitget_server, make_feed, make_config, frames, eventually
):
    class ExplodingSink:
        def __init__(self) -> None:
            self.calls = 0

        def on_market(self, frame) -> None:
            self.calls += 1
            raise RuntimeError("strategy bug")

        def on_feed_event(self, event) -> None:
            raise RuntimeError("ui bug")

    sink = ExplodingSink()
    feed = make_feed(make_config(bitget_server.url, symbols=("BTCUSDT",)), sink)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("books15", "BTCUSDT"), what="subscribed")
    for _ in range(3):
        await bitget_server.push(frames.books15("BTCUSDT", bitget_server.next_ts_ms()))
    await eventually(lambda: sink.calls == 3, what="three deliveries")
    stats = feed.stats
    assert stats.handler_errors >= 4  # three frames and at least the LIVE event
    assert stats.last_handler_error == "RuntimeError: strategy bug"
    assert feed.state("BTCUSDT") is FeedState.LIVE


# Rate limit, resync, stop


async def test_never_more_than_ten_client_messages_in_any_second(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    symbols = tuple(f"SYM{i:03d}USDT" for i in range(500))
    config = make_config(
        bitget_server.url, symbols=symbols, ping_interval_s=0.3, channels_per_connection=1000
    )  # all of them on one connection: its limit is the one tested
    feed = make_feed(config, make_sink())
    await feed.start()
    await eventually(
        lambda: feed.stats.symbols["SYM499USDT"].subscribed == ("books15", "trade"),
        timeout_s=15.0,
        what="every subscription acked",
    )
    requests = bitget_server.requests("subscribe")
    assert len(requests) > 10  # enough messages that the limiter had to hold some back
    args = [arg for request in requests for arg in request["args"]]
    assert len(args) == 1000
    assert {arg["instId"] for arg in args} == set(symbols)
    for request in requests:
        assert len(orjson.dumps(request["args"])) <= MAX_SUBSCRIBE_ARGS_BYTES
    assert bitget_server.max_client_messages_in(1.0) <= 10
    await feed.stop()
    await eventually(
        lambda: feed.stats.messages_sent == len(bitget_server.client_messages),
        what="every sent message counted on both sides",
    )
    assert bitget_server.max_client_messages_in(1.0) <= 10


async def test_a_book_over_the_channels_of_one_connection_is_split_and_a_loss_stays_on_its_own(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    # 16 quoted symbols and the hedge, 3 channels each: 51, over the 49 of one connection.
    symbols = tuple(f"S{i:02d}USDT" for i in range(17))
    channels = ("books15", "trade", "books")
    sink = make_sink()
    feed = make_feed(make_config(bitget_server.url, symbols=symbols, channels=channels), sink)
    bitget_server.streaming = True
    await feed.start()
    await eventually(
        lambda: all(feed.state(symbol) is FeedState.LIVE for symbol in symbols), what="LIVE"
    )
    assert (feed.stats.connections, bitget_server.connections_accepted) == (2, 2)
    carried = sorted(
        sorted({symbol for _, symbol in subscriptions})
        for subscriptions in bitget_server.subscriptions.values()
    )
    assert carried == [list(symbols[:9]), list(symbols[9:])]  # every channel of a symbol together
    assert all(len(subs) <= 49 for subs in bitget_server.subscriptions.values())
    # One connection lost: its symbols reconnect, the other connection's stay LIVE throughout.
    lost = next(
        c for c, subs in bitget_server.subscriptions.items() if ("books", "S00USDT") in subs
    )
    lost.transport.abort()
    await eventually(lambda: feed.stats.connects == 3, what="the lost connection back")
    await eventually(lambda: feed.state("S00USDT") is FeedState.LIVE, what="LIVE again")
    assert FeedState.RECONNECTING in sink.states("S08USDT")
    assert all(
        sink.states(symbol) == [FeedState.CONNECTING, FeedState.LIVE] for symbol in symbols[9:]
    )
    await feed.stop()


async def test_request_resync_unsubscribes_and_resubscribes_the_books_channel(
    bitget_server, make_feed, make_sink, make_config, eventually
):
    config = make_config(bitget_server.url, channels=("books", "trade"))
    feed = make_feed(config, make_sink())
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("trade", "ETHUSDT"), what="subscribed")

    feed.request_resync("ETHUSDT")
    feed.request_resync("BTCUSDT")
    feed.request_resync("ETHUSDT")  # coalesced with the first
    await eventually(lambda: feed.stats.resyncs == 2, what="resync sent")
    await eventually(lambda: len(bitget_server.requests("subscribe")) == 2, what="resubscribe")

    books = [
        {"instType": "USDT-FUTURES", "channel": "books", "instId": "ETHUSDT"},
        {"instType": "USDT-FUTURES", "channel": "books", "instId": "BTCUSDT"},
    ]
    assert bitget_server.requests("unsubscribe") == [{"op": "unsubscribe", "args": books}]
    assert bitget_server.requests("subscribe")[1] == {"op": "subscribe", "args": books}
    operations = [
        orjson.loads(message)["op"]
        for _, message in bitget_server.client_messages
        if message != "ping"
    ]
    assert operations == ["subscribe", "unsubscribe", "subscribe"]
    await eventually(lambda: bitget_server.subscribed("books", "BTCUSDT"), what="books again")
    assert feed.stats.symbols["BTCUSDT"].subscribed == ("books", "trade")

    with pytest.raises(KeyError, match="SOLUSDT"):
        feed.request_resync("SOLUSDT")


def test_request_resync_needs_the_incremental_channel(make_sink, make_config):
    feed = BitgetPublicFeed(make_config("ws://127.0.0.1:9"), FrameParser(), make_sink())
    with pytest.raises(ValueError, match="'books' channel"):
        feed.request_resync("BTCUSDT")


async def test_stop_closes_the_connection_and_leaves_no_task_running(
    bitget_server, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = BitgetPublicFeed(make_config(bitget_server.url), FrameParser(), sink)
    bitget_server.streaming = True
    await feed.start()
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="LIVE")

    await feed.stop()
    feed_tasks = [t for t in asyncio.all_tasks() if t.get_name().startswith("bitget-feed")]
    assert feed_tasks == []
    assert feed.state("BTCUSDT") is FeedState.STOPPED
    assert sink.last_state_event("ETHUSDT").reason == "feed stopped"
    await eventually(lambda: not bitget_server.subscriptions, what="server sees the close")
    await feed.stop()  # idempotent
    with pytest.raises(RuntimeError, match="only once"):
        await feed.start()


async def test_stop_while_reconnecting_leaves_no_task_running(make_sink, make_config):
    feed = BitgetPublicFeed(
        make_config("ws://127.0.0.1:9", backoff_initial_s=10.0, backoff_max_s=10.0),
        FrameParser(),
        make_sink(),
    )
    await feed.start()
    await asyncio.sleep(0.05)
    await feed.stop()
    assert [t for t in asyncio.all_tasks() if t.get_name().startswith("bitget-feed")] == []
    assert feed.state("ETHUSDT") is FeedState.STOPPED


# Against the project's simulated exchange


async def test_sim_subscriptions_deliver_books_and_trades(
    sim_exchange, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(sim_exchange.ws_url), sink)
    await feed.start()
    await eventually(
        lambda: all(feed.state(s) is FeedState.LIVE for s in ("BTCUSDT", "ETHUSDT")), what="LIVE"
    )
    await eventually(
        lambda: {type(f) for f in sink.market if f.symbol == "ETHUSDT"} == {BookSnapshot, Trades},
        what="books and trades",
    )
    stats = feed.stats
    assert stats.symbols["BTCUSDT"].subscribed == ("books15", "trade")
    assert stats.channel_errors == 0
    assert not stats.parser["rejected"]
    book = next(f for f in sink.market if isinstance(f, BookSnapshot) and f.symbol == "BTCUSDT")
    assert book.channel == "books15"
    assert book.levels[0][0] < book.levels[2][0]  # best bid below best ask


async def test_sim_disconnect_fault_reconnects_and_resubscribes(
    sim_exchange, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(sim_exchange.ws_url), sink)
    await feed.start()
    await eventually(lambda: feed.state("ETHUSDT") is FeedState.LIVE, what="LIVE")
    sim_exchange.faults.add("disconnect")
    await eventually(lambda: feed.stats.connects == 2, what="a second connection")
    await eventually(lambda: sink.states("ETHUSDT")[-1] is FeedState.LIVE, what="LIVE again")
    assert sink.states("ETHUSDT") == [
        FeedState.CONNECTING,
        FeedState.LIVE,
        FeedState.RECONNECTING,
        FeedState.LIVE,
    ]
    assert feed.stats.last_disconnect == "connection lost without a close frame"
    await eventually(
        lambda: feed.stats.symbols["ETHUSDT"].subscribed == ("books15", "trade"),
        what="resubscribed",
    )


async def test_sim_silence_fault_goes_stale_then_live(
    sim_exchange, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(sim_exchange.ws_url, stale_after_s=0.2), sink)
    await feed.start()
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="LIVE")
    sim_exchange.faults.add("silence:0.8")
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.STALE, what="STALE")
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="LIVE again")
    assert sink.states("BTCUSDT") == [
        FeedState.CONNECTING,
        FeedState.LIVE,
        FeedState.STALE,
        FeedState.LIVE,
    ]
    assert feed.stats.connects == 1


async def test_sim_malformed_fault_is_counted_and_the_feed_carries_on(
    sim_exchange, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(sim_exchange.ws_url), sink)
    await feed.start()
    await eventually(lambda: feed.state("BTCUSDT") is FeedState.LIVE, what="LIVE")
    sim_exchange.faults.add("malformed:6")
    await eventually(
        lambda: sum(feed.stats.parser["rejected"].values()) >= 6, what="six rejections"
    )
    delivered = len(sink.market)
    await eventually(lambda: len(sink.market) > delivered + 5, what="frames after the garbage")
    stats = feed.stats
    assert stats.parser["rejected"]["not_json"] == 2  # non-JSON and truncated JSON
    assert stats.parser["rejected"]["missing_field"] == 1
    assert stats.handler_errors == 0
    assert stats.connects == 1
    assert feed.state("BTCUSDT") is FeedState.LIVE


async def test_sim_resync_resubscribes_the_incremental_book(
    sim_exchange, make_feed, make_sink, make_config, eventually
):
    sink = make_sink()
    feed = make_feed(make_config(sim_exchange.ws_url, channels=("books",)), sink)
    await feed.start()

    def snapshots() -> int:
        return sum(1 for f in sink.market if f.symbol == "BTCUSDT" and f.is_snapshot)

    await eventually(lambda: snapshots() == 1, what="the first snapshot")
    feed.request_resync("BTCUSDT")
    await eventually(lambda: snapshots() == 2, what="a fresh snapshot")
    assert feed.stats.resyncs == 1
    assert feed.stats.channel_errors == 0
