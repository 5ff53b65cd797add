"""MarketClock: a recording's time for everything on the loop, the same at every speed."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest

from engine.clock import MarketClock, Periodic, WallClock

START_NS = 1_700_000_000_123_456_789


def run(clock: MarketClock, main):
    return clock.run(main())


async def _workers(clock: MarketClock, seed: int) -> list[tuple[int, str]]:
    """Tasks that sleep, time out and call later at random market intervals."""
    rng = random.Random(seed)
    happened: list[tuple[int, str]] = []
    loop = asyncio.get_running_loop()

    async def sleeper(name: str) -> None:
        for _ in range(40):
            await asyncio.sleep(rng.choice((0.0, 0.001, 0.05, 0.3, 2.0)))
            happened.append((clock.time_ns(), name))

    async def timing_out() -> None:
        for _ in range(10):
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(asyncio.Event().wait(), 0.7)
            happened.append((clock.time_ns(), "timeout"))

    def note(name: str) -> None:
        happened.append((clock.time_ns(), name))

    for index in range(5):
        loop.call_later(index * 0.25, note, f"later{index}")
    await asyncio.gather(*(sleeper(f"s{i}") for i in range(4)), timing_out())
    return happened


def test_timers_run_in_market_order_and_the_same_at_every_speed():
    results = []
    for speed in (None, 400.0):
        clock = MarketClock(START_NS, speed)
        results.append(run(clock, lambda clock=clock: _workers(clock, 3)))
    at_max, paced = results
    assert at_max == paced
    times = [at for at, _ in at_max]
    assert times == sorted(times)
    assert times[0] >= START_NS and times[-1] - START_NS > 10 * 1_000_000_000


def test_hours_of_market_time_pass_at_once_at_max_speed():
    clock = MarketClock(START_NS)

    async def main() -> float:
        started = time.perf_counter()
        await asyncio.sleep(3 * 3600)
        return time.perf_counter() - started

    real_s = run(clock, main)
    assert clock.time_ns() == START_NS + 3 * 3600 * 1_000_000_000
    assert real_s < 5  # it did not wait three hours


def test_a_finite_speed_paces_market_time_on_the_real_clock():
    clock = MarketClock(START_NS, speed=10.0)

    async def main() -> float:
        started = time.perf_counter()
        await asyncio.sleep(1.0)
        return time.perf_counter() - started

    assert run(clock, main) >= 0.095  # one market second at 10x is a tenth of a real one


def test_a_held_clock_does_not_move_while_the_real_world_answers():
    clock = MarketClock(START_NS)

    async def main() -> tuple[int, int, list[str]]:
        order: list[str] = []

        async def market_timer() -> None:
            await asyncio.sleep(5.0)
            order.append("market timer")

        timer = asyncio.create_task(market_timer())
        await asyncio.sleep(0)
        before = clock.time_ns()
        answer = await clock.real_wait(asyncio.to_thread(time.sleep, 0.05), timeout_s=10)
        order.append("real answer")
        during = clock.time_ns()
        await timer
        assert answer is None
        return before, during, order

    before, during, order = run(clock, main)
    assert before == during == START_NS
    assert order == ["real answer", "market timer"]
    assert clock.time_ns() == START_NS + 5_000_000_000


def test_a_real_wait_times_out_on_the_real_clock_with_market_time_held():
    clock = MarketClock(START_NS)

    async def main() -> float:
        started = time.perf_counter()
        with pytest.raises(TimeoutError, match=r"within 0\.05 s"):
            await clock.real_wait(asyncio.Event().wait(), timeout_s=0.05)
        return time.perf_counter() - started

    assert run(clock, main) >= 0.045
    assert clock.time_ns() == START_NS


def test_a_periodic_call_runs_every_period_in_market_time_through_its_failures_until_cancelled():
    clock = MarketClock(START_NS, None)
    called: list[int] = []

    def check() -> None:
        called.append(clock.time_ns() - START_NS)
        if len(called) == 2:
            raise RuntimeError("a failing check")

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, _context: None)
        periodic = Periodic(0.25, check)
        await asyncio.sleep(1.1)
        periodic.cancel()
        await asyncio.sleep(1.0)

    run(clock, main)
    assert called == [250_000_000, 500_000_000, 750_000_000, 1_000_000_000]


@pytest.mark.parametrize("market", [True, False])
def test_a_periodic_call_cancelled_by_its_own_callback_runs_no_more(market):
    clock = MarketClock(START_NS, None) if market else WallClock()
    called: list[int] = []
    periodic: list[Periodic] = []

    def check() -> None:
        called.append(len(called))
        if len(called) == 3:
            periodic[0].cancel()

    async def main() -> None:
        periodic.append(Periodic(0.01, check))
        await asyncio.sleep(0.1)
        assert asyncio.get_running_loop()._scheduled == []  # nothing left behind

    clock.run(main())
    assert called == [0, 1, 2]


def test_timers_due_at_the_same_instant_run_in_the_order_they_were_scheduled():
    clock = MarketClock(START_NS)
    ran: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        rng = random.Random(7)
        for index in range(60):
            loop.call_at(5.0, ran.append, index)
            for _ in range(rng.randrange(4)):  # other timers come and go around them
                loop.call_at(rng.uniform(0.0, 9.0), lambda: None)
            if rng.random() < 0.5:
                await asyncio.sleep(rng.uniform(0.0, 0.05))
        await asyncio.sleep(10.0)

    run(clock, main)
    assert ran == list(range(60))


def test_advance_to_refuses_to_pass_a_ready_callback_or_a_held_clock():
    clock = MarketClock(START_NS)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        assert clock.advance_to(START_NS + 500_000_000)  # nothing before this
        assert clock.time_ns() == START_NS + 500_000_000
        loop.call_soon(lambda: None)
        assert not clock.advance_to(START_NS + 600_000_000)  # a callback is ready
        await asyncio.sleep(0)
        loop.call_later(1.0, lambda: None).cancel()
        assert clock.advance_to(START_NS + 3_000_000_000)  # the cancelled timer is no bar
        async with clock.hold():
            assert not clock.advance_to(START_NS + 4_000_000_000)
        assert clock.time_ns() == START_NS + 3_000_000_000

    run(clock, main)


def test_advance_to_runs_the_timers_due_before_it_at_their_own_times():
    clock = MarketClock(START_NS)
    happened: list[tuple[int, str]] = []

    def note(name: str) -> None:
        happened.append((clock.time_ns() - START_NS, name))

    async def main() -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(0)  # the loop has just polled its sockets: no poll is due
        loop.call_later(1.5, note, "second")
        loop.call_later(1.0, note, "first")
        loop.call_later(1.0, lambda: loop.call_later(0.25, note, "scheduled by a timer"))
        assert clock.advance_to(START_NS + 2_000_000_000)
        note("frame")
        # A timer that wakes a task leaves work ready: the loop must run it before the frame.
        waiting = asyncio.ensure_future(asyncio.sleep(0.5))
        await asyncio.sleep(0)
        assert not clock.advance_to(START_NS + 3_000_000_000)
        assert clock.time_ns() == START_NS + 2_500_000_000 and not waiting.done()
        await clock.sleep_until(START_NS + 3_000_000_000)
        assert waiting.done()
        # Due with the frame (or a nanosecond before it): the loop orders the two timers.
        loop.call_later(0.999_999_999, note, "with the frame")
        assert not clock.advance_to(START_NS + 4_000_000_000)
        assert clock.time_ns() == START_NS + 3_000_000_000

    run(clock, main)
    assert happened == [
        (1_000_000_000, "first"),
        (1_250_000_000, "scheduled by a timer"),
        (1_500_000_000, "second"),
        (2_000_000_000, "frame"),
    ]


def test_frames_played_through_advance_to_see_the_same_timers_as_through_the_loop():
    """The replay's shortcuts change how many turns the loop takes, never what runs when: a
    frame waits through the loop, or moves the clock at once (`advance_to`) and otherwise
    waits (`sleep_until`), or lets what is ready run first (`catch_up`)."""

    async def play(clock: MarketClock, wait: str) -> list[list[tuple[int, str]]]:
        rng = random.Random(11)
        workers = asyncio.ensure_future(_workers(clock, 5))
        in_order: list[tuple[int, str]] = []  # frames, ticks and answers, as they ran
        periodic = Periodic(0.2, lambda: in_order.append((clock.time_ns(), "tick")))

        async def order(frame: int) -> None:  # as the paper venue answers one, later
            in_order.append((clock.time_ns(), f"sent {frame}"))
            await asyncio.sleep(rng.choice((0.0, 0.000_5, 0.005)))
            in_order.append((clock.time_ns(), f"answered {frame}"))

        at_ns = START_NS
        orders = []
        for frame in range(3_000):
            at_ns += rng.choice((0, 1, 1_000, 2_000_000, 37_000_000, 250_000_000))
            if wait == "loop" or not clock.advance_to(at_ns):
                await (clock.catch_up if wait == "catch_up" else clock.sleep_until)(at_ns)
            in_order.append((clock.time_ns(), "frame"))
            if frame % 3 == 0:
                orders.append(asyncio.ensure_future(order(frame)))
            if frame % 64 == 0:
                await asyncio.sleep(0)
        periodic.cancel()
        await asyncio.gather(*orders)
        return [in_order, await workers]

    results = {}
    for wait in ("loop", "sleep_until", "catch_up"):
        clock = MarketClock(START_NS)
        results[wait] = run(clock, lambda clock=clock, wait=wait: play(clock, wait))
    assert results["sleep_until"] == results["loop"]
    assert results["catch_up"] == results["loop"]
    assert sum(name == "tick" for _, name in results["loop"][0]) > 100
    assert sum(name.startswith("answered") for _, name in results["loop"][0]) == 1_000


def test_sleep_until_lands_on_the_exact_nanosecond():
    clock = MarketClock(START_NS)
    target = START_NS + 1_234_567_891

    async def main() -> None:
        asyncio.get_running_loop().call_later(0.5, lambda: None)  # forces a trip through the loop
        await clock.sleep_until(target)

    run(clock, main)
    assert clock.time_ns() == target


def test_another_thread_wakes_a_loop_that_has_no_timer():
    clock = MarketClock(START_NS)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        woken = loop.create_future()
        threading.Timer(0.05, lambda: loop.call_soon_threadsafe(woken.set_result, 7)).start()
        return await woken

    assert run(clock, main) == 7
    assert clock.time_ns() == START_NS


def test_after_follow_wall_a_periodic_timer_runs_at_real_pace_not_in_a_spin():
    clock = MarketClock(START_NS)

    async def main() -> int:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.05)
                ticks += 1

        clock.follow_wall()
        task = asyncio.create_task(tick())
        await clock.real_wait(asyncio.to_thread(time.sleep, 0.3), timeout_s=5)
        await asyncio.sleep(0.25)
        task.cancel()
        return ticks

    assert run(clock, main) <= 8  # 0.25 s at 0.05 s a tick: ~5, not thousands


def test_the_reaction_is_cpu_time_from_the_frame_in_a_replay_and_the_stamps_live():
    clock = MarketClock(START_NS)
    clock.frame_started(time.perf_counter_ns())
    spent = clock.reaction_ns(START_NS, START_NS)
    assert 0 <= spent < 1_000_000_000
    assert WallClock().reaction_ns(1_000, 4_000) == 3_000


@pytest.mark.parametrize("speed", [0.0, -1.0, float("inf"), float("nan")])
def test_a_speed_must_be_finite_and_positive(speed):
    with pytest.raises(ValueError, match="speed"):
        MarketClock(START_NS, speed)
