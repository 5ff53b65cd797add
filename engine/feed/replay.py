"""Replays a recording through the live feed's pipeline: the same parser, the same sink.

Frames are parsed with their *recorded* receive time, so every event carries the recv_ns it
had live, and each is played when the engine's `MarketClock` reaches that time: the clock's
loop jumps from frame to frame and to every timer in between, paced at the replay's speed (or
at once at max speed), so the whole engine lives in the recording's time. A frame that nothing
can come before is played without a trip through the loop; the replay still yields to the loop
every `yield_every` frames.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from engine.clock import MarketClock
from engine.feed.events import (
    BookSnapshot,
    BookUpdate,
    ChannelError,
    FeedState,
    FeedStateChanged,
    RecordingEnded,
)
from engine.feed.parse import FrameParser, RejectReason
from engine.feed.recording import (
    RecordingProblem,
    RecordingReadStats,
    existing_recording,
    iter_recording,
)
from engine.feed.sink import FeedNotice, FeedSink
from engine.feed.tape import Trades
from engine.latency import FrameTimings

__all__ = ["ReplayFeed", "ReplayStats", "iter_recording", "replay_clock"]


@dataclass(frozen=True, slots=True)
class ReplayStats:
    """What a replay has done; `recording` says what the reader skipped."""

    frames: int
    bytes: int
    market_frames: int
    handler_errors: int
    last_handler_error: str
    recorded_span_s: float
    finished: bool
    recording: RecordingReadStats
    parser: Mapping[str, object]
    first_recv_ns: int = 0
    """The first and last frames' recorded receive times (0 before the first frame)."""
    last_recv_ns: int = 0


START_LEAD_NS = 1_000_000_000
"""The engine starts this long before the recording's first frame: its start-up (reconciling
with the venue takes a few round trips of market time) is over before the market begins."""


def replay_clock(path: str | os.PathLike[str], speed: float | None = None) -> MarketClock:
    """The clock a replay of `path` runs on: market time starts `START_LEAD_NS` before its
    first frame."""
    for recv_ns, _ in iter_recording(path):
        return MarketClock(recv_ns - START_LEAD_NS, speed)
    raise ValueError(f"{os.fspath(path)}: the recording holds no frame to replay")


class ReplayFeed:
    """Feeds a recording into a `FeedSink` at the recorded receive times, on `clock`.

    Each symbol goes LIVE at its first market frame and STOPPED at the end (or at `stop()`).
    Runs on the clock's own loop (`clock.run`); at the end the clock follows the wall clock.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        parser: FrameParser,
        sink: FeedSink,
        clock: MarketClock,
        *,
        yield_every: int = 256,
    ) -> None:
        if yield_every < 1:
            raise ValueError(f"yield_every must be >= 1, got {yield_every}")
        existing_recording(path)
        self.path = os.fspath(path)
        self.clock = clock
        self._parser = parser
        self._sink = sink
        self._yield_every = yield_every
        self._read_stats = RecordingReadStats()
        self.timings = FrameTimings()
        self._states: dict[str, FeedState] = {}
        self._frames = 0
        self._bytes = 0
        self._market_frames = 0
        self._handler_errors = 0
        self._last_handler_error = ""
        self._first_recv_ns = 0
        self._last_recv_ns = 0
        self._ran = False
        self._finished = False
        self._task: asyncio.Task[ReplayStats] | None = None

    @property
    def stats(self) -> ReplayStats:
        return ReplayStats(
            frames=self._frames,
            bytes=self._bytes,
            market_frames=self._market_frames,
            handler_errors=self._handler_errors,
            last_handler_error=self._last_handler_error,
            recorded_span_s=(self._last_recv_ns - self._first_recv_ns) / 1e9,
            finished=self._finished,
            recording=dataclasses.replace(self._read_stats),
            parser=MappingProxyType(self._parser.stats.as_dict()),
            first_recv_ns=self._first_recv_ns,
            last_recv_ns=self._last_recv_ns,
        )

    def problem(self) -> RecordingProblem | None:
        """What was wrong with the recording as far as it was read (`RecordingReadStats.problem`);
        once read to the end, a recording none of whose frames is market data the engine takes
        (other symbols, frames the parser rejects) is unreadable too."""
        problem = self._read_stats.problem(self.path)
        if not self._finished or self._market_frames or (problem and problem.unreadable):
            return problem
        rejected = self._parser.stats.rejected
        counts = ", ".join(f"{reason.value} {count:,}" for reason, count in rejected.most_common())
        hint = (
            "; --symbols must name the recording's symbols"
            if RejectReason.UNKNOWN_SYMBOL in rejected
            else ""
        )
        return RecordingProblem(
            self.path,
            True,
            problem is not None and problem.truncated,
            problem.malformed_lines if problem is not None else 0,
            f"{self.path}: unreadable recording: none of its {self._frames:,} frames is market "
            f"data the engine takes (rejected: {counts or 'none; control frames only'}){hint}",
        )

    def state(self, symbol: str) -> FeedState:
        """LIVE once the symbol's first frame was replayed, STOPPED at the end."""
        try:
            return self._states[symbol]
        except KeyError:
            raise KeyError(f"{symbol!r} has not appeared in this replay") from None

    async def start(self) -> None:
        """Replay in a background task; `wait()` returns its stats."""
        if self._task is not None:
            raise RuntimeError("a ReplayFeed can be started only once")
        self.clock.require_loop()
        self._task = asyncio.create_task(self.run(), name="replay-feed")

    async def wait(self) -> ReplayStats:
        if self._task is None:
            raise RuntimeError("the replay was not started")
        await asyncio.wait([self._task])
        return self.stats

    async def stop(self) -> None:
        """Cancel the replay; every symbol seen goes STOPPED."""
        if self._task is None:
            return
        self._task.cancel()
        await asyncio.wait([self._task])

    async def run(self) -> ReplayStats:
        """Replay the whole file; returns when it ends (or raises CancelledError if stopped)."""
        if self._ran:
            raise RuntimeError("a ReplayFeed runs only once")
        self.clock.require_loop()
        self._ran = True
        reason = "replay stopped"
        try:
            await self._replay()
            reason = "end of recording"
            self._finished = True
        finally:
            for symbol in self._states:
                self._set_state(symbol, FeedState.STOPPED, reason, self._last_recv_ns)
            self.clock.follow_wall()  # the engine lives on past the recording at real pace
        span_s = (self._last_recv_ns - self._first_recv_ns) / 1e9
        ended = RecordingEnded(
            self.path, self._frames, self._market_frames, span_s, self.problem(), self._last_recv_ns
        )
        self._emit(ended)
        return self.stats

    async def _replay(self) -> None:
        parse = self._parser.parse
        on_market = self._sink.on_market
        states = self._states
        clock = self.clock
        yield_every = self._yield_every
        # The bench's three clock reads a frame (start, parsed, done), so the figures compare.
        timer = time.perf_counter_ns
        timings = self.timings
        parse_times, totals, trade_times = timings.parse, timings.total, timings.trade
        for recv_ns, raw in iter_recording(self.path, self._read_stats):
            if not self._frames:
                self._first_recv_ns = recv_ns
            self._frames += 1
            self._bytes += len(raw)
            self._last_recv_ns = recv_ns
            if not clock.advance_to(recv_ns):
                await clock.catch_up(recv_ns)  # timers due first run first, in order
            elif self._frames % yield_every == 0:
                await asyncio.sleep(0)  # let stop() and the rest of the loop run
            try:
                started = timer()
                clock.frame_started(started)
                frame = parse(raw, recv_ns)
                parsed = timer()
                kind = type(frame)
                if kind is BookSnapshot or kind is BookUpdate or kind is Trades:
                    self._market_frames += 1
                    if frame.symbol not in states:
                        self._set_state(
                            frame.symbol, FeedState.LIVE, "replay reached the symbol", recv_ns
                        )
                    on_market(frame)
                    done = timer()
                    if kind is Trades:
                        trade_times.record(done - started)
                    else:
                        parse_times.record(parsed - started)
                        totals.record(done - started)
                elif kind is ChannelError:
                    self._emit(frame)
            except Exception as error:  # a parser or sink bug must not end the replay
                self._handler_errors += 1
                self._last_handler_error = f"{type(error).__name__}: {error}"

    def _set_state(self, symbol: str, state: FeedState, reason: str, at_ns: int) -> None:
        if self._states.get(symbol) is state:
            return
        self._states[symbol] = state
        self._emit(FeedStateChanged(symbol, state, reason, at_ns))

    def _emit(self, event: FeedNotice) -> None:
        try:
            self._sink.on_feed_event(event)
        except Exception as error:  # a sink bug must not end the replay
            self._handler_errors += 1
            self._last_handler_error = f"{type(error).__name__}: {error}"
