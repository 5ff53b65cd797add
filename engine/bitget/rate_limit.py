"""Client-side pacing: a sliding-window limiter (per REST endpoint, per websocket session), and
the exponential backoff of REST retries and websocket reconnects."""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections import deque
from collections.abc import Callable


class SlidingWindowRateLimiter:
    """Delays callers so that no `window_s` window holds more than `limit` dispatches.

    A log of the last `limit` dispatch times rather than a token bucket: a bucket that starts
    full lets nearly twice its capacity through around a refill, which is what the exchange
    answers with 429. Callers queue in arrival order (asyncio.Lock is FIFO); nothing is dropped.
    The slot is stamped when `acquire` returns, i.e. just before the request goes out, and the
    lock is not held during the request, so concurrent requests still overlap on the wire.
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
        self._dispatched_at: deque[float] = deque(maxlen=limit)
        self._lock = asyncio.Lock()
        self._recheck = asyncio.Event()

    async def acquire(self, still_wanted: Callable[[], bool] | None = None) -> float | None:
        """Wait for a free slot and take it; returns the seconds spent waiting (0 if none).

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
                if len(self._dispatched_at) < self.limit:
                    break
                ready_at = self._dispatched_at[0] + self.window_s
                if ready_at <= now:
                    break
                delayed = True
                await self._until_recheck(ready_at - now)
            self._dispatched_at.append(now)
            return now - started if delayed else 0.0

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

    async def _until_recheck(self, timeout_s: float) -> None:
        """Wait `timeout_s`, or less when `recheck` is called first."""
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
