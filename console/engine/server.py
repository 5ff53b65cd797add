"""The engine process behind `EngineNodeHandle` (`python -m console.engine.server FD`): the
`EngineNode` and a `SnapshotPublisher` on this process's own event loop, talking to the console
over one socket (console.engine.protocol).

A process, not a thread: CPython's one GIL would let drawing the console (about a third of a
core while the market moves) stall the fast path mid-frame. Here the console only costs the
engine the pictures it is sent, and an `Outbox` sends them from a thread of its own. When the
console goes away without a shutdown (its process killed), the engine ends as the console's
exit policy says: flatten by default.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Coroutine, Sequence
from dataclasses import fields
from multiprocessing.connection import Connection

from console.engine.handle import ShutdownPolicy
from console.engine.outbox import Outbox
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
    decode,
)
from console.engine.publisher import SnapshotPublisher
from console.garbage_collection import freeze_startup_objects
from console.view import ConsoleSnapshot, EventKind, Severity
from engine.bitget.credentials import Credentials
from engine.clock import EngineClock
from engine.instance_lock import EngineLocked
from engine.node import EngineNode, engine_clock, format_status
from engine.trading.commands import Command, CommandResult, CommandSource, Kill

logger = logging.getLogger(__name__)

SNAPSHOT_PARTS = tuple(item.name for item in fields(ConsoleSnapshot) if item.name != "at_ns")
STATUS_LINE_INTERVAL_S = 0.25
"""How often the one-line status (headless output) travels with a picture."""


class EngineServer:
    """Runs in the engine process: builds the node and its publisher from the setup, sends
    pictures at the publish rate, answers commands, and ends on `shutdown` or when the console
    goes away."""

    def __init__(self, connection: Connection, setup: EngineSetup, clock: EngineClock) -> None:
        self._connection = connection
        self._setup = setup
        self._clock = clock
        adapter = setup.adapter
        if adapter.gpu is not None:  # Laya runs in this process
            adapter = dataclasses.replace(
                adapter, gpu=dataclasses.replace(adapter.gpu, laya_pid=os.getpid())
            )
        self._adapter = adapter
        self._outbox = Outbox(connection, adapter.events_kept)
        self._publisher: SnapshotPublisher | None = None
        self._sent: dict[str, object] = {}
        self._last_event_id = -1
        self._status_line_at = 0.0
        self._publish_error = ""
        self._ended = asyncio.Event()
        self._stopping: asyncio.Task[CommandResult] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def serve(self) -> int:
        self._loop = asyncio.get_running_loop()
        setup = self._setup
        credentials = Credentials(*setup.key) if setup.key is not None else None
        self._outbox.start()
        try:
            node = EngineNode(setup.engine, credentials, self._clock)
            publisher = SnapshotPublisher(node, self._adapter, setup.key_note)
            self._publisher = publisher
            await publisher.start()
        except EngineLocked as error:  # refused beside another engine: said as it is
            logger.error("the engine would not start: %s", error)
            self._outbox.put(StartFailed(str(error), refused=True))
            await self._stop_failed_start()
            return 1
        except Exception as error:  # said to the console, which says it to the operator
            logger.exception("the engine failed to start")
            self._outbox.put(StartFailed(f"{type(error).__name__}: {error}"))
            await self._stop_failed_start()
            return 1
        self._send_picture(final=True)
        self._outbox.put(Started())
        freeze_startup_objects()  # the node has started: its kernels compiled, its model loaded
        if setup.log_path is not None:
            _redirect_output(setup.log_path)
        threading.Thread(target=self._read_commands, name="engine-commands", daemon=True).start()
        publishing = asyncio.create_task(self._publish_loop(), name="console-pictures")
        await self._ended.wait()
        publishing.cancel()
        await asyncio.gather(publishing, *self._tasks, return_exceptions=True)
        self._outbox.close(5.0)
        return 0

    async def _stop_failed_start(self) -> None:
        if self._publisher is not None:
            with contextlib.suppress(Exception):  # release what the failed start took
                await self._publisher.stop()
        self._outbox.close(5.0)

    # Pictures

    async def _publish_loop(self) -> None:
        publisher = self._publisher
        assert publisher is not None
        interval = 1.0 / self._adapter.publish_hz
        built_s = time.perf_counter()
        while True:
            await asyncio.sleep(interval)  # engine clock: market time in a replay
            if publisher.stopping:
                # The stop's own last picture (fresh status: HALTED after a kill) goes last;
                # one built here from the node's older published status would follow it.
                return
            # A fast replay's market time outruns the screen: a picture at most about as
            # often in real time as the publish rate says.
            now_s = time.perf_counter()
            if now_s - built_s < interval / 2:
                continue
            built_s = now_s
            try:
                publisher.publish()
            except Exception as error:  # a mapping bug must not freeze the console's picture
                text = f"console snapshot failed: {type(error).__name__}: {error}"
                if text != self._publish_error:
                    self._publish_error = text
                    logger.exception("console snapshot failed")
                    publisher.note(EventKind.FAULT, Severity.ERROR, text)
            self._send_picture()

    def _send_picture(self, final: bool = False) -> None:
        """The snapshot's changed parts; `final` ones (the first, the last) also carry the
        status line and go in order with the messages after them, never replaced."""
        publisher = self._publisher
        assert publisher is not None
        events = publisher.events
        if events and events[-1].event_id > self._last_event_id:
            new = tuple(event for event in events if event.event_id > self._last_event_id)
            self._last_event_id = new[-1].event_id
            self._outbox.put(Events(new))
        snapshot = publisher.latest
        if snapshot is None:
            return
        unsent = self._outbox.take_back_picture()
        parts = {name: getattr(snapshot, name) for name in SNAPSHOT_PARTS}
        changed = {
            name: value
            for name, value in parts.items()
            if name in unsent or self._sent.get(name) is not value
        }
        self._sent = parts
        status_line = None
        now = time.monotonic()
        if final or now - self._status_line_at >= STATUS_LINE_INTERVAL_S:
            self._status_line_at = now
            status = publisher.engine_status
            status_line = (
                format_status(status, publisher.node.config.instruments)
                if status is not None
                else None
            )
        picture = Picture(snapshot.at_ns, changed, status_line, publisher.finished)
        if final:  # in order with what follows (the start, a shutdown's answer)
            self._outbox.put(picture)
        else:
            self._outbox.put_picture(picture)

    # Commands

    def _read_commands(self) -> None:
        loop = self._loop
        assert loop is not None
        try:
            while True:
                request = decode(self._connection.recv_bytes())
                if not isinstance(request, Request):  # not our console: as good as gone
                    break
                loop.call_soon_threadsafe(self._on_request, request)
        except (EOFError, OSError):
            pass
        with contextlib.suppress(RuntimeError):  # the loop has closed: we are done anyway
            loop.call_soon_threadsafe(self._on_console_gone)

    def _on_request(self, request: Request) -> None:
        asked = request.asked
        if isinstance(asked, Shutdown):
            self._spawn(self._answer_shutdown(request.request_id, asked))
        else:
            self._spawn(self._answer(request.request_id, asked))

    def _spawn(self, coroutine: Coroutine[object, object, None]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, request_id: int, asked: Command | Stats) -> None:
        """A command's answer, or the fast path's figures."""
        publisher = self._publisher
        assert publisher is not None
        try:
            if isinstance(asked, Stats):
                result: object = publisher.stats()
            elif isinstance(asked.request, Kill):
                running = asyncio.ensure_future(publisher.node.execute(asked))
                # A kill sets HALTED before its first wait (a flatten asks the venue first).
                await asyncio.sleep(0)
                if not running.done():
                    # The state now, before the close sequence confirms flat: the console
                    # shows HALTED at once and the answer when it comes.
                    self._send_fresh_picture()
                    self._outbox.put(Progress(request_id))
                result = await running
            else:
                result = await publisher.node.execute(asked)
        except Exception as error:  # the console shows it; the engine carries on
            logger.exception(
                "command %s failed", "stats" if isinstance(asked, Stats) else asked.name
            )
            self._outbox.put(Answer(request_id, False, f"{type(error).__name__}: {error}"))
            return
        if isinstance(asked, Command):
            self._send_fresh_picture()
        self._outbox.put(Answer(request_id, True, result))

    def _send_fresh_picture(self) -> None:
        """A picture of the engine as a command left it, sent just ahead of the command's
        answer: the console shows the outcome (HALTED after a kill) without waiting for the
        next picture, up to a publish interval and the node's status interval later."""
        publisher = self._publisher
        assert publisher is not None
        if publisher.stopping:  # the stop sends its own last picture
            return
        try:
            publisher.publish(fresh=True)
        except Exception:  # the answer still goes; the next picture has the state
            logger.exception("the picture after a command failed")
            return
        self._send_picture(final=True)

    async def _answer_shutdown(self, request_id: int, shutdown: Shutdown) -> None:
        result = await self._stop(shutdown.policy, shutdown.reason, operator=True)
        stats = self._publisher.stats() if self._publisher is not None else None
        self._outbox.put(Answer(request_id, True, (result, stats)))
        if result.ok:
            self._ended.set()

    def _on_console_gone(self) -> None:
        if self._stopping is None and not self._ended.is_set():
            logger.error("the console went away: ending by its exit policy")
            self._spawn(self._end_alone())

    async def _end_alone(self) -> None:
        policy = self._setup.exit_policy
        reason = f"the console went away (exit policy {policy.value})"
        result = await self._stop(policy, reason, operator=False)
        logger.error("ended without the console: %s", result.message)
        self._ended.set()

    async def _stop(self, policy: ShutdownPolicy, reason: str, *, operator: bool) -> CommandResult:
        """FLATTEN: kill (journaled with `reason`), then stop; when the venue does not confirm
        flat the engine keeps running for the operator to decide (`operator`), or stops anyway
        (nobody to ask). KEEP: stop (the quotes are cancelled, positions stay)."""
        running = self._stopping
        if running is not None:
            return await asyncio.shield(running)
        self._stopping = asyncio.get_running_loop().create_task(
            self._stop_once(policy, reason, operator)
        )
        result = await asyncio.shield(self._stopping)
        if not result.ok:
            self._stopping = None  # the operator may try again
        return result

    async def _stop_once(
        self, policy: ShutdownPolicy, reason: str, operator: bool
    ) -> CommandResult:
        publisher = self._publisher
        assert publisher is not None
        node = publisher.node
        done = []
        if policy is ShutdownPolicy.FLATTEN and node.desk is not None:
            killed = await node.execute(Command(Kill(reason), CommandSource.EXIT_POLICY))
            if not killed.ok and operator:
                return CommandResult(
                    "shutdown",
                    False,
                    f"still running: the kill switch did not confirm flat ({killed.message}). "
                    "HALTED stays latched; try again, or quit and keep",
                )
            done.append(f"halted and flat: {killed.message}" if killed.ok else killed.message)
        elif node.desk is not None:
            done.append(publisher.kept_text())
        await publisher.stop()
        self._send_picture(final=True)
        done.append("engine stopped")
        return CommandResult("shutdown", True, "; ".join(done))


def _redirect_output(log_path: str) -> None:
    """Once the engine runs, whatever a library prints goes to the log, not over the
    console's screen."""
    sys.stdout.flush()
    sys.stderr.flush()
    descriptor = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)


def _configure_logging(log_path: str | None) -> None:
    handler: logging.Handler
    if log_path is not None:
        handler = logging.FileHandler(log_path, encoding="utf-8")
        level = logging.INFO
    else:
        handler = logging.StreamHandler(sys.stderr)
        level = logging.WARNING
    handler.setFormatter(
        logging.Formatter("%(asctime)s engine %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)


def main(argv: Sequence[str]) -> int:
    """`python -m console.engine.server FD`: serve the console on the socket FD."""
    # The console decides how the run ends: terminal signals and a service stop reach it
    # (this process has a session of its own), and it asks this process to stop.
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    connection = Connection(int(argv[0]))
    try:
        setup = decode(connection.recv_bytes())
    except (EOFError, OSError):
        return 1  # the console went away before it said what to run
    if not isinstance(setup, EngineSetup):
        raise TypeError(f"expected an EngineSetup first, got {type(setup).__name__}")
    _configure_logging(setup.log_path)
    try:
        clock = engine_clock(setup.engine)  # a replay's: its loop runs in the recording's time
    except (OSError, ValueError) as error:
        outbox = Outbox(connection, 1)
        outbox.start()
        outbox.put(StartFailed(f"{type(error).__name__}: {error}"))
        outbox.close(5.0)
        return 1
    return clock.run(EngineServer(connection, setup, clock).serve())


if __name__ == "__main__":
    # Run as the imported module, not as __main__: one copy of it, its logger named for it.
    from console.engine import server

    sys.exit(server.main(sys.argv[1:]))
