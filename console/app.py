"""The Textual console: composes the panes, polls the engine handle, sends the operator's keys.

It polls `EngineHandle.snapshot()` and `events_since()` at `refresh_hz` on the UI loop (both
return at once) and offers each pane its part of the snapshot; panes redraw only what changed,
ordinary changes no more often than the `[console] bandwidth` budget allows (console.bandwidth),
and what the terminal is sent is compacted and counted (console.terminal_output). Commands are
awaited on the UI loop, which goes on drawing meanwhile, one at a time in the order given,
except the kill switch, which never waits for its turn behind another command.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from types import MappingProxyType
from typing import ClassVar

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Container
from textual.driver import Driver
from textual.message import Message

from console.bandwidth import BUDGETS, Bandwidth
from console.engine.handle import EngineHandle, EngineLost, ShutdownPolicy, answered
from console.keymap import CONSOLE_BINDINGS, KILL_ID, checked_keymap, console_binding, keys_in_force
from console.panes import PANES
from console.screens.confirm import ConfirmScreen
from console.screens.dialog import LiveDialog
from console.screens.help import HelpScreen
from console.screens.overrides import OverridesScreen
from console.screens.quit import QuitScreen
from console.screens.rearm import RearmScreen
from console.screens.symbol import SymbolScreen
from console.terminal_output import OutputMeter, ShownCells, metered_driver
from console.view import ConsoleSnapshot, EventKind, Severity, TradingView
from console.widgets import format as fmt
from console.widgets.events import EventsPane
from console.widgets.footer import KeysFooter
from console.widgets.lines import GridPane
from console.widgets.status import CommandNote, StatusPane
from engine.risk.events import TradingState
from engine.risk.overrides import RiskOverrides
from engine.trading.commands import (
    Command,
    CommandResult,
    Flatten,
    Kill,
    OperatorRequest,
    Pause,
    PauseSymbol,
    Rearm,
    Resume,
    ResumeSymbol,
    SetLimits,
)

Starter = Callable[[], Awaitable[CommandResult]]
"""A command that is not a request to the engine (the shutdown, which runs off the loop)."""


@dataclass(frozen=True, slots=True)
class ConsoleConfig:
    """`refresh_hz`: snapshot polls a second. `stale_after_s`: a snapshot time that has not
    moved for this long marks the screen stale. `keymap`: binding id -> keys (comma-separated),
    e.g. {"console.kill": "K"}. Below `full_layout_size` (columns, rows) the layout is compact.
    `bandwidth`: the redraw budget (`full`, or `low` for links under about 256 kbit/s)."""

    refresh_hz: float = 20.0
    stale_after_s: float = 3.0
    event_log_lines: int = 2_000
    keymap: Mapping[str, str] = field(default_factory=dict)
    full_layout_size: tuple[int, int] = (120, 40)
    bandwidth: Bandwidth = Bandwidth.FULL

    def __post_init__(self) -> None:
        if not (math.isfinite(self.refresh_hz) and 1 <= self.refresh_hz <= 60):
            raise ValueError(f"refresh_hz must be within [1, 60], got {self.refresh_hz!r}")
        if self.bandwidth not in tuple(Bandwidth):
            choices = ", ".join(repr(item.value) for item in Bandwidth)
            raise ValueError(f"bandwidth must be one of {choices}, got {self.bandwidth!r}")
        object.__setattr__(self, "bandwidth", Bandwidth(self.bandwidth))
        if not self.stale_after_s > 0:
            raise ValueError(f"stale_after_s must be > 0, got {self.stale_after_s!r}")
        if self.event_log_lines < 1:
            raise ValueError(f"event_log_lines must be >= 1, got {self.event_log_lines!r}")
        dialogs = {
            "flatten confirmation": ConfirmScreen.BINDINGS,
            "quit": QuitScreen.BINDINGS,
            "re-arm": RearmScreen.BINDINGS,
            "risk overrides": OverridesScreen.BINDINGS,
            "help": HelpScreen.BINDINGS,
            "symbol": SymbolScreen.BINDINGS,
        }
        checked = checked_keymap(self.keymap, dialogs)  # type: ignore[arg-type]
        object.__setattr__(self, "keymap", MappingProxyType(checked))


COMMAND_NOTE_S = 10.0
"""How long a safety key's answer stays on the status bar when it went well; a failure stays
until the next safety key."""


class EngineProgressed(Message):
    """From the handle's receiver thread: a kill or flatten set its state before its answer."""


class HftConsoleApp(App[None]):
    CSS_PATH: ClassVar[list[str | PurePath]] = ["../styles/console.tcss", "../styles/dialogs.tcss"]
    TITLE = "hft-console"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = list(CONSOLE_BINDINGS)

    def __init__(
        self,
        handle: EngineHandle,
        config: ConsoleConfig | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        on_ready: Callable[[], None] | None = None,
        panes: Sequence[type[GridPane]] = PANES,
    ) -> None:
        """`on_ready`: called once the first frame is on screen (the launcher's process
        policy, e.g. freezing what start-up left for the garbage collector). `panes`: the
        registry (`console.panes`), the events pane among them."""
        self.output = OutputMeter()
        """What the terminal was sent (set first: Textual picks its driver as it starts)."""
        self._shown_cells = ShownCells()
        super().__init__()
        self.handle = handle
        self.config = config or ConsoleConfig()
        self._budget = BUDGETS[self.config.bandwidth]
        self._output_shown_at = -math.inf
        self._note_until = math.inf
        self._clock = clock
        self._on_ready = on_ready
        self._snapshot: ConsoleSnapshot | None = None
        self._last_event_id = -1
        self._snapshot_moved_at = clock()
        self._poll_error = ""
        self._lost: EngineLost | None = None
        self._picked: str | None = None
        """The symbol `s` picked for the detail panes (`_symbol` says which they show)."""
        self._shown_symbol: str | None = None
        self._pane_index = 0
        self._compact = False
        self._one_pane = False
        """At the full size, `v` shows one pane large beside the ladder (the compact layout
        always does)."""
        self._command_turn = asyncio.Lock()
        """Held by the command being answered; the kill switch never takes it."""
        self._kill_keys = frozenset(keys_in_force(console_binding(KILL_ID), self.config.keymap))
        self._footer = KeysFooter()
        # Held here: queries run against the screen on top, which may be a dialog.
        self._status = StatusPane("status", id="status", classes="pane")
        self._status.interval_s = self._budget.status_s
        self._panes = tuple(pane.build(self.config) for pane in panes)
        for pane in self._panes:
            pane.interval_s = 0.0 if pane.budget is None else getattr(self._budget, pane.budget)
        (self._events,) = (pane for pane in self._panes if isinstance(pane, EventsPane))
        # The panes the compact layout shows one at a time beside the ladder, in `v` order.
        self._secondary = {pane.pane_id: pane for pane in self._panes if pane.beside_ladder}

    def compose(self) -> ComposeResult:
        yield self._status
        with Container(id="panes"):
            yield from self._panes
        yield self._footer

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this terminal, sending compacted output and counting it."""
        return metered_driver(super().get_driver_class(), self.output, self._shown_cells)

    def on_mount(self) -> None:
        if self._budget.terminal_colours:
            self.theme = "ansi-dark"
        if self.config.keymap:
            self.set_keymap(dict(self.config.keymap))
        self._apply_layout(self.size.width, self.size.height)
        # Thread-safe and never blocking: the receiver thread only posts.
        self.handle.on_progress = lambda: self.post_message(EngineProgressed())
        self.poll()
        self.set_interval(1 / self.config.refresh_hz, self.poll)

    def on_ready(self) -> None:
        if self._on_ready is not None:
            self._on_ready()

    async def on_event(self, event: events.Event) -> None:
        """The kill switch's keys first, on every screen whatever has focus: Textual lets a
        focused text field take a printable key even ahead of a priority binding."""
        if (
            isinstance(event, events.Key)
            and not event.is_forwarded
            and event.key in self._kill_keys
        ):
            self.action_kill()
            return
        await super().on_event(event)

    def on_resize(self, event: events.Resize) -> None:
        self._shown_cells.forget()  # the terminal may have moved or cleared what it showed
        self._apply_layout(event.size.width, event.size.height)

    # Polling

    def poll(self) -> None:
        """Read the latest snapshot and events and hand them to the panes."""
        try:
            snapshot = self.handle.snapshot()
            events_read, missed = self.handle.events_since(self._last_event_id)
            lost = self.handle.lost()
        except Exception as error:  # a broken engine must not take the console down with it
            self._set_problem(f"engine not answering: {type(error).__name__}: {error}", alert=True)
            return
        now = self._clock()
        self._take(snapshot, now)
        still = now - self._snapshot_moved_at
        stale = still > self.config.stale_after_s and self._lost is None  # dead, not stale
        self._set_problem(f"no new snapshot for {still:.0f} s" if stale else "")
        # Every poll: a change a pane's budget held back is taken once the budget allows.
        with self.batch_update():
            self._show(snapshot, now)
            if now - self._output_shown_at >= self._budget.output_rate_s:
                self._output_shown_at = now
                self._status.output = self._output_rate()
            if now >= self._note_until:
                self._status.command = None
        self._events.add(events_read, missed, now)
        if events_read:
            self._last_event_id = events_read[-1].event_id
        if lost is not None and self._lost is None:
            self._engine_lost(lost, snapshot.at_ns)

    def _take(self, snapshot: ConsoleSnapshot, now: float) -> None:
        """The latest snapshot, what the keys act on; when it moved last, for STALE."""
        previous = self._snapshot
        if previous is None or snapshot.at_ns != previous.at_ns:
            self._snapshot_moved_at = now
        self._snapshot = snapshot
        for screen in self.screen_stack:  # a dialog showing the state shows it as it is now
            if isinstance(screen, LiveDialog):
                screen.follow(snapshot.status.trading)

    def _engine_lost(self, lost: EngineLost, last_at_ns: int) -> None:
        """Said at once, everywhere it is seen: the status rows, the events (after the last
        the engine sent, at its last picture's time) and a notification."""
        self._lost = lost
        self._status.lost = lost
        self._events.note(last_at_ns, EventKind.SYSTEM, Severity.ERROR, str(lost))
        self.notify(str(lost), title="The engine died", severity="error", timeout=30)

    def _set_problem(self, problem: str, alert: bool = False) -> None:
        if alert and problem != self._poll_error:
            self.notify(problem, severity="error", timeout=10)
        self._poll_error = problem
        self._status.problem = problem

    def _show(self, snapshot: ConsoleSnapshot, now: float) -> None:
        self._status.offer(snapshot.status, now)
        symbol = self._symbol(snapshot)
        # Another symbol (picked, or the picked one left the book): at once, whatever the budget.
        at_once = symbol != self._shown_symbol
        self._shown_symbol = symbol
        for pane in self._panes:
            pane.take(snapshot, symbol, now, at_once)

    def _output_rate(self) -> str:
        """What the terminal is sent a second, for the status bar ("" before any output)."""
        if not self.output.started:
            return ""
        mode = " (low)" if self.config.bandwidth is Bandwidth.LOW else ""
        return f"screen {fmt.byte_rate(self.output.rate())}{mode}"

    def _symbol(self, snapshot: ConsoleSnapshot) -> str | None:
        """The symbol the detail panes show: the one `s` picked while it is in the book, else
        the book's first (None: no symbol yet)."""
        symbols = snapshot.status.symbols
        if self._picked in symbols:
            return self._picked
        return symbols[0] if symbols else None

    # Layout

    def _apply_layout(self, width: int, height: int) -> None:
        full_width, full_height = self.config.full_layout_size
        compact = width < full_width or height < full_height
        if compact != self._compact:
            self._compact = compact
            self.set_class(compact, "-compact")
            self._footer.compact = compact
        self._mark_shown_pane()

    def _mark_shown_pane(self) -> None:
        self.set_class(self._compact or self._one_pane, "-one-pane")
        shown = list(self._secondary)[self._pane_index % len(self._secondary)]
        for pane_id, pane in self._secondary.items():
            pane.set_class(pane_id == shown, "-shown")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pick_symbol":
            return self._snapshot is None or len(self._snapshot.status.feeds) > 1
        return True

    # Keys

    def _dialog_open(self) -> bool:
        return len(self.screen_stack) > 1

    def _trading(self) -> TradingView | None:
        if self._snapshot is None:
            self.notify("No engine snapshot yet.", severity="warning")
            return None
        return self._snapshot.status.trading

    def action_pause_resume(self) -> None:
        trading = self._trading()
        if trading is None:
            return
        if trading.state is TradingState.HALTED:
            self.notify("Halted: the kill switch is latched. Re-arm with a.", severity="warning")
        elif trading.state is TradingState.PAUSED:
            self._send("resume", Resume(), safety=True)
        else:
            self._send("pause", Pause(), safety=True)

    def action_pause_symbol(self) -> None:
        """The symbol the detail panes show: stood aside alone, or let back when the operator
        stood it aside (a pause the venue's contract status holds is the venue's to lift)."""
        trading = self._trading()
        snapshot = self._snapshot
        if trading is None or snapshot is None:
            return
        symbol = self._symbol(snapshot)
        if symbol is None:
            return
        position = next((line for line in trading.positions if line.symbol == symbol), None)
        if position is not None and position.stood_aside:
            self._send(f"resume {symbol}", ResumeSymbol(symbol), safety=True)
        else:
            self._send(f"pause {symbol}", PauseSymbol(symbol), safety=True)

    def action_flatten(self) -> None:
        trading = self._trading()
        if trading is None or self._dialog_open():
            return

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self._send("flatten", Flatten(), safety=True)

        self.push_screen(
            ConfirmScreen(
                "Flatten everything?",
                "Cancels every order and closes every position.",
                trading,
            ),
            answered,
        )

    def action_kill(self) -> None:
        self._send("KILL", Kill(), urgent=True, safety=True)

    def action_rearm(self) -> None:
        trading = self._trading()
        if trading is None or self._dialog_open():
            return
        if trading.state is not TradingState.HALTED:
            self.notify("Not halted: there is nothing to re-arm.", severity="warning")
            return

        def typed(phrase: str | None) -> None:
            if phrase is not None:
                self._send("re-arm", Rearm(phrase))

        self.push_screen(RearmScreen(trading.rearm_phrase), typed)

    def action_overrides(self) -> None:
        trading = self._trading()
        if trading is None or self._dialog_open():
            return

        def chosen(overrides: RiskOverrides | None) -> None:
            if overrides is not None:
                self._send("risk overrides", SetLimits(overrides))

        self.push_screen(OverridesScreen(trading.overrides, trading.bounds), chosen)

    async def action_quit(self) -> None:
        if self._dialog_open():
            return
        if self._lost is not None:  # nothing to stop or flatten; the launcher says why
            self.exit(return_code=1)
            return
        trading = self._snapshot.status.trading if self._snapshot is not None else None
        if trading is None or not trading.exposed:
            self._shut_down(ShutdownPolicy.FLATTEN)
            return

        def chosen(policy: ShutdownPolicy | None) -> None:
            if policy is not None:
                self._shut_down(policy)

        self.push_screen(QuitScreen(trading), chosen)

    def action_help(self) -> None:
        if self._dialog_open():
            return
        keymap = self.config.keymap
        keys = [
            (
                ", ".join(
                    self.get_key_display(replace(binding, key=key))
                    for key in keys_in_force(binding, keymap)
                ),
                binding.tooltip,
            )
            for binding in CONSOLE_BINDINGS
        ]
        self.push_screen(HelpScreen(keys))

    def action_next_pane(self) -> None:
        """Compact: the next pane beside the ladder, round and round. Full size: the panes
        one at a time, large, then after the last all of them again."""
        if self._compact:
            self._pane_index += 1
        elif not self._one_pane:
            self._one_pane, self._pane_index = True, 0
        elif self._pane_index + 1 < len(self._secondary):
            self._pane_index += 1
        else:
            self._one_pane = False
        self._mark_shown_pane()

    def action_redraw(self) -> None:
        """Every cell sent again: the console sends only the cells it has not drawn, so what
        another program wrote over the screen (a `wall`, a stray print) would otherwise stay."""
        self._shown_cells.forget()
        self.screen.refresh()

    def action_pick_symbol(self) -> None:
        snapshot = self._snapshot
        if snapshot is None or self._dialog_open():
            return

        def picked(symbol: str | None) -> None:
            if symbol is None or self._snapshot is None:
                return
            self._picked = symbol
            self._show(self._snapshot, self._clock())

        self.push_screen(SymbolScreen(snapshot.status, self._symbol(snapshot)), picked)

    # Commands

    def _shut_down(self, policy: ShutdownPolicy) -> None:
        self.notify(f"Shutting down ({policy.value})…")

        def done(result: CommandResult) -> None:
            if result.ok:
                self.exit()

        # It waits for the engine process to exit: off the loop.
        self._send("shutdown", lambda: asyncio.to_thread(self.handle.shutdown, policy), then=done)

    def _begin(self, label: str, request: OperatorRequest | Starter) -> Awaitable[CommandResult]:
        """The command sent now (the shutdown: started), and its answer to await."""
        try:
            pending = request() if callable(request) else self.handle.execute(Command(request))
        except Exception as error:  # not even sent
            return answered(_failed(label, error))
        return _answer(label, pending)

    def _send(
        self,
        label: str,
        request: OperatorRequest | Starter,
        *,
        urgent: bool = False,
        safety: bool = False,
        then: Callable[[CommandResult], None] | None = None,
    ) -> None:
        """`urgent`: sent now, before anything is drawn, without waiting for its turn.
        `safety`: the status bar says the command was sent, then its answer."""
        sent_at = self._clock()
        answer = self._begin(label, request) if urgent else None
        if safety:
            self._note(CommandNote(f"{label} sent…", "sent"), math.inf)
        self.run_worker(
            self._finish(label, request, answer, then, sent_at if safety else None),
            group="commands",
            exit_on_error=False,
        )

    async def _finish(
        self,
        label: str,
        request: OperatorRequest | Starter,
        answer: Awaitable[CommandResult] | None,
        then: Callable[[CommandResult], None] | None,
        sent_at: float | None,
    ) -> None:
        if answer is not None:
            result = await answer
        else:
            async with self._command_turn:  # FIFO: in the order the operator gave them
                result = await self._begin(label, request)
        if sent_at is not None:
            self._show_answer(label, result, sent_at)
        self.notify(
            f"{label}: {result.message}",
            severity="information" if result.ok else "error",
            timeout=6 if result.ok else 12,
        )
        if then is not None:
            then(result)

    def _show_answer(self, label: str, result: CommandResult, sent_at: float) -> None:
        """The status bar with the state the command left (the engine sends that picture
        ahead of its answer: HALTED after a kill) and the answer, drawn now."""
        self._note(*_answer_note(label, result, self._clock() - sent_at))
        self._draw_state_now()

    @on(EngineProgressed)
    def _engine_progressed(self) -> None:
        """A kill or flatten set its state before its answer: HALTED on screen now."""
        self._draw_state_now()

    def _draw_state_now(self) -> None:
        """The latest snapshot's state on the status bar, drawn now: not at the next poll,
        nor at the screen's next update tick, nor after a notification's layout."""
        now = self._clock()
        try:
            snapshot = self.handle.snapshot()
        except Exception:  # not answering: the next poll says so
            pass
        else:
            self._take(snapshot, now)  # the keys act on it at once too (a to re-arm)
            self._status.offer(snapshot.status, now)
        main = self.screen_stack[0]
        if main.is_current:
            # Textual hands a pane's repaint to its screen through two message hops and then
            # the screen's update timer (20 ms and more on a busy machine): handed over here
            # and drawn now, by Textual's own steps (textual is pinned).
            status = self._status
            if status._repaint_required:
                status._repaint_required = False
                main._dirty_widgets.add(status)
            main._on_timer_update()

    def _note(self, note: CommandNote, shown_s: float) -> None:
        self._status.command = note
        self._note_until = self._clock() + shown_s


async def _answer(label: str, pending: Awaitable[CommandResult]) -> CommandResult:
    """The command's answer; an exception from the engine side is a failed one: the console
    says so and stays."""
    try:
        return await pending
    except Exception as error:
        return _failed(label, error)


def _failed(label: str, error: Exception) -> CommandResult:
    return CommandResult(label, False, f"failed: {type(error).__name__}: {error}")


def _answer_note(label: str, result: CommandResult, answered_s: float) -> tuple[CommandNote, float]:
    """What the status bar says of a safety key's answer, and for how long."""
    if not result.ok:
        return CommandNote(f"{label.upper()} FAILED: {result.message}", "failed"), math.inf
    if result.elapsed_ms:  # kill and flatten: until the venue confirmed flat
        text = f"{label} done: flat after {fmt.duration_ms(result.elapsed_ms)}"
    else:
        text = f"{label} done in {fmt.duration_ms(answered_s * 1e3)}"
    return CommandNote(text, "done"), COMMAND_NOTE_S
