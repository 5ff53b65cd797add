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
        with await limiter.acquire():
            sent_at.append(stamps[-1])  # acquire's last reading of the clock

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


async def test_a_caller_no_longer_wanted_takes_no_slot():
    limiter = SlidingWindowRateLimiter(1, 1.0, lambda: 0.0)
    assert await limiter.acquire(lambda: False) is None
    assert (await limiter.acquire()).waited_s == 0.0, "the slot was left free"


async def test_a_recheck_lets_an_unwanted_caller_leave_at_once_and_the_others_wait_on():
    now = [0.0]
    limiter = SlidingWindowRateLimiter(1, 1.0, lambda: now[0])
    with await limiter.acquire():
        pass
    wanted = [True]
    withdrawn = asyncio.ensure_future(limiter.acquire(lambda: wanted[0]))
    waiting = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0.01)
    assert not withdrawn.done() and not waiting.done()
    wanted[0] = False
    limiter.recheck()
    # The limiter's clock stands still: only the recheck can end the first wait.
    assert await asyncio.wait_for(withdrawn, 5) is None
    await asyncio.sleep(0.01)
    assert not waiting.done(), "the window is still full"
    now[0] = 1.0
    limiter.recheck()
    assert (await asyncio.wait_for(waiting, 5)).waited_s == 1.0


async def test_a_slot_counts_from_when_its_request_is_answered_not_from_when_it_left():
    """The exchange stamps a request when it arrives, which can be long after it left; its
    answer is the latest it can have arrived, so the window runs from there."""
    now = [0.0]
    limiter = SlidingWindowRateLimiter(1, 1.0, lambda: now[0])
    in_flight = await limiter.acquire()
    following = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0.01)
    now[0] = 5.0  # long past the window of the moment it left
    limiter.recheck()
    await asyncio.sleep(0.01)
    assert not following.done(), "a request still in flight holds its slot"
    with in_flight:
        pass  # answered at 5.0
    await asyncio.sleep(0.01)
    assert not following.done(), "its window runs from its answer"
    now[0] = 6.0
    limiter.recheck()
    assert (await asyncio.wait_for(following, 5)).waited_s == 6.0


async def test_the_first_slot_settled_wakes_a_caller_waiting_on_a_window_all_in_flight():
    limiter = SlidingWindowRateLimiter(2, 0.05)
    first, second = await limiter.acquire(), await limiter.acquire()
    following = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0.1)
    assert not following.done()
    with second:
        pass
    await asyncio.sleep(0.01)
    assert not following.done(), "the settled slot's window has only begun"
    slot = await asyncio.wait_for(following, 5)
    assert slot.waited_s >= 0.15
    with first, slot:
        pass
    await asyncio.sleep(0.06)
    assert (await limiter.acquire()).waited_s == 0.0, "free again once settled and old"


async def test_try_acquire_takes_a_free_slot_and_never_jumps_a_queued_caller():
    now = [0.0]
    limiter = SlidingWindowRateLimiter(1, 1.0, lambda: now[0])
    taken = limiter.try_acquire()
    assert taken is not None and not limiter.has_room() and limiter.try_acquire() is None
    with taken:
        pass  # settled at 0.0
    queued = asyncio.ensure_future(limiter.acquire())
    await asyncio.sleep(0.01)
    now[0] = 1.0
    assert limiter.try_acquire() is None, "the queued caller's turn"
    limiter.recheck()
    assert (await asyncio.wait_for(queued, 5)).waited_s == 1.0
