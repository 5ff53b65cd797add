"""Client-side pacing: a sliding-window limiter (per REST endpoint, per websocket session), and
the exponential backoff of REST retries and websocket reconnects."""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections import deque
from collections.abc import Callable
from typing import overload


class RateSlot:
    """One dispatch's place in a limiter's window, taken by `acquire`. Leaving its `with` block
    (the request answered, failed or never sent) settles it: its window starts then."""

    __slots__ = ("_limiter", "_settled", "waited_s")

    def __init__(self, limiter: SlidingWindowRateLimiter, waited_s: float) -> None:
        self._limiter = limiter
        self._settled = False
        self.waited_s = waited_s
        """Seconds the caller waited for it (0 if none)."""

    def __enter__(self) -> RateSlot:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.settle()

    def settle(self) -> None:
        """The request is done (answered, failed or never sent); its window starts now. Once."""
        if not self._settled:
            self._settled = True
            self._limiter._settle()


class SlidingWindowRateLimiter:
    """Delays callers so that no `window_s` window holds more than `limit` dispatches.

    A log of the last `limit` dispatches rather than a token bucket: a bucket that starts full
    lets nearly twice its capacity through around a refill, which is what the exchange answers
    with 429. Callers queue in arrival order (asyncio.Lock is FIFO); nothing is dropped. The
    lock is not held during the request, so concurrent requests still overlap on the wire.

    A slot counts from when it is settled, not from when it was taken: the exchange stamps a
    request when it arrives, which can be long after it left (a cold connection's handshake, a
    busy event loop), and its answer is the latest moment it can have arrived. A request still
    in flight holds its slot, so the next `limit` cannot be squeezed into its window.
    """

    def __init__(
        self, limit: int, window_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        if not window_s > 0:
            raise ValueError(f"window_s must be > 0, got {window_s}")
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        # Settle times, oldest first; with the slots in flight, never more than `limit` in all.
        self._settled_at: deque[float] = deque()
        self._in_flight = 0
        self._lock = asyncio.Lock()
        self._recheck = asyncio.Event()

    @overload
    async def acquire(self) -> RateSlot: ...

    @overload
    async def acquire(self, still_wanted: Callable[[], bool] | None) -> RateSlot | None: ...

    async def acquire(self, still_wanted: Callable[[], bool] | None = None) -> RateSlot | None:
        """Wait for a free slot and take it; settle it (`with slot:`) once the request is done.

        Time queued behind other waiting callers counts as waiting. `still_wanted` is asked
        when the caller's turn comes and again on each `recheck` while it waits for a slot:
        once it says no, no slot is taken and None is returned (the request never leaves).
        """
        started = self._clock()
        delayed = self._lock.locked()
        async with self._lock:
            while True:
                if still_wanted is not None and not still_wanted():
                    return None
                now = self._clock()
                ready_at = self._ready_at()
                if ready_at <= now:
                    break
                # With every slot in flight, the first to settle wakes this wait (`_settle`).
                delayed = True
                await self._until_recheck(None if ready_at == math.inf else ready_at - now)
            return self._take(now - started if delayed else 0.0)

    def try_acquire(self) -> RateSlot | None:
        """A slot now, without waiting: None when the window is full or callers are queued
        (the cancel lane, which cannot wait on the reaction's stack, shares its endpoint's
        window with the REST client this way)."""
        return self._take(0.0) if self.has_room() else None

    def has_room(self) -> bool:
        """Whether `try_acquire` would give a slot now."""
        return not self._lock.locked() and self._ready_at() <= self._clock()

    def _ready_at(self) -> float:
        """When the next slot frees: at once with one unused, else when the oldest settled
        slot's window has passed (inf with every slot in flight)."""
        settled_at = self._settled_at
        if self._in_flight + len(settled_at) < self.limit:
            return -math.inf
        return settled_at[0] + self.window_s if settled_at else math.inf

    def _take(self, waited_s: float) -> RateSlot:
        settled_at = self._settled_at
        if self._in_flight + len(settled_at) >= self.limit:
            settled_at.popleft()  # its window has passed (`_ready_at`)
        self._in_flight += 1
        return RateSlot(self, waited_s)

    def _settle(self) -> None:
        self._in_flight -= 1
        self._settled_at.append(self._clock())
        self._recheck.set()

    async def hold(self, delay_s: float, still_wanted: Callable[[], bool]) -> bool:
        """Wait `delay_s` (a refused request's backoff before its next attempt) unless
        `still_wanted`, asked now and on each `recheck`, says no first; whether it still is."""
        loop = asyncio.get_running_loop()
        until = loop.time() + delay_s
        while still_wanted():
            left = until - loop.time()
            if left <= 0:
                return True
            await self._until_recheck(left)
        return False

    async def _until_recheck(self, timeout_s: float | None) -> None:
        """Wait `timeout_s` (None: no end), or less when `recheck` is called first."""
        self._recheck.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._recheck.wait(), timeout_s)

    def recheck(self) -> None:
        """Ask the callers waiting here (for a slot, or out a backoff in `hold`) whether they
        still want to go, now (a cancel-all makes the placements waiting to leave unwanted:
        they give up at once, unsent)."""
        self._recheck.set()


def backoff_ceiling_s(attempt: int, initial_s: float, max_s: float) -> float:
    """The exponential backoff's cap after `attempt` failures (1 = the first): initial_s
    doubled per failure since the first, never above max_s."""
    exponent = min(max(attempt - 1, 0), 64)  # 2**64 * initial is past any sane cap
    return min(max_s, initial_s * 2.0**exponent)


def backoff_delay_s(attempt: int, initial_s: float, max_s: float, rng: random.Random) -> float:
    """Capped exponential delay with equal jitter, drawn from [ceiling / 2, ceiling].

    `attempt` counts failures so far (1 = the first). Half the ceiling is kept so that a retry
    after a rate-limit answer cannot land immediately, while the jitter still spreads callers.
    """
    ceiling = backoff_ceiling_s(attempt, initial_s, max_s)
    return rng.uniform(ceiling / 2.0, ceiling)
