"""The event loop of a replay: asyncio's, with its `MarketClock`'s market time.

Its `time()` is market time; its selector lets the clock decide how long to block on the real
clock and where market time moves when nothing is ready (`MarketClock.select`); its timers due
at the same instant run in the order they were scheduled. Apart from `engine.clock` because
asyncio's classes cannot be compiled (`backtest --compiled` compiles the clock); it knows the
clock only as `LoopClock`, so the two modules do not import each other.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import math
import selectors
from collections.abc import Callable, Sized
from typing import Any, Protocol


class LoopClock(Protocol):
    """What the loop asks of its clock (`engine.clock.MarketClock`)."""

    def loop_time(self) -> float: ...

    def timer_pushed(self, when_s: float) -> None:
        """A timer due at loop time `when_s` went onto the heap."""

    def select(
        self, timeout: float | None, poll: Callable[[float | None], list[tuple[Any, int]]]
    ) -> list[tuple[Any, int]]: ...


_FIRST = 1 << 62
"""Subtracted from a timer's scheduling number to run it first among those due with it."""


class _MarketTimer(asyncio.TimerHandle):
    """Ordered by due time, then by when it was scheduled. asyncio orders timers by due time
    alone, so timers due at the same instant ran in whatever order the heap's history left
    them: the paper venue's answers to a cancel and an order sent at once came back either
    way round depending on which other timers had passed through the heap (the replay's own,
    at another speed, or with `advance_to` running due timers itself)."""

    __slots__ = ("_order",)

    def __lt__(self, other: asyncio.TimerHandle) -> bool:
        when, other_when = self._when, other._when  # type: ignore[attr-defined]
        return when < other_when or (when == other_when and self._order < other._order)  # type: ignore[attr-defined]


class _MarketSelector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """The loop's selector: its clock decides how long to block on the real clock and where
    market time moves (`MarketClock.select`); this polls the sockets when told to."""

    def __init__(self, clock: LoopClock) -> None:
        super().__init__()
        self._clock = clock
        self._poll = super().select

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return self._clock.select(timeout, self._poll)


class MarketTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose `time()` is its `MarketClock`'s market time."""

    def __init__(self, clock: LoopClock) -> None:
        selector = _MarketSelector(clock)
        super().__init__(selector)
        self.clock = clock
        # asyncio runs timers due within the clock's resolution; market time is in whole ns.
        self._clock_resolution = 1e-9
        self._timer_order = itertools.count()

    def time(self) -> float:
        return self.clock.loop_time()

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: object,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        return self._schedule(when, callback, args, context, next(self._timer_order))

    def call_first_at(
        self, when: float, callback: Callable[..., object], *args: object
    ) -> asyncio.TimerHandle:
        """`call_at`, run before the other timers due at the same instant."""
        return self._schedule(when, callback, args, None, next(self._timer_order) - _FIRST)

    def _schedule(
        self,
        when: float,
        callback: Callable[..., object],
        args: tuple[object, ...],
        context: contextvars.Context | None,
        order: int,
    ) -> asyncio.TimerHandle:
        # asyncio's own call_at, with an ordered timer.
        if when is None:
            raise TypeError("when cannot be None")
        self._check_closed()  # type: ignore[attr-defined]
        if self._debug:  # type: ignore[attr-defined]
            self._check_thread()  # type: ignore[attr-defined]
            self._check_callback(callback, "call_at")  # type: ignore[attr-defined]
        timer = _MarketTimer(when, callback, args, self, context)
        timer._order = order
        if timer._source_traceback:
            del timer._source_traceback[-1]
        self._push(timer, when)
        return timer

    def call_again(self, timer: asyncio.TimerHandle, delay_s: float) -> None:
        """Schedule `timer`, which has run, to run again `delay_s` from now: a periodic timer
        without a new handle (and a context copy) every period."""
        when = self.time() + delay_s
        timer._when = when  # type: ignore[attr-defined]
        timer._order = next(self._timer_order)  # type: ignore[attr-defined]
        self._push(timer, when)

    def _push(self, timer: asyncio.TimerHandle, when: float) -> None:
        self.clock.timer_pushed(when)
        heapq.heappush(self._scheduled, timer)  # type: ignore[attr-defined]
        timer._scheduled = True  # type: ignore[attr-defined]

    def ready_callbacks(self) -> Sized:
        """The deque of ready callbacks itself (asyncio keeps the one it made)."""
        return self._ready  # type: ignore[attr-defined, no-any-return]

    def next_timer_s(self) -> float:
        """The loop time of the earliest live timer, inf when there is none."""
        scheduled = self._scheduled  # type: ignore[attr-defined]
        while scheduled and scheduled[0]._cancelled:
            # asyncio drops cancelled timers lazily (as its _run_once does); the head must be live.
            self._timer_cancelled_count -= 1  # type: ignore[attr-defined]
            heapq.heappop(scheduled)._scheduled = False
        return scheduled[0]._when if scheduled else math.inf

    def stopping(self) -> bool:
        return bool(self._stopping)  # type: ignore[attr-defined]

    def pop_due_timers(self) -> list[asyncio.TimerHandle]:
        """The timers due now, in the order `_run_once` takes them off the heap."""
        scheduled = self._scheduled  # type: ignore[attr-defined]
        end_s = self.time() + self._clock_resolution
        due = []
        while scheduled and scheduled[0]._when < end_s:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False
            due.append(handle)
        return due

    def _add_ready(self, handle: asyncio.Handle) -> None:
        self._ready.append(handle)  # type: ignore[attr-defined]
