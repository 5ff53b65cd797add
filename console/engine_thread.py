"""Runs an async engine on its own thread and event loop, so drawing never delays a frame.

The engine is built on that thread (objects that bind to a loop bind to the right one),
started there, and stopped there. Other threads reach it with `call`, which schedules a
coroutine on the engine loop and waits for its result up to a timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar


class AsyncEngine(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


EngineT = TypeVar("EngineT", bound=AsyncEngine)
ResultT = TypeVar("ResultT")

LoopErrorHandler = Callable[[dict[str, Any]], None]
"""Receives asyncio's exception context for errors nothing awaited (instead of stderr, which
would scribble over the console)."""


class EngineThreadError(RuntimeError):
    """The engine could not start or stop, or the thread is not running."""


@dataclass(frozen=True, slots=True)
class EngineThreadConfig:
    name: str = "hft-engine"
    start_timeout_s: float = 60.0
    stop_timeout_s: float = 30.0
    call_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("EngineThreadConfig.name must not be empty")
        for name in ("start_timeout_s", "stop_timeout_s", "call_timeout_s"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"EngineThreadConfig.{name} must be > 0, got {value!r}")


class EngineThread(Generic[EngineT]):
    """Owns one engine on one thread: `start` returns once `engine.start()` has, `stop` once
    `engine.stop()` has and the loop is closed."""

    def __init__(
        self,
        factory: Callable[[], EngineT],
        config: EngineThreadConfig | None = None,
        on_loop_error: LoopErrorHandler | None = None,
    ) -> None:
        self.config = config or EngineThreadConfig()
        self._factory = factory
        self._on_loop_error = on_loop_error
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._engine: EngineT | None = None
        self._stop_requested = asyncio.Event()
        self._stopping = False
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._stop_error: BaseException | None = None

    @property
    def engine(self) -> EngineT:
        """The engine object, for reads that need no loop (published snapshots)."""
        if self._engine is None:
            raise EngineThreadError("the engine thread is not running")
        return self._engine

    @property
    def running(self) -> bool:
        return self._engine is not None and self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        if self._thread is not None:
            raise EngineThreadError("the engine thread was already started")
        self._thread = threading.Thread(target=self._run, name=self.config.name, daemon=True)
        self._thread.start()
        if not self._started.wait(self.config.start_timeout_s):
            self._request_stop()
            raise EngineThreadError(
                f"the engine did not start within {self.config.start_timeout_s:g} s"
            )
        if self._start_error is not None:
            self._thread.join(self.config.stop_timeout_s)
            raise EngineThreadError(
                f"the engine failed to start: {self._start_error}"
            ) from self._start_error

    def stop(self) -> None:
        """Stop the engine and join the thread; raises if `engine.stop()` failed or hung."""
        thread = self._thread
        if thread is None:
            return
        self._request_stop()
        thread.join(self.config.stop_timeout_s)
        if thread.is_alive():
            raise EngineThreadError(
                f"the engine did not stop within {self.config.stop_timeout_s:g} s"
            )
        if self._stop_error is not None:
            raise EngineThreadError(
                f"the engine failed to stop cleanly: {self._stop_error}"
            ) from self._stop_error

    def call(
        self,
        function: Callable[[EngineT], Awaitable[ResultT]],
        timeout_s: float | None = None,
    ) -> ResultT:
        """Run `function(engine)` on the engine loop and return its result (or raise its
        exception). Raises TimeoutError, after cancelling it, when it takes longer than
        `timeout_s` (default: the config's `call_timeout_s`). Callable from any thread but
        the engine's own."""
        loop = self._loop
        if not self.running or loop is None or self._engine is None:
            raise EngineThreadError("the engine thread is not running")
        if threading.current_thread() is self._thread:
            raise EngineThreadError("call() from the engine thread would wait on itself")
        engine = self._engine

        async def invoke() -> ResultT:
            return await function(engine)

        limit = self.config.call_timeout_s if timeout_s is None else timeout_s
        future = asyncio.run_coroutine_threadsafe(invoke(), loop)
        try:
            return future.result(limit)
        except TimeoutError:
            future.cancel()
            raise TimeoutError(f"the engine did not answer within {limit:g} s") from None

    def _request_stop(self) -> None:
        # The flag covers a stop asked before the loop exists; the event wakes a running loop.
        self._stopping = True
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed
                loop.call_soon_threadsafe(self._stop_requested.set)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        if self._on_loop_error is not None:
            handler = self._on_loop_error
            loop.set_exception_handler(lambda _loop, context: handler(context))
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main(loop))
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        engine = None
        try:
            engine = self._factory()
            await engine.start()
        except Exception as error:
            self._start_error = error
            self._started.set()
            if engine is not None:
                with contextlib.suppress(Exception):  # release what the failed start took
                    await engine.stop()
            self._loop = None
            return
        self._engine = engine
        self._started.set()
        if not self._stopping:
            await self._stop_requested.wait()
        try:
            await engine.stop()
        except Exception as error:
            self._stop_error = error
        finally:
            self._engine = None
            self._loop = None
