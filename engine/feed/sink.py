"""The interface every market-data feed (live or replay) delivers into."""

from __future__ import annotations

from typing import Protocol

from engine.feed.events import (
    BookResyncNeeded,
    BookSnapshot,
    BookUpdate,
    ChannelError,
    FeedStateChanged,
    RecordingEnded,
)
from engine.feed.tape import Trades

MarketFrame = BookSnapshot | BookUpdate | Trades
FeedNotice = FeedStateChanged | ChannelError | BookResyncNeeded | RecordingEnded


class FeedSink(Protocol):
    """Receives a feed's output synchronously on the feed's event loop.

    Both methods run on the hot path: they must return quickly and never block. A
    `BookSnapshot.levels` array belongs to the parser's buffer ring, which keeps only each
    symbol's latest book for as long as it is the latest; copy it to keep it.
    """

    def on_market(self, frame: MarketFrame) -> None: ...

    def on_feed_event(self, event: FeedNotice) -> None: ...
