"""The sliding-window limiter that paces REST requests and websocket messages, and the backoff
ceiling that REST retries and websocket reconnects share."""

from __future__ import annotations

import asyncio
import time

from engine.bitget.rate_limit import SlidingWindowRateLimiter, backoff_ceiling_s


async def test_limiter_holds_any_window_to_its_maximum():
    stamps: list[float] = []

    def clock() -> float:
        stamps.append(time.monotonic())
        return stamps[-1]

    limiter = SlidingWindowRateLimiter(3, 0.1, clock)
    sent_at = []

    async def send() -> None:
        await limiter.acquire()
        sent_at.append(stamps[-1])  # the slot's stamp: acquire's last reading of the clock

    await asyncio.gather(*(send() for _ in range(9)))
    assert len(sent_at) == 9
    for first, fourth in zip(sent_at, sent_at[3:], strict=False):
        assert fourth - first >= 0.1


def test_backoff_ceiling_doubles_from_the_first_failure_up_to_its_cap():
    assert [backoff_ceiling_s(attempt, 0.5, 30.0) for attempt in (0, 1, 2, 3, 7, 8)] == [
        0.5,
        0.5,
        1.0,
        2.0,
        30.0,
        30.0,
    ]
    assert backoff_ceiling_s(10_000, 0.5, 30.0) == 30.0
