"""Records a live (or simulated) Bitget public feed to a file, reporting progress as it goes."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from engine.bitget.contracts import load_contracts
from engine.bitget.endpoints import BITGET_REST_URL
from engine.bitget.public_ws import BitgetPublicFeed, BitgetPublicFeedConfig
from engine.bitget.rest import BitgetRestClient, BitgetRestConfig
from engine.feed.events import ChannelError, FeedState, FeedStateChanged
from engine.feed.parse import FrameParser
from engine.feed.recorder import FrameRecorder
from engine.feed.sink import FeedNotice, MarketFrame
from engine.market.instruments import Instrument

_BITGET_WS_HOSTS = ("ws.bitget.com", "wspap.bitget.com")
"""Bitget's public websocket hosts, live and demo; both list their contracts at
`BITGET_REST_URL`."""


def rest_url_of(public_ws_url: str) -> str:
    """The REST base of the venue behind a public websocket: Bitget's for Bitget's hosts,
    else the same host and port over http(s) (a simulator serves both)."""
    parts = urlsplit(public_ws_url)
    if parts.hostname in _BITGET_WS_HOSTS:
        return BITGET_REST_URL
    scheme = "https" if parts.scheme == "wss" else "http"
    return f"{scheme}://{parts.netloc}"


async def recorded_contracts(
    rest_url: str, symbols: tuple[str, ...], notice: Callable[[str], None]
) -> tuple[Instrument, ...]:
    """The contracts of `symbols` from the venue at `rest_url` (through its per-user cache,
    `load_contracts`). Raises ValueError naming the symbols the
    table lacks, and BitgetRestError when there is no table."""
    async with BitgetRestClient(BitgetRestConfig(base_url=rest_url), None) as client:
        table = (await load_contracts(client, notice=notice)).table
    missing = [symbol for symbol in symbols if symbol not in table.specs]
    if missing:
        raise ValueError(
            f"no contract for {', '.join(missing)} in the contract table of {rest_url}: "
            f"record the symbols it lists (hft-console instruments --url {rest_url})"
        )
    return tuple(table.specs[symbol].instrument for symbol in symbols)


@dataclass(frozen=True, slots=True)
class RecordProgress:
    """Where a recording stands; `frames` and `bytes_written` are what reached the recorder.

    `frames_per_s` is the rate since the previous report. `fault` says what stopped the
    recording early: the recorder's disk error, or the venue refusing a subscription (an
    `event: error` frame: an unknown symbol, a bad channel); `finished` marks the final report.
    """

    out_path: str
    elapsed_s: float
    frames: int
    bytes_written: int
    frames_per_s: float
    market_frames: int
    states: tuple[tuple[str, FeedState], ...]
    fault: str | None
    finished: bool


class _CountingSink:
    """Counts market frames and remembers each symbol's state and the venue's first error
    frame (`refused`, which ends the recording: it would not hold what was asked); records
    nothing itself."""

    def __init__(self, symbols: tuple[str, ...]) -> None:
        self.market_frames = 0
        self.states = dict.fromkeys(symbols, FeedState.STOPPED)
        self.refused: str | None = None
        self.refused_event = asyncio.Event()

    def on_market(self, frame: MarketFrame) -> None:
        self.market_frames += 1

    def on_feed_event(self, event: FeedNotice) -> None:
        if isinstance(event, FeedStateChanged):
            self.states[event.symbol] = event.state
        elif isinstance(event, ChannelError) and self.refused is None:
            what = " ".join(part for part in (event.symbol, event.channel) if part) or "a request"
            self.refused = f"the venue refused {what}: {event.code} {event.message}"
            self.refused_event.set()


async def record(
    source: BitgetPublicFeedConfig,
    out_path: str,
    duration_s: float | None,
    progress: Callable[[RecordProgress], None],
    progress_interval_s: float = 1.0,
    instruments: tuple[Instrument, ...] = (),
) -> RecordProgress:
    """Record `source` into `out_path` for `duration_s` seconds (None: until cancelled), the
    contracts `instruments` first.

    Calls `progress` every `progress_interval_s` and once more at the end. The file is always
    flushed and closed, also on cancellation (after which CancelledError propagates). A file
    that cannot be written, or a subscription the venue refuses, ends the recording early with
    `fault` set in the returned progress.
    """
    if duration_s is not None and not (math.isfinite(duration_s) and duration_s > 0):
        raise ValueError(f"duration_s must be None (until cancelled) or > 0, got {duration_s}")
    if not (math.isfinite(progress_interval_s) and progress_interval_s > 0):
        raise ValueError(f"progress_interval_s must be > 0, got {progress_interval_s}")
    recorder = FrameRecorder(out_path, instruments=instruments)
    sink = _CountingSink(source.symbols)
    feed = BitgetPublicFeed(source, FrameParser(source.symbols), sink, recorder)
    started = time.monotonic()
    reported = (started, 0)

    def snapshot(finished: bool) -> RecordProgress:
        nonlocal reported
        now = time.monotonic()
        stats = recorder.stats
        previous_at, previous_frames = reported
        reported = (now, stats.frames)
        return RecordProgress(
            out_path=out_path,
            elapsed_s=now - started,
            frames=stats.frames,
            bytes_written=stats.bytes_written,
            frames_per_s=(stats.frames - previous_frames) / max(now - previous_at, 1e-9),
            market_frames=sink.market_frames,
            states=tuple(sink.states.items()),
            fault=stats.fault or sink.refused,
            finished=finished,
        )

    recorder.start()
    try:
        if recorder.fault is None:
            await feed.start()
            deadline = None if duration_s is None else started + duration_s
            while recorder.fault is None and sink.refused is None:
                wait_s = progress_interval_s
                if deadline is not None:
                    wait_s = min(wait_s, deadline - time.monotonic())
                    if wait_s <= 0:
                        break
                with contextlib.suppress(TimeoutError):  # a refusal ends the wait at once
                    await asyncio.wait_for(sink.refused_event.wait(), wait_s)
                progress(snapshot(finished=False))
    finally:
        await feed.stop()
        # The writer thread does the last write, flush and close; the loop stays free.
        await asyncio.to_thread(recorder.stop)
        final = snapshot(finished=True)
        progress(final)
    return final
