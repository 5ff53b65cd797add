"""`hft-console run`: the engine under the Textual console (the default) or headless.

Either way the engine is an `EngineNodeHandle`: its own thread and loop, started (Laya loaded,
the venue reconciled, the market subscribed) before anything is drawn, so whatever ONNX Runtime
prints lands above the console rather than over it.

Signals. SIGHUP (the SSH connection dropped) and SIGTERM (a service stop) end the run as
`exit_policy` says; the default, FLATTEN, halts, cancels everything and closes every position
before exiting. They are plain `signal` handlers that hand the work to a thread of their own,
so they act even when the UI's loop is stuck writing to a terminal that is gone; if the UI has
not closed a few seconds after the engine stopped, the process exits without it. In the console
SIGINT (and Ctrl+C, which a terminal in raw mode delivers as a key) opens the quit flow, which
asks when something is open; headless, SIGINT follows the policy too. Whatever ends the run (a
quit, a signal, the end of a replay, a crash of the UI), the engine is stopped by the policy
before the process exits; when a flatten cannot be confirmed the engine is stopped anyway,
saying so on stderr, with exit status 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from console.bandwidth import BUDGETS, Bandwidth
from console.engine.config import EngineAdapterConfig
from console.engine.handle import ShutdownPolicy
from console.engine.node_handle import (
    EngineNodeHandle,
    EngineProcessError,
    EngineStartRefused,
)
from console.garbage_collection import break_strip_cycles, freeze_startup_objects
from console.widgets import format as fmt
from engine.bitget.credentials import Credentials
from engine.config import EngineConfig
from engine.feed.recording import (
    RecordingUnreadable,
    check_recording,
    require_recording_symbols,
)
from engine.trading.commands import CommandResult
from engine.user_files import user_log_dir

if TYPE_CHECKING:
    from console.app import HftConsoleApp
    from engine.settings.schema import EngineSettings

STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM)
SIGNAL_REASONS = {
    signal.SIGHUP: "SIGHUP: the terminal hung up",
    signal.SIGTERM: "SIGTERM: asked to stop",
    signal.SIGINT: "SIGINT: interrupted",
}
"""What each signal that ends a run means, as the journal records it."""
UI_CLOSE_GRACE_S = 5.0
"""After a signal has stopped the engine, how long the console may take to close."""


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How the run ends and what it leaves behind.

    `exit_at_end`: the console closes when the replay reaches the end of its recording
    (headless always stops there). `duration_s`: the run ends after that long. `stats_out`: the
    fast path's figures as JSON (bench's shape) when the run ends. `status_interval_s` paces
    the headless status line, `refresh_hz` the console's snapshots; `keymap` remaps keys;
    `bandwidth` sets the console's redraw budget.
    `console_niceness` lowers the console process's CPU priority (not the engine's): on a
    busy machine the screen updates less often rather than the engine waiting for a core.
    """

    headless: bool = False
    exit_policy: ShutdownPolicy = ShutdownPolicy.FLATTEN
    exit_at_end: bool = False
    duration_s: float | None = None
    stats_out: Path | None = None
    status_interval_s: float = 1.0
    refresh_hz: float = 20.0
    keymap: dict[str, str] = field(default_factory=dict)
    bandwidth: Bandwidth = Bandwidth.FULL
    console_niceness: int = 10

    def __post_init__(self) -> None:
        if self.duration_s is not None and not (
            math.isfinite(self.duration_s) and self.duration_s > 0
        ):
            raise ValueError(f"duration_s must be > 0, got {self.duration_s!r}")
        if not self.status_interval_s > 0:
            raise ValueError(f"status_interval_s must be > 0, got {self.status_interval_s!r}")
        if not 0 <= self.console_niceness <= 19:
            raise ValueError(
                f"console_niceness must be within [0, 19], got {self.console_niceness!r}"
            )


def launch(
    engine: EngineConfig,
    options: LaunchOptions,
    credentials: Credentials | None = None,
    *,
    adapter: EngineAdapterConfig | None = None,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Run until quit, a signal, the end of the replay or the duration; 0 when the engine
    stopped as asked, 1 when it could not (and why is on `err`). `adapter` None: the
    defaults at `options.refresh_hz`."""
    if options.exit_at_end and engine.replay_path is None:
        raise ValueError("--exit-at-end needs --replay FILE")
    # Headless too: a failed start's traceback belongs in the log, not on the operator's screen.
    log_path = _log_to_file()
    handle = EngineNodeHandle(
        engine,
        adapter
        or EngineAdapterConfig(
            publish_hz=options.refresh_hz, detail_hz=BUDGETS[options.bandwidth].detail_hz
        ),
        credentials,
        exit_policy=options.exit_policy,
        log_path=log_path,
    )
    if not options.headless:
        _say(err, f"hft-console: starting the engine (log: {log_path})")
    try:
        handle.start()
    except EngineStartRefused as error:  # another engine has the journal or the account
        _say(err, f"hft-console: {error}")
        return 2
    except EngineProcessError as error:
        _say(err, f"hft-console: {error} (log: {log_path})")
        return 1
    ending = RunEnding(handle, options, err)
    reason = "the console closed"
    try:
        if options.headless:
            reason = _run_headless(handle, options, ending, out)
        else:
            # The engine process keeps its priority; drawing yields the CPU to it.
            os.nice(options.console_niceness)
            reason = _run_console(handle, options, ending)
    finally:
        # The UI may have failed or the terminal gone: the engine still stops by the policy.
        status = ending.finish(reason)
    ending.report()
    return status


class RunEnding:
    """The end of a run, done once whoever gets there first (the quit, a signal's thread, the
    end of a replay, the launcher's `finally`): the engine stopped by the policy (stopped
    anyway when the flatten is not confirmed), the figures written, then the outcome said."""

    def __init__(self, handle: EngineNodeHandle, options: LaunchOptions, err: TextIO) -> None:
        self._handle = handle
        self._options = options
        self._err = err
        self._lock = threading.Lock()
        self._status: int | None = None
        self._lines: list[str] = []

    @property
    def done(self) -> bool:
        return self._status is not None

    def finish(self, reason: str) -> int:
        """Stop the engine (blocking) for `reason` (journaled with the exit policy); the exit
        status. Later calls return the first's."""
        with self._lock:
            if self._status is not None:
                return self._status
            handle = self._handle
            policy = self._options.exit_policy
            why = f"{reason} (exit policy {policy.value})"
            result: CommandResult = handle.shutdown(policy, why)
            status = 0
            if not result.ok:
                status = 1
                if handle.lost() is None:  # a dead engine has nothing left to stop
                    stopped = handle.shutdown(ShutdownPolicy.KEEP, f"{why}: not confirmed flat")
                    self._lines.append(f"hft-console: {result.message}")
                    self._lines.append(f"hft-console: stopped the engine anyway: {stopped.message}")
            stats_out = self._options.stats_out
            if stats_out is not None:
                try:
                    stats_out.parent.mkdir(parents=True, exist_ok=True)
                    stats_out.write_text(json.dumps(handle.stats(), indent=1) + "\n")
                except (OSError, EngineProcessError) as error:
                    self._lines.append(f"hft-console: the figures were not written: {error}")
                    status = 1
            recording = self._recording()
            if recording is not None and recording["problem"]:
                self._lines.append(f"hft-console: {recording['problem']}")
                if recording["unreadable"]:
                    status = 1
            self._lines.append(f"hft-console: {reason}; {result.message}")
            self._status = status
            return status

    def _recording(self) -> dict[str, object] | None:
        """What the engine found wrong with the replayed recording (None: not a replay)."""
        try:
            recording = self._handle.stats().get("recording")
        except EngineProcessError:
            return None  # the engine is gone: what it read is not known here
        return recording if isinstance(recording, dict) else None

    def report(self) -> None:
        """Say how the run ended (once the console no longer owns the terminal)."""
        for line in self._lines:
            _say(self._err, line)
        self._lines.clear()


def refused_recording(path: str, book: EngineSettings) -> str | None:
    """Why the recording cannot be replayed, found before anything is read from it for the
    run (its contracts) as the backtest finds it (None: it can): unreadable, or without a
    symbol of the `book` (its hedge or leader included)."""
    try:
        check_recording(path)
    except FileNotFoundError:
        return f"recording not found: {path}"
    except OSError as error:
        return f"cannot read the recording {path}: {error.strerror or error}"
    except RecordingUnreadable as error:
        return str(error)
    try:
        require_recording_symbols(
            path, book.market_symbols, hedge=book.hedge_symbol, leader=book.leader_symbol
        )
    except ValueError as error:
        return (
            f"{error}; --symbols names the quoted ones, --hedge their hedge (or none), --leader "
            "the leader without one (or none)"
        )
    return None


def _say(stream: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # a terminal that is gone (SIGHUP)
        print(line, file=stream, flush=True)


def _log_to_file() -> Path:
    """Under the console, log records would scribble over the screen: they go to a file."""
    directory = user_log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "console.log"
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    return path


# The console


class _SignalStop:
    """SIGHUP and SIGTERM under the console: the engine stops (by the policy) on a thread of
    its own, then the console is asked to close; if it cannot (its terminal is gone and its
    writes block), the process exits once the engine is safely stopped."""

    def __init__(self, app: HftConsoleApp, ending: RunEnding, ui_closed: threading.Event) -> None:
        self._app = app
        self._ending = ending
        self._ui_closed = ui_closed
        self.loop: asyncio.AbstractEventLoop | None = None
        self.reason: str | None = None

    def on_signal(self, signum: int, _frame: object) -> None:
        if signum == signal.SIGINT:
            self._call_on_loop(self._quit_flow)
            return
        if self.reason is not None:
            return
        self.reason = SIGNAL_REASONS[signal.Signals(signum)]
        threading.Thread(target=self._stop, name="signal-stop", daemon=True).start()

    def _quit_flow(self) -> None:
        self._app.run_worker(self._app.run_action("quit"), exit_on_error=False)

    def _stop(self) -> None:
        assert self.reason is not None
        status = self._ending.finish(self.reason)
        self._call_on_loop(self._app.exit)
        if not self._ui_closed.wait(UI_CLOSE_GRACE_S):
            self._ending.report()
            os._exit(status)  # the engine is stopped; only a console stuck on a dead tty is left

    def _call_on_loop(self, callback: Callable[[], object]) -> None:
        loop = self.loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to tell
                loop.call_soon_threadsafe(callback)


def _run_console(handle: EngineNodeHandle, options: LaunchOptions, ending: RunEnding) -> str:
    from console.app import ConsoleConfig, HftConsoleApp

    config = ConsoleConfig(
        refresh_hz=options.refresh_hz, keymap=options.keymap, bandwidth=options.bandwidth
    )
    # Frozen once the engine's process has started and the App is built, and again once the
    # App's first frame is up (young objects only: the loop is serving keys by then).
    app = HftConsoleApp(handle, config, on_ready=lambda: freeze_startup_objects(generation=1))
    break_strip_cycles()
    freeze_startup_objects()
    ui_closed = threading.Event()
    signals = _SignalStop(app, ending, ui_closed)
    previous = {
        signum: signal.signal(signum, signals.on_signal)
        for signum in (*STOP_SIGNALS, signal.SIGINT)
    }
    try:
        reason = asyncio.run(_drive_console(app, handle, options, ending, signals))
    finally:
        ui_closed.set()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return signals.reason or reason


async def _drive_console(
    app: HftConsoleApp,
    handle: EngineNodeHandle,
    options: LaunchOptions,
    ending: RunEnding,
    signals: _SignalStop,
) -> str:
    signals.loop = asyncio.get_running_loop()
    ended: list[str] = []
    watcher = asyncio.create_task(_watch_for_end(app, handle, options, ending, ended))
    try:
        await app.run_async()
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    return ended[0] if ended else "quit"


async def _watch_for_end(
    app: HftConsoleApp,
    handle: EngineNodeHandle,
    options: LaunchOptions,
    ending: RunEnding,
    ended: list[str],
) -> None:
    if not options.exit_at_end and options.duration_s is None:
        return
    loop = asyncio.get_running_loop()
    deadline = None if options.duration_s is None else loop.time() + options.duration_s
    while True:
        await asyncio.sleep(0.05)
        if options.exit_at_end and handle.finished:
            ended.append("end of the recording")
            break
        if deadline is not None and loop.time() >= deadline:
            ended.append(_duration_reason(options))
            break
    app.notify(f"{ended[0]}: {options.exit_policy.value} and quit…", timeout=30)
    await asyncio.to_thread(ending.finish, ended[0])
    app.exit()


# Headless


def _run_headless(
    handle: EngineNodeHandle, options: LaunchOptions, ending: RunEnding, out: TextIO
) -> str:
    """Events as they come and a status line every interval, until a signal, the duration or
    the end of a replay."""
    wake = threading.Event()
    received: list[str] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(SIGNAL_REASONS[signal.Signals(signum)])
        wake.set()

    previous = {
        signum: signal.signal(signum, on_signal) for signum in (*STOP_SIGNALS, signal.SIGINT)
    }
    started = time.monotonic()
    next_status = started + options.status_interval_s
    last_id = -1
    try:
        while True:
            wake.wait(0.1)
            last_id = _print_events(handle, last_id, out)
            now = time.monotonic()
            if received:
                reason = received[0]
                break
            if handle.lost() is not None:
                reason = "the engine died"
                break
            if handle.finished:  # nothing to look at once a replay is over
                reason = "end of the recording"
                break
            if options.duration_s is not None and now - started >= options.duration_s:
                reason = _duration_reason(options)
                break
            if now >= next_status:
                _print_status(handle, out)
                next_status = now + options.status_interval_s
        _say(out, f"hft-console: {reason} ({options.exit_policy.value} and stop)…")
        ending.finish(reason)
        _print_events(handle, last_id, out)  # what the stop did: the kill, the last fills
        _print_status(handle, out)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return reason


def _duration_reason(options: LaunchOptions) -> str:
    return f"--duration {options.duration_s:g} s elapsed"


def _print_events(handle: EngineNodeHandle, last_id: int, out: TextIO) -> int:
    events, missed = handle.events_since(last_id)
    if missed:
        _say(out, f"({missed} events dropped before they were printed)")
    for event in events:
        clock = event.clock.value  # market (a replay's recording) or wall time
        _say(out, f"{fmt.clock_ns(event.at_ns)} {clock:<6} {event.kind.value:<8}{event.text}")
        last_id = event.event_id
    return last_id


def _print_status(handle: EngineNodeHandle, out: TextIO) -> None:
    line = handle.status_line
    if line is not None:
        _say(out, line)
