"""`EngineNodeHandle`: the console's `EngineHandle` over a real `EngineNode`.

The node runs in an engine process of its own (`console.engine.server`), so drawing the
console never holds the fast path's GIL. That process builds a frozen `ConsoleSnapshot` at
`publish_hz` and sends the parts that changed; a receiver thread here merges them into the
latest snapshot and keeps the events in order, so `snapshot()` and `events_since()` hand over
what is already here and never wait on the engine.

Commands are requests with a time limit, awaited on the caller's loop: a stuck engine answers
"not ok" when the limit runs out, a dead one at once; neither hangs the console.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import subprocess
import sys
import threading
from bisect import bisect_right
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from pathlib import Path

from console.engine.config import EngineAdapterConfig
from console.engine.handle import EngineLost, ShutdownPolicy, answered
from console.engine.protocol import (
    Answer,
    EngineSetup,
    Events,
    Picture,
    Progress,
    Request,
    Shutdown,
    Started,
    StartFailed,
    Stats,
    ToConsole,
    ToEngine,
    decode,
    encode,
)
from console.view import ConsoleEvent, ConsoleSnapshot
from engine.bitget.credentials import Credentials, mask_api_key
from engine.config import EngineConfig
from engine.trading.commands import Command, CommandResult, Flatten, Kill
from engine.trading.config import TradingMode

logger = logging.getLogger(__name__)

_EXIT_WAIT_S = 10.0
"""After the engine answered a shutdown, how long its process may take to exit."""


class EngineProcessError(RuntimeError):
    """The engine process could not start, or is not running."""


class EngineStartRefused(EngineProcessError):
    """The engine would not start beside another on its journal or account (the message
    names the other's pid)."""


class EngineNodeHandle:
    """The `EngineHandle` of a real engine, run in its own process (see the module docstring).

    `start()` returns once the engine runs (Laya loaded, the venue reconciled, the market
    subscribed) and its first snapshot is here: start it before the console draws; whatever
    the engine prints while starting goes to this process's stdout and stderr, after that to
    `log_path` when one is given. `shutdown(policy)` ends it. If this process dies without a
    shutdown, the engine ends by `exit_policy` on its own.
    """

    def __init__(
        self,
        engine: EngineConfig,
        config: EngineAdapterConfig | None = None,
        credentials: Credentials | None = None,
        *,
        exit_policy: ShutdownPolicy = ShutdownPolicy.FLATTEN,
        log_path: Path | None = None,
    ) -> None:
        self.engine_config = engine
        self.config = config or EngineAdapterConfig()
        self._credentials = credentials
        self._exit_policy = exit_policy
        self._log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._connection: multiprocessing.connection.Connection | None = None
        self._send_lock = threading.Lock()
        self._requests = itertools.count(1)
        self._waiting: dict[int, Future[Answer]] = {}
        self._waiting_lock = threading.Lock()
        self._parts: dict[str, object] = {}
        self._latest: ConsoleSnapshot | None = None
        self._buffer: deque[ConsoleEvent] = deque(maxlen=self.config.events_kept)
        self._events: tuple[ConsoleEvent, ...] = ()
        self._status_line: str | None = None
        self._finished = False
        self._started = threading.Event()
        self._start_failure: str | None = None
        self._start_refused = False
        self._gone: str | None = None
        self._shutdown_lock = threading.Lock()
        self._shutdown_result: CommandResult | None = None
        self._final_stats: dict[str, object] | None = None
        self._refused_once = False
        self._lost: EngineLost | None = None
        self.on_progress: Callable[[], None] | None = None

    # Lifecycle

    def start(self) -> None:
        """Start the engine process and wait until the engine runs; raises
        `EngineProcessError` saying why it could not start."""
        if self._process is not None:
            raise EngineProcessError("the engine was already started")
        ours, theirs = multiprocessing.Pipe(duplex=True)
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "console.engine.server", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._connection = ours
        credentials = self._credentials
        setup = EngineSetup(
            engine=self.engine_config,
            adapter=self.config,
            exit_policy=self._exit_policy,
            key=(
                (credentials.api_key, credentials.api_secret, credentials.passphrase)
                if credentials is not None
                else None
            ),
            key_note=self._key_note(),
            log_path=str(self._log_path) if self._log_path is not None else None,
        )
        self._send(setup)
        threading.Thread(target=self._receive, name="engine-receiver", daemon=True).start()
        if not self._started.wait(self.config.start_timeout_s):
            self._kill_process()
            raise EngineProcessError(
                f"the engine did not start within {self.config.start_timeout_s:g} s"
            )
        if self._start_failure is not None:
            self._wait_for_exit()
            if self._start_refused:
                raise EngineStartRefused(self._start_failure)
            raise EngineProcessError(f"the engine failed to start: {self._start_failure}")

    def _key_note(self) -> str:
        if self._credentials is not None:
            return f"API key {mask_api_key(self._credentials.api_key)}"
        trading = self.engine_config.trading
        if trading is not None and trading.mode is TradingMode.SIM:
            return "the simulator's own key"
        return "no API key"

    @property
    def pid(self) -> int | None:
        """The engine process's PID (None before `start`)."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return (
            self._started.is_set()
            and self._start_failure is None
            and self._gone is None
            and self._shutdown_result is None
        )

    @property
    def finished(self) -> bool:
        """The replay reached the end of its recording."""
        return self._finished

    @property
    def status_line(self) -> str | None:
        """The engine's one-line status (`format_status`), renewed a few times a second."""
        return self._status_line

    def stats(self) -> dict[str, object]:
        """The fast path's figures in bench's JSON shape: asked while the engine runs, the
        ones it sent with its shutdown answer once stopped."""
        if self._final_stats is not None:
            return self._final_stats
        answer = self._request(Stats(), self.config.command_timeout_s)
        if not answer.ok or not isinstance(answer.payload, dict):
            raise EngineProcessError(f"the engine could not give its figures: {answer.payload}")
        return answer.payload

    # EngineHandle: reads

    def snapshot(self) -> ConsoleSnapshot:
        latest = self._latest
        if latest is None:
            raise EngineProcessError("the engine has not sent a snapshot yet")
        return latest

    def events_since(self, last_id: int) -> tuple[Sequence[ConsoleEvent], int]:
        events = self._events
        if not events or events[-1].event_id <= last_id:
            return (), 0
        newer = events[bisect_right(events, last_id, key=_event_id) :]
        # Ids are consecutive: what is missing before and between them was dropped.
        return newer, newer[-1].event_id - last_id - len(newer)

    def lost(self) -> EngineLost | None:
        return self._lost if self._shutdown_result is None else None

    # EngineHandle: commands, awaited on the caller's loop

    def execute(self, command: Command) -> Awaitable[CommandResult]:
        name = command.name
        try:
            request_id, answer = self._send_request(command)
        except EngineProcessError as error:
            return answered(CommandResult(name, False, f"{name}: {error}"))
        return self._result(name, request_id, answer, self._limit_s(command))

    def shutdown(self, policy: ShutdownPolicy, reason: str | None = None) -> CommandResult:
        """FLATTEN: the kill switch (HALTED, cancel all, close all, until the venue confirms
        flat; journaled with `reason`, by default the operator's quit), then stop; if the venue
        does not confirm, the engine keeps running and the result says so. KEEP: stop (resting
        orders are cancelled, positions kept). Once done, later calls return the same result.
        An engine that died is never ok (nothing was stopped or flattened: the message is
        `lost()`); a stuck one is not ok the first time, and asked again its process is
        killed."""
        with self._shutdown_lock:
            if self._shutdown_result is not None:
                return self._shutdown_result
            if self._lost is not None:
                return CommandResult("shutdown", False, str(self._lost))
            if self._refused_once:
                return self._give_up()
            limit = self._sequence_limit_s("kill_timeout_s") + self.config.stop_timeout_s
            why = reason or f"the operator quit the console ({policy.value} and quit)"
            try:
                answer = self._request(Shutdown(policy, why), limit)
            except TimeoutError:
                self._refused_once = True
                return CommandResult(
                    "shutdown",
                    False,
                    f"the engine did not stop within {limit:g} s; quit again to kill its "
                    "process (orders may still rest at the exchange: check it)",
                )
            except EngineProcessError as error:
                if self._lost is not None:  # it died meanwhile
                    return CommandResult("shutdown", False, str(self._lost))
                message = f"{error}; nothing was flattened: check the exchange"
                return CommandResult("shutdown", False, message)
            if not answer.ok or not isinstance(answer.payload, tuple):
                message = f"shutdown failed in the engine: {answer.payload}"
                return CommandResult("shutdown", False, message)
            result, stats = answer.payload
            if not result.ok:
                return result
            self._final_stats = stats
            self._wait_for_exit()
            self._shutdown_result = result
            return self._shutdown_result

    def _give_up(self) -> CommandResult:
        # Set first: the process ending now is this kill, not a death to report.
        self._shutdown_result = CommandResult(
            "shutdown", True, "the engine process was killed: check the exchange for open orders"
        )
        self._kill_process()
        return self._shutdown_result

    def _sequence_limit_s(self, name: str) -> float:
        trading = self.engine_config.trading
        if trading is None:
            return self.config.command_timeout_s
        return getattr(trading.executor, name) + self.config.sequence_margin_s

    def _limit_s(self, command: Command) -> float:
        """How long the answer may take: a kill or flatten runs until the venue is flat."""
        match command.request:
            case Kill():
                return self._sequence_limit_s("kill_timeout_s")
            case Flatten():
                return self._sequence_limit_s("flatten_timeout_s")
        return self.config.command_timeout_s

    async def _result(
        self, name: str, request_id: int, answer: Future[Answer], limit_s: float
    ) -> CommandResult:
        try:
            # Shielded: a timeout must not cancel the answer the receiver thread may be setting.
            reply = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(answer)), limit_s)
        except TimeoutError:
            return CommandResult(
                name,
                False,
                f"{name}: the engine did not answer within {limit_s:g} s (it is stuck or "
                "overloaded); check the exchange for open orders and positions",
            )
        except EngineProcessError as error:
            return CommandResult(name, False, f"{name}: {error}")
        finally:
            self._forget(request_id)
        if not reply.ok or not isinstance(reply.payload, CommandResult):
            return CommandResult(name, False, f"{name} failed in the engine: {reply.payload}")
        return reply.payload

    # The wire (console.engine.protocol)

    def _request(self, asked: Command | Stats | Shutdown, limit_s: float) -> Answer:
        """Ask and wait for the answer, blocking (the launcher's shutdown and figures)."""
        request_id, answer = self._send_request(asked)
        try:
            return answer.result(limit_s)
        finally:
            self._forget(request_id)

    def _send_request(self, asked: Command | Stats | Shutdown) -> tuple[int, Future[Answer]]:
        """Send `asked` under a fresh id; the future takes its answer (set by the receiver)."""
        if not self._started.is_set() or self._shutdown_result is not None:
            raise EngineProcessError("the engine is not running")
        if self._gone is not None:
            raise EngineProcessError(self._gone)
        request_id = next(self._requests)
        answer: Future[Answer] = Future()
        with self._waiting_lock:
            self._waiting[request_id] = answer
        try:
            self._send(Request(request_id, asked))
        except OSError as error:
            self._forget(request_id)
            raise EngineProcessError(f"the engine process is unreachable: {error}") from None
        return request_id, answer

    def _forget(self, request_id: int) -> None:
        with self._waiting_lock:
            self._waiting.pop(request_id, None)

    def _send(self, message: ToEngine) -> None:
        # On the caller's loop too: a request is a few hundred bytes, and the engine's reader
        # thread takes each off the socket at once, so this never waits for the engine loop.
        connection = self._connection
        if connection is None:
            raise EngineProcessError("the engine was not started")
        payload = encode(message)
        with self._send_lock:
            connection.send_bytes(payload)

    def _receive(self) -> None:
        connection = self._connection
        assert connection is not None
        try:
            while True:
                self._take(decode(connection.recv_bytes()))
        except (EOFError, OSError):
            pass
        except Exception:  # a message this side cannot read: the link is unusable
            logger.exception("unreadable message from the engine process")
        self._on_gone()

    def _take(self, message: ToConsole) -> None:
        match message:
            case Picture():
                self._parts.update(message.parts)
                self._latest = ConsoleSnapshot(at_ns=message.at_ns, **self._parts)  # type: ignore[arg-type]
                if message.status_line is not None:
                    self._status_line = message.status_line
                self._finished = message.finished
            case Events():
                self._buffer.extend(message.events)
                self._events = tuple(self._buffer)
            case Answer():
                with self._waiting_lock:
                    answer = self._waiting.get(message.request_id)
                if answer is not None and not answer.done():
                    answer.set_result(message)
            case Progress():  # a kill or flatten has set its state; its answer follows
                on_progress = self.on_progress
                if on_progress is not None:
                    on_progress()
            case Started():
                self._started.set()
            case StartFailed():
                self._start_failure = message.why
                self._start_refused = message.refused
                self._started.set()

    def _on_gone(self) -> None:
        process = self._process
        status = process.wait() if process is not None else None
        if self._shutdown_result is None and self._final_stats is None:
            self._gone = self._death(status)
            if self._latest is not None:  # it ran: what it may have left is unknown
                self._lost = EngineLost(self._gone, self._left_behind())
        with self._waiting_lock:
            waiting = list(self._waiting.values())
        for future in waiting:
            if not future.done():
                future.set_exception(EngineProcessError(self._gone or "the engine stopped"))
        self._started.set()  # a start still waiting learns it failed
        if self._start_failure is None and self._latest is None:
            self._start_failure = self._gone

    def _death(self, status: int | None) -> str:
        if status is not None and status < 0:
            return f"the engine process was killed by {signal.Signals(-status).name}"
        log = f" (its log: {self._log_path})" if self._log_path is not None else ""
        return f"the engine process exited with status {status} without being asked to stop{log}"

    def _left_behind(self) -> str:
        """What a dead engine may have left at the exchange, from its last picture."""
        if self.engine_config.trading is None:
            return "it traded nothing (watch only)"
        latest = self._latest
        trading = latest.status.trading if latest is not None else None
        if trading is not None and trading.exposed:
            return f"the exchange may still hold {trading.exposure}: check it"
        return (
            "its last picture showed no orders and no position: check the exchange for any "
            "sent since"
        )

    def _wait_for_exit(self) -> None:
        process = self._process
        if process is None:
            return
        try:
            process.wait(_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            logger.error("the engine process did not exit after its shutdown: killing it")
            self._kill_process()

    def _kill_process(self) -> None:
        process = self._process
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


def _event_id(event: ConsoleEvent) -> int:
    return event.event_id
