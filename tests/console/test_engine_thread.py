"""EngineThread with a small real async engine: its own thread and loop, calls with results,
errors and timeouts, and clean starts and stops (including failed ones)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from console.engine_thread import EngineThread, EngineThreadConfig, EngineThreadError


class TickingEngine:
    """Counts ticks on its loop, like an engine handling frames."""

    def __init__(self, fail_start: bool = False, fail_stop: bool = False) -> None:
        self.fail_start = fail_start
        self.fail_stop = fail_stop
        self.ticks = 0
        self.thread: threading.Thread | None = None
        self.stopped = False
        self.cancelled = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.thread = threading.current_thread()
        if self.fail_start:
            raise OSError("port 8080 in use")
        self._task = asyncio.create_task(self._tick())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.stopped = True
        if self.fail_stop:
            raise RuntimeError("orders still open")

    async def _tick(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0.001)

    async def ticks_on_loop(self) -> tuple[int, threading.Thread]:
        await asyncio.sleep(0.01)
        return self.ticks, threading.current_thread()

    async def refuse(self) -> None:
        raise ValueError("halted is latched")

    async def hang(self) -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    async def fail_later(self) -> None:
        asyncio.get_running_loop().call_soon(_explode)


def _explode() -> None:
    raise RuntimeError("callback failed")


@pytest.fixture
def engine_thread():
    engine = TickingEngine()
    runner = EngineThread(lambda: engine, EngineThreadConfig(call_timeout_s=2.0))
    runner.start()
    yield runner, engine
    runner.stop()


def test_the_engine_runs_on_its_own_thread(engine_thread):
    runner, engine = engine_thread
    ticks, thread = runner.call(lambda e: e.ticks_on_loop())
    assert ticks > 0
    assert thread is engine.thread is not threading.current_thread()
    assert thread.name == "hft-engine"
    assert runner.running and runner.engine is engine


def test_a_call_raises_what_the_engine_raised(engine_thread):
    runner, _ = engine_thread
    with pytest.raises(ValueError, match="halted is latched"):
        runner.call(lambda e: e.refuse())


def test_a_call_that_takes_too_long_is_cancelled_and_times_out(engine_thread):
    runner, engine = engine_thread
    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"did not answer within 0\.1 s"):
        runner.call(lambda e: e.hang(), timeout_s=0.1)
    assert time.monotonic() - started < 1.5
    deadline = time.monotonic() + 2
    while not engine.cancelled and time.monotonic() < deadline:
        time.sleep(0.005)
    assert engine.cancelled
    assert runner.call(lambda e: e.ticks_on_loop())[0] > 0  # the loop is still fine


def test_calls_from_many_threads_are_all_answered(engine_thread):
    runner, _ = engine_thread
    results: list[int] = []

    def ask() -> None:
        results.append(runner.call(lambda e: e.ticks_on_loop())[0])

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert len(results) == 8


def test_stop_stops_the_engine_and_later_calls_are_refused():
    engine = TickingEngine()
    runner = EngineThread(lambda: engine)
    runner.start()
    runner.stop()
    assert engine.stopped and not runner.running
    with pytest.raises(EngineThreadError, match="not running"):
        runner.call(lambda e: e.ticks_on_loop())
    with pytest.raises(EngineThreadError, match="not running"):
        _ = runner.engine
    runner.stop()  # a second stop is harmless


def test_a_failed_start_raises_and_releases_what_it_took():
    engine = TickingEngine(fail_start=True)
    runner = EngineThread(lambda: engine)
    with pytest.raises(EngineThreadError, match="failed to start: port 8080 in use"):
        runner.start()
    assert engine.stopped and not runner.running


def test_a_failing_factory_is_a_failed_start():
    def factory() -> TickingEngine:
        raise ValueError("no model file")

    runner = EngineThread(factory)
    with pytest.raises(EngineThreadError, match="no model file"):
        runner.start()


def test_a_failed_stop_is_reported():
    runner = EngineThread(lambda: TickingEngine(fail_stop=True))
    runner.start()
    with pytest.raises(EngineThreadError, match="failed to stop cleanly: orders still open"):
        runner.stop()


def test_start_twice_is_refused(engine_thread):
    runner, _ = engine_thread
    with pytest.raises(EngineThreadError, match="already started"):
        runner.start()


def test_a_call_from_the_engine_thread_is_refused(engine_thread):
    runner, _ = engine_thread

    async def nested(engine: TickingEngine) -> None:
        runner.call(lambda e: e.ticks_on_loop())

    with pytest.raises(EngineThreadError, match="wait on itself"):
        runner.call(nested)


def test_errors_nothing_awaited_go_to_the_handler_not_stderr():
    seen: list[dict] = []
    runner = EngineThread(TickingEngine, on_loop_error=seen.append)
    runner.start()
    try:
        runner.call(lambda e: e.fail_later())
        runner.call(lambda e: e.ticks_on_loop())
    finally:
        runner.stop()
    assert [str(context["exception"]) for context in seen] == ["callback failed"]


@pytest.mark.parametrize("name", ["start_timeout_s", "stop_timeout_s", "call_timeout_s"])
def test_config_timeouts_must_be_positive(name):
    with pytest.raises(ValueError, match=name):
        EngineThreadConfig(**{name: 0})
