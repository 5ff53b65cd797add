"""The engine's clock: what time it is, and how the engine waits.

Live and on the simulator the clock is the system's (`WallClock`) and waiting is asyncio's own.
A replay runs the whole engine in the recording's time (`MarketClock`): the event loop's
`time()` is market time, it stands still while callbacks run, and when nothing is ready the
loop jumps to its next timer (the next frame of the recording is one), paced at the replay's
speed or at once at max speed. Every `asyncio.sleep`, timeout and `call_later` of every
component, and every timestamp taken from `time_ns()`, is then market time, so a recording
plays out the same at `--speed 1`, `20` and `max` (prior art: PyPI's `looptime` for tests,
NautilusTrader's live and test clocks).

Waiting on the real world (an fsync, Kev's llama-server) must not let market time run ahead:
`real_wait` holds the clock still while it waits, with a time limit on the real clock. CPU cost
(stage latencies, the reaction) is always measured on the real clock (`time.perf_counter_ns`).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from collections.abc import Awaitable, Callable, Coroutine, Sized
from typing import Any, ClassVar, TypeVar

from engine.market_loop import MarketTimeLoop

_T = TypeVar("_T")

_MIN_PACING_WAIT_S = 0.0005
"""Ahead of the pace by less than this, a timer runs at once: a shorter sleep costs more."""

_POLL_INTERVAL_S = 0.01
"""When the loop need not wait, it still polls its sockets at least this often in real time:
a poll is a system call (~20 us on the development VM) and at max speed the loop turns tens of
thousands of times a second; other threads' callbacks reach it without one, and a request to a
server is held, so waits on the real clock anyway."""


class WallClock:
    """The system clock, for live trading and the simulator."""

    market = False
    time_ns: ClassVar[Callable[[], int]] = staticmethod(time.time_ns)

    def run(self, main: Coroutine[Any, Any, _T]) -> _T:
        """Run the engine's coroutine on a fresh event loop."""
        return asyncio.run(main)

    def hold(self) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()

    async def real_wait(self, awaitable: Awaitable[_T], timeout_s: float | None) -> _T:
        """Await with a time limit, None for none (raises TimeoutError)."""
        return await asyncio.wait_for(awaitable, timeout_s)

    def reaction_ns(self, recv_ns: int, sent_ns: int) -> int:
        """Receive stamp to the bytes leaving: both are read from this clock."""
        return sent_ns - recv_ns


class MarketClock:
    """A recording's time, through a `MarketTimeLoop` (`new_loop`); one loop per clock.

    `start_ns` is the market time the engine starts at (the recording's first receive time);
    `speed` is how many market seconds pass per real second, None for as fast as the engine
    goes. `follow_wall()` switches to real-time pacing once the recording has ended, so the
    engine's periodic timers do not spin while it waits for the operator.
    """

    market = True

    def __init__(self, start_ns: int, speed: float | None = None) -> None:
        if speed is not None and not (math.isfinite(speed) and speed > 0):
            raise ValueError(f"speed must be None (as fast as possible) or > 0, got {speed}")
        self._origin_ns = start_ns
        self._now_ns = start_ns
        self._speed = speed
        self._holds = 0
        self._loop: MarketTimeLoop | None = None
        self._ready: Sized = ()
        """The loop's ready callbacks (its own deque, read without a call)."""
        self._timer_floor_s = -math.inf
        """At most the loop time of the earliest live timer: `timer_pushed` lowers it, and
        `advance_to` sets it when it looks at the heap. A frame before it needs no look."""
        self._pace_market_ns = start_ns
        self._pace_real_s = time.perf_counter()
        self._real_timers: list[tuple[float, int, asyncio.Handle]] = []
        self._real_timer_ids = itertools.count()
        self._frame_perf_ns = 0
        self._polled_s = 0.0
        self.jumps = 0
        """How many times the loop jumped ahead to its next timer (for the benchmarks)."""
        self.paced_waits = 0
        """How many times the loop waited on the real clock to keep the pace."""

    # Reading the time

    def time_ns(self) -> int:
        """Market epoch nanoseconds."""
        return self._now_ns

    def loop_time(self) -> float:
        """The loop's `time()`: market seconds since the start (small, so a float is exact)."""
        return (self._now_ns - self._origin_ns) / 1e9

    @property
    def speed(self) -> float | None:
        return self._speed

    def new_loop(self) -> MarketTimeLoop:
        if self._loop is not None:
            raise RuntimeError("a MarketClock drives one event loop")
        self._loop = loop = MarketTimeLoop(self)
        self._ready = loop.ready_callbacks()
        return loop

    def run(self, main: Coroutine[Any, Any, _T]) -> _T:
        """Run the engine's coroutine on this clock's loop."""
        with asyncio.Runner(loop_factory=self.new_loop) as runner:
            return runner.run(self._joining_threads(main))

    async def _joining_threads(self, main: Coroutine[Any, Any, _T]) -> _T:
        try:
            return await main
        finally:
            # The Runner joins the default executor's threads with a time limit on the loop's
            # clock (300 s from Python 3.12), which market time passes at once: the join gave
            # up with a RuntimeWarning and the clock jumped 300 s. Join them held, first.
            async with self.hold():
                await asyncio.get_running_loop().shutdown_default_executor()

    def require_loop(self) -> None:
        """Refuse to run a replay on a loop whose time is not this clock's."""
        if self._loop is None or asyncio.get_running_loop() is not self._loop:
            raise RuntimeError("a replay runs on its MarketClock's loop: use clock.run(main)")

    # Moving it

    def advance_to(self, at_ns: int) -> bool:
        """Move market time to `at_ns` at once, when nothing can happen in between: no callback
        ready, no timer due before it, nothing held, and no pacing wait owed. The replay uses
        it to play a frame without a trip through the loop; False means: await `catch_up`."""
        if at_ns <= self._now_ns:
            return True
        if self._holds or self._ready:
            return False
        at_s = (at_ns - self._origin_ns) / 1e9
        if at_s < self._timer_floor_s and self._speed is None:
            self._now_ns = at_ns  # most frames: no timer due before them, no pace to keep
            return True
        loop = self._loop
        if loop is None:
            return False
        while (next_s := loop.next_timer_s()) <= at_s:
            if not self._run_due_timers(loop, next_s, at_ns) or self._ready:
                return False
        self._timer_floor_s = next_s
        if self._speed is not None and self._real_wait_s(at_ns) >= _MIN_PACING_WAIT_S:
            return False
        self._now_ns = at_ns
        return True

    def _run_due_timers(self, loop: MarketTimeLoop, next_s: float, before_ns: int) -> bool:
        """One turn of the loop, run here: jump to the next timer (due at loop time `next_s`)
        and run the timers due then, as `_run_once` would with nothing ready and no I/O, when
        that timer is due well before `before_ns` (the frame's time, whose own timer would
        come later). A periodic check then costs its callback, not the replay's step split
        into four turns of the loop.
        False (nothing run) when the loop must turn itself: it is stopping, a real timer is
        pending, its sockets are due a poll, or the pace owes a wait."""
        if (
            loop.stopping()
            or self._real_timers
            or time.perf_counter() - self._polled_s >= _POLL_INTERVAL_S
        ):
            return False
        timeout_s = next_s - loop.time()
        if timeout_s > 0:
            target_ns = self._now_ns + max(1, round(timeout_s * 1e9))  # as `_select_timeout`
            if target_ns >= before_ns - 1:
                return False  # due with the frame: the loop orders the two timers
            if self._speed is not None and self._real_wait_s(target_ns) >= _MIN_PACING_WAIT_S:
                return False
            self._now_ns = target_ns
            self.jumps += 1
        for handle in loop.pop_due_timers():
            if not handle.cancelled():  # an earlier one of the batch may have cancelled it
                handle._run()
        return True

    async def catch_up(self, at_ns: int) -> None:
        """After `advance_to(at_ns)` said no: while callbacks ready to run are all that bar the
        way, let the loop run them (a turn each; a sleep would cost a timer, a future and two
        turns) and try again; then wait through the loop (`sleep_until`) for the rest. An
        order's task, sent on one frame, usually runs before the next this way."""
        while self._ready and not self._holds:
            await asyncio.sleep(0)  # this task runs again after what was ready before it
            if self.advance_to(at_ns):
                return
        await self.sleep_until(at_ns)

    async def sleep_until(self, at_ns: int) -> None:
        """Wait, through the loop, until market time reaches `at_ns`; first among the timers
        due at that same instant (the replay's next frame: market data before the timers of
        its nanosecond, whether the loop or `advance_to` ran the timers before it)."""
        delay_s = (at_ns - self._now_ns) / 1e9
        if delay_s > 0:
            loop = self._loop
            assert loop is not None  # the replay checked `require_loop`
            woken = loop.create_future()
            timer = loop.call_first_at(loop.time() + delay_s, _wake, woken)
            try:
                await woken
            finally:
                timer.cancel()
        if at_ns > self._now_ns:  # the float round trip may land a nanosecond short
            self._now_ns = at_ns

    def follow_wall(self) -> None:
        """From now on market time runs with real time (after the end of a recording)."""
        self._speed = 1.0
        self._reset_pace()

    # Waiting on the real world

    def hold(self) -> _Held:
        """Market time stands still inside (an fsync, a request to a server): only real waits
        may be awaited in it, never a market-time sleep."""
        return _Held(self)

    async def real_wait(self, awaitable: Awaitable[_T], timeout_s: float | None) -> _T:
        """Await with market time held, within `timeout_s` of real time (TimeoutError; None
        waits as long as it takes). Only for waits on the real world: a market-time sleep
        inside would never end."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(awaitable)
        expired = False

        def expire() -> None:
            nonlocal expired
            if not task.done():
                expired = True
                task.cancel()

        timer = None if timeout_s is None else self._call_after_real(timeout_s, expire, loop)
        try:
            async with self.hold():
                try:
                    return await task
                except asyncio.CancelledError:
                    if expired:
                        raise TimeoutError(f"no answer within {timeout_s:g} s") from None
                    raise
        finally:
            if timer is not None:
                timer.cancel()
            if not task.done():
                task.cancel()

    # The reaction, on the real clock

    def frame_started(self, perf_ns: int) -> None:
        """The replay calls this as it hands a frame to the parser (`perf_ns` from
        `time.perf_counter_ns`): the reaction to it is the CPU time from here, market time
        standing still while the frame is processed."""
        self._frame_perf_ns = perf_ns

    def reaction_ns(self, recv_ns: int, sent_ns: int) -> int:
        """For a request sent on the frame's own stack: the CPU time since the frame started."""
        del recv_ns, sent_ns  # both are the frame's market time
        return time.perf_counter_ns() - self._frame_perf_ns

    # For the loop

    def held(self) -> bool:
        return self._holds > 0

    def _real_wait_s(self, at_ns: int) -> float:
        speed = self._speed
        if speed is None:
            return 0.0
        due_s = self._pace_real_s + (at_ns - self._pace_market_ns) / 1e9 / speed
        return due_s - time.perf_counter()

    def _reset_pace(self) -> None:
        self._pace_market_ns = self._now_ns
        self._pace_real_s = time.perf_counter()

    def _paced_now_ns(self, target_ns: int) -> int:
        """Where market time has got to by the real clock, at most `target_ns` (a wake-up by
        real I/O before the next timer, at a finite speed)."""
        speed = self._speed
        assert speed is not None
        elapsed_ns = (time.perf_counter() - self._pace_real_s) * speed * 1e9
        return max(self._now_ns, min(target_ns, self._pace_market_ns + int(elapsed_ns)))

    def _call_after_real(
        self, delay_s: float, callback: Callable[[], None], loop: asyncio.AbstractEventLoop
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, (), loop)
        heapq.heappush(
            self._real_timers, (time.perf_counter() + delay_s, next(self._real_timer_ids), handle)
        )
        return handle

    def _real_timeout_s(self) -> float | None:
        timers = self._real_timers
        while timers and timers[0][2].cancelled():
            heapq.heappop(timers)
        if not timers:
            return None
        return max(0.0, timers[0][0] - time.perf_counter())

    def _due_real_timers(self) -> list[asyncio.Handle]:
        timers = self._real_timers
        if not timers:  # the usual case in a replay: no clock read at every loop step
            return []
        due, now = [], time.perf_counter()
        while timers and (timers[0][2].cancelled() or timers[0][0] <= now):
            handle = heapq.heappop(timers)[2]
            if not handle.cancelled():
                due.append(handle)
        return due

    def timer_pushed(self, when_s: float) -> None:
        """The loop's one scheduling path tells every timer it pushes (keeps the floor)."""
        if when_s < self._timer_floor_s:
            self._timer_floor_s = when_s

    def select(
        self, timeout: float | None, poll: Callable[[float | None], list[tuple[Any, int]]]
    ) -> list[tuple[Any, int]]:
        """The loop's selector's `select` (`poll` is the system's): block on the real clock as
        the pacing says, and move market time to the next timer when nothing real happened
        meanwhile."""
        loop = self._loop
        assert loop is not None  # only its own loop's selector calls this
        wait_s, target_ns = self._select_timeout(timeout)
        if target_ns is not None and wait_s:
            self.paced_waits += 1
        if wait_s == 0 and time.perf_counter() - self._polled_s < _POLL_INTERVAL_S:
            events = []  # polled a moment ago: nothing to wait for, so no system call
        else:
            events = poll(wait_s)
            self._polled_s = time.perf_counter()
        for handle in self._due_real_timers():
            loop._add_ready(handle)
        if target_ns is not None:
            if events and self._speed is not None:
                self._now_ns = self._paced_now_ns(target_ns)
            elif not events and not self._ready:
                self._now_ns = target_ns
                self.jumps += 1
        return events

    def _select_timeout(self, timeout: float | None) -> tuple[float | None, int | None]:
        """For the loop's wait: (real seconds to block in select, market ns to move to after it
        when nothing woke it early; None stays)."""
        if timeout is not None and timeout <= 0:
            return 0.0, None  # callbacks are ready or timers due: run them now
        real_timeout = self._real_timeout_s()
        if timeout is None or self._holds:
            return real_timeout, None  # no timer, or held: wait for the real world
        # Nearest whole ns keeps a frame's own timer exact; a timer due less than half a ns
        # ahead (float rounding) still moves the clock, or its owner would wait forever.
        target_ns = self._now_ns + max(1, round(timeout * 1e9))
        wait_s = max(0.0, self._real_wait_s(target_ns))
        if wait_s < _MIN_PACING_WAIT_S:
            wait_s = 0.0
        if real_timeout is not None:
            wait_s = min(wait_s, real_timeout)
        return wait_s, target_ns


class _Held:
    """`MarketClock.hold()`: a class, not a generator, so that the clock compiles (mypyc has no
    async generators)."""

    def __init__(self, clock: MarketClock) -> None:
        self._clock = clock

    async def __aenter__(self) -> None:
        self._clock._holds += 1

    async def __aexit__(self, *exc_info: object) -> None:
        clock = self._clock
        clock._holds -= 1
        if not clock._holds:
            clock._reset_pace()  # the time held is not owed to the pace


class Periodic:
    """`callback` every `interval_s` of the running loop's time from now on, until `cancel()`:
    one timer callback a period, where a task sleeping in a loop costs a future, a timer and a
    task step (a replay's hedge and maintenance checks wake some 10,000 times). The callback
    says itself what broke: an exception it lets out goes to the loop's handler, and the
    period goes on."""

    __slots__ = ("_callback", "_handle", "_interval_s", "_loop")

    def __init__(self, interval_s: float, callback: Callable[[], None]) -> None:
        self._callback = callback
        self._interval_s = interval_s
        self._loop = asyncio.get_running_loop()
        self._handle = self._loop.call_later(interval_s, self._run)

    def _run(self) -> None:
        try:
            self._callback()
        finally:  # the next period is timed from this one's end, as a sleep after the work was
            if not self._handle.cancelled():  # not cancelled by the callback itself
                self._schedule_next()

    def _schedule_next(self) -> None:
        loop = self._loop
        if isinstance(loop, MarketTimeLoop):
            loop.call_again(self._handle, self._interval_s)
        else:
            self._handle = loop.call_later(self._interval_s, self._run)

    def cancel(self) -> None:
        self._handle.cancel()


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


EngineClock = WallClock | MarketClock
"""What every component is given: `time_ns()`, `hold()`, `real_wait()`, `reaction_ns()`."""
