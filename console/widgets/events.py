"""The event log: fills, denials, faults, Kev decisions and state changes, one entry each, in
the order they happened, never merged. Appending draws only the new lines; a line too long for
the pane wraps under its own text, so nothing is cut at the edge. Routine entries (Laya's
actions, the console's information notes) may wait up to the pane's budget and go with the
next: each append scrolls, and so sends, the whole pane."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import ClassVar, Self

from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.text import Text
from textual.widgets import RichLog

from console.view import ConsoleEvent, ConsoleSnapshot, EventKind, Severity
from console.widgets import format as fmt
from console.widgets.lines import GridPane, PaneSettings

_SEVERITY_STYLE = {
    Severity.INFO: "events--info",
    Severity.WARNING: "events--warning",
    Severity.ERROR: "events--error",
}


_NARROW_BODY = 40
"""Below this many cells beside the head, continuation rows start near the edge instead."""


_ROUTINE_KINDS = (EventKind.SYSTEM, EventKind.FILL)
"""Kinds whose ordinary (INFO) events may wait `interval_s` to go with others: Laya's actions and
the console's notes, and fills, which the orders pane and the status bar show at once (a book
of symbols fills several times a second: each line at once would scroll the log as often)."""


class EventLine:
    """One entry: `head` (time and kind), then `body`, whose continuation rows start under
    the body (in a narrow pane, two cells in) rather than under the time."""

    def __init__(self, head: Text, body: Text) -> None:
        self.head = head
        self.body = body

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        width = self.head.cell_len
        return Measurement(width + 1, width + self.body.cell_len)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width, head = options.max_width, self.head.cell_len
        room = max(1, width - head)
        first = self.body.wrap(console, room)[0]
        yield Text.assemble(self.head, first, no_wrap=True)
        rest = self.body[len(first.plain) :]
        rest = rest[len(rest.plain) - len(rest.plain.lstrip()) :]
        if not rest.plain:
            return
        indent = head if room >= _NARROW_BODY else min(2, head)
        for row in rest.wrap(console, max(1, width - indent)):
            yield Text.assemble(" " * indent, row, no_wrap=True)


class EventsPane(RichLog, GridPane):  # RichLog first: its default styles outrank Widget's
    """Keeps the last `max_lines` entries; a gap in what the engine still held is an entry of
    its own. Lines are wrapped at the pane's width: when it changes (a resize, the compact
    layout showing the pane again) every kept entry is drawn again at the new one."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *_SEVERITY_STYLE.values(),
        "events--kind",
        "events--gap",
    }
    pane_id = "events"
    pane_title = "events"
    budget = "lists_s"
    """How long routine entries may wait to go with others."""

    @classmethod
    def build(cls, config: PaneSettings) -> Self:
        return cls(cls.pane_title, config.event_log_lines, id=cls.pane_id, classes="pane secondary")

    def take(
        self, snapshot: ConsoleSnapshot, symbol: str | None, now: float, at_once: bool = False
    ) -> None:
        """Nothing: events come one by one from the engine's log (`add`), not in snapshots."""

    def __init__(
        self, title: str, max_lines: int, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(
            max_lines=max_lines,
            min_width=1,
            wrap=False,
            highlight=False,
            markup=False,
            id=id,
            classes=classes,
        )
        self.border_title = title
        self._entries: deque[EventLine] = deque(maxlen=max_lines)
        self._drawn_width = 0
        self._held: list[EventLine] = []
        self._held_since = 0.0

    def add(self, events: Sequence[ConsoleEvent], missed: int, now: float) -> None:
        """Append `events` (and a line for the `missed` ones), in order, at `now` (monotonic
        seconds): at once unless all of them, and those held before, are routine and held
        for less than `interval_s`. The App calls it every poll, with nothing new too."""
        entries = []
        urgent = bool(missed)
        if missed:
            gap = f"… {missed} events were dropped before the console read them"
            entries.append(EventLine(Text(), Text(gap, self._style("events--gap"))))
        for event in events:
            entries.append(self._entry(event.at_ns, event.kind, event.severity, event.text))
            urgent = urgent or event.kind not in _ROUTINE_KINDS
            urgent = urgent or event.severity is not Severity.INFO
        if entries and not self._held:
            self._held_since = now
        self._held += entries
        if self._held and (urgent or now - self._held_since >= self.interval_s):
            self._append([])

    def note(self, at_ns: int, kind: EventKind, severity: Severity, text: str) -> None:
        """A line of the console's own (the engine cannot say it died), after the engine's."""
        self._append([self._entry(at_ns, kind, severity, text)])

    def _entry(self, at_ns: int, kind: EventKind, severity: Severity, text: str) -> EventLine:
        head = Text(f"{fmt.clock_ns(at_ns)} ")
        head.append(f"{kind.value:<8}", self._style("events--kind"))
        return EventLine(head, Text(text, self._style(_SEVERITY_STYLE[severity])))

    def _append(self, entries: list[EventLine]) -> None:
        entries = [*self._held, *entries]  # in order: the held ones first
        self._held.clear()
        self._entries.extend(entries)
        width = self._drawn_width
        if width and self._width() == width:
            for entry in entries:
                self.write(entry, width=width)
        # Otherwise the pane is hidden or was resized: `_redraw` draws them at its width.

    def on_resize(self) -> None:
        self._redraw()

    def on_show(self) -> None:
        self._redraw()

    def _redraw(self) -> None:
        width = self._width()
        if width and width != self._drawn_width:
            self._drawn_width = width
            self.clear()
            for entry in self._entries:
                self.write(entry, width=width)

    def _width(self) -> int:
        return self.scrollable_content_region.width if self.display else 0

    def _style(self, component: str):
        return self.get_component_rich_style(component, partial=True)
