"""The event log: fills, denials, faults, Kev decisions and state changes, one line each, in
the order they happened, never merged. Appending draws only the new lines."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from rich.text import Text
from textual.widgets import RichLog

from console.view import ConsoleEvent, Severity
from console.widgets import format as fmt

_SEVERITY_STYLE = {
    Severity.INFO: "events--info",
    Severity.WARNING: "events--warning",
    Severity.ERROR: "events--error",
}


class EventsPane(RichLog):
    """Keeps the last `max_lines` events; a gap in what the engine still held is written as a
    line of its own."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *_SEVERITY_STYLE.values(),
        "events--kind",
        "events--gap",
    }

    def __init__(
        self, title: str, max_lines: int, *, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(
            max_lines=max_lines, wrap=False, highlight=False, markup=False, id=id, classes=classes
        )
        self.border_title = title

    def add(self, events: Sequence[ConsoleEvent], missed: int) -> None:
        if missed:
            self.write(
                Text(
                    f"… {missed} events were dropped before the console read them",
                    self._style("events--gap"),
                )
            )
        for event in events:
            line = Text(f"{fmt.clock_ns(event.at_ns)} ")
            line.append(f"{event.kind.value:<8}", self._style("events--kind"))
            line.append(event.text, self._style(_SEVERITY_STYLE[event.severity]))
            self.write(line)

    def _style(self, component: str):
        return self.get_component_rich_style(component, partial=True)
