"""What the feeds time per frame: parse and the whole frame through the sink for book frames,
parse and dispatch for trade frames (`FrameTimings`), live and replayed."""

from __future__ import annotations

import time

from support.recordings import MS_NS, write_lines

from engine.feed.events import BookSnapshot
from engine.feed.parse import FrameParser
from engine.feed.replay import ReplayFeed, replay_clock
from engine.feed.sink import FeedNotice, MarketFrame
from engine.feed.tape import Trades

SINK_BOOK_S = 0.005
"""How long the sink takes with a book frame: inside `total`, outside `parse`."""


class SlowBookSink:
    def __init__(self) -> None:
        self.books = 0
        self.trades = 0

    def on_market(self, frame: MarketFrame) -> None:
        if isinstance(frame, BookSnapshot):
            self.books += 1
            time.sleep(SINK_BOOK_S)
        elif isinstance(frame, Trades):
            self.trades += 1

    def on_feed_event(self, event: FeedNotice) -> None:
        pass


def warm_the_parser(frames) -> None:
    """The first frames of a process load the scanner's compiled code: not what is timed."""
    parser = FrameParser(("BTCUSDT", "ETHUSDT"))
    parser.parse(frames.books15("BTCUSDT", 1_725_000_000_000), time.time_ns())
    parser.parse(frames.trade("ETHUSDT", 1_725_000_000_000, "1"), time.time_ns())


def check(timings, books: int, trades: int) -> None:
    assert (timings.parse.count, timings.total.count, timings.trade.count) == (books, books, trades)
    # Every book's total holds the sink's time; a parse (the median: one stall on a busy host
    # must not decide) and a trade frame's dispatch do not.
    assert timings.total.percentile_ns(0) >= SINK_BOOK_S * 1e9
    assert timings.parse.percentile_ns(50) < SINK_BOOK_S * 1e9
    assert timings.trade.percentile_ns(50) < SINK_BOOK_S * 1e9


async def test_the_live_feed_times_parse_and_the_whole_frame(
    bitget_server, make_feed, make_config, frames, eventually
):
    warm_the_parser(frames)
    sink = SlowBookSink()
    feed = make_feed(make_config(bitget_server.url), sink)
    await feed.start()
    await eventually(lambda: bitget_server.subscribed("trade", "ETHUSDT"), what="subscription")
    for index in range(3):
        await bitget_server.push(frames.books15("BTCUSDT", 1_726_000_000_000 + index, seq=index))
    for trade_id in ("1", "2"):
        await bitget_server.push(frames.trade("ETHUSDT", 1_726_000_000_100, trade_id))
    await eventually(lambda: sink.books == 3 and sink.trades == 2, what="five market frames")
    check(feed.timings, books=3, trades=2)


def test_a_replay_times_parse_and_the_whole_frame(tmp_path, frames):
    warm_the_parser(frames)
    lines = []
    for index in range(4):
        ts = 1_726_000_000_000 + 10 * index
        lines.append((ts * MS_NS, frames.books15("BTCUSDT", ts, seq=index)))
        lines.append((ts * MS_NS + 1, frames.trade("BTCUSDT", ts, str(index))))
    path = write_lines(tmp_path / "timed.bitget.gz", lines)
    sink = SlowBookSink()
    clock = replay_clock(path)
    feed = ReplayFeed(path, FrameParser(("BTCUSDT",)), sink, clock)
    stats = clock.run(feed.run())
    assert stats.market_frames == 8
    check(feed.timings, books=4, trades=4)
