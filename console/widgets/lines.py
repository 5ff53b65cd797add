"""`LinePane`: a pane drawn as rows of text that redraws only the rows that changed, no more
often than its budget allows.

The console runs over SSH, often a slow link. A pane receives a frozen view through its `view`
var; an equal view does nothing, a different one is turned into rows, and only rows whose
rendering differs from what is on screen are sent again. The App offers each poll's view with
`offer`: an ordinary change is taken at most once every `interval_s` (the redraw budget), one
the operator must see at once (`urgent`) at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Generic, Protocol, Self, TypeVar

from rich.style import Style
from rich.text import Span, Text
from textual.geometry import Region
from textual.reactive import var
from textual.strip import Strip
from textual.widget import Widget

from console.view import ConsoleSnapshot

ViewT = TypeVar("ViewT")


class PaneSettings(Protocol):
    """What of the console's configuration (`console.app.ConsoleConfig`) a pane is built with."""

    @property
    def event_log_lines(self) -> int: ...


class GridPane(Widget):
    """A pane as the console's registry (`console.panes.PANES`) builds, places and feeds it:
    `pane_id` (the styles place it by it), its border title, the redraw budget it is held to
    (a `RedrawBudget` field; None: every change at once), and whether it is one of the panes
    the compact layout shows beside the ladder one at a time (`v`)."""

    pane_id: ClassVar[str]
    pane_title: ClassVar[str]
    budget: ClassVar[str | None] = None
    beside_ladder: ClassVar[bool] = True
    interval_s = 0.0
    """The least time between two ordinary changes it takes, seconds (set from `budget`)."""

    @classmethod
    def build(cls, config: PaneSettings) -> Self:
        classes = "pane secondary" if cls.beside_ladder else "pane"
        return cls(cls.pane_title, id=cls.pane_id, classes=classes)  # type: ignore[arg-type]

    def take(
        self, snapshot: ConsoleSnapshot, symbol: str | None, now: float, at_once: bool = False
    ) -> None:
        """Its part of `snapshot` at `now`, `symbol` being the one the detail panes show;
        `at_once`: whatever the budget (another symbol is shown)."""
        raise NotImplementedError


def fit(parts: Sequence[tuple[int, Text]], width: int, separator: str = "  ") -> Text:
    """Join the parts that fit in `width`, dropping the least important first (the highest
    priority number; among equals, the last). Empty parts are skipped."""
    kept = [(rank, index, text) for index, (rank, text) in enumerate(parts) if text.cell_len]

    def length() -> int:
        return sum(text.cell_len for _, _, text in kept) + len(separator) * (len(kept) - 1)

    while len(kept) > 1 and length() > width:
        kept.remove(max(kept, key=lambda item: (item[0], item[1])))
    return Text(separator).join(text for _, _, text in kept)


_Row = tuple[str, str | Style, list[Span]]


def _row(line: Text) -> _Row:
    """What a row's strip is made from: its text, its style and its spans."""
    return line.plain, line.style, line.spans


class LinePane(GridPane, Generic[ViewT]):
    """Subclasses implement `rows(view, width, height)` and, when registered, `part`; the
    component classes they declare are styled in styles/*.tcss and read with `style(name)`."""

    view: var[ViewT | None] = var(None, always_update=True)
    """Set: redrawn (rows that look the same are not sent). `offer` compares before it sets,
    so the var does not compare again."""
    waiting_text = "waiting for the engine"

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = title
        self._strips: list[Strip] = []
        self._rows: list[_Row | None] = []
        """What each of `_strips` was made from."""
        self._drawn_for: tuple[int, int, Style] | None = None
        """The size and base style `_strips` were made for."""
        self._taken_at = -float("inf")

    def rows(self, view: ViewT, width: int, height: int) -> list[Text]:
        raise NotImplementedError

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> ViewT | None:
        """What it shows of `snapshot`, `symbol` being the one picked: parts the snapshot
        reuses come back as the same objects, so most polls compare nothing."""
        raise NotImplementedError

    def take(
        self, snapshot: ConsoleSnapshot, symbol: str | None, now: float, at_once: bool = False
    ) -> None:
        self.offer(self.part(snapshot, symbol), now, at_once)

    def urgent(self, shown: ViewT, view: ViewT) -> bool:
        """Whether going from `shown` to `view` must be drawn at once, whatever the budget."""
        return False

    def offer(self, view: ViewT | None, now: float, at_once: bool = False) -> None:
        """Take `view` if it differs and the budget allows it at `now` (monotonic seconds),
        or `at_once`, else keep the one shown: the App offers the latest again at its next
        poll."""
        shown = self.view
        if view is shown:
            return
        # The budget first: most polls fall inside it, and then only `urgent` (a few fields)
        # is compared, not the whole view (a ladder is dozens of levels).
        if not (
            at_once
            or shown is None
            or view is None
            or now - self._taken_at >= self.interval_s
            or self.urgent(shown, view)
        ):
            return
        if view != shown:
            self._taken_at = now
            self.view = view

    def title(self, view: ViewT) -> str | None:
        """A border title that follows the view (e.g. its symbol); None keeps the fixed one."""
        return None

    def style(self, component: str) -> Style:
        return self.get_component_rich_style(component, partial=True)

    def watch_view(self, view: ViewT | None) -> None:
        title = None if view is None else self.title(view)
        if title is not None and title != self.border_title:
            self.border_title = title
        self.redraw()

    def on_resize(self) -> None:
        self.redraw(everything=True)

    def on_show(self) -> None:
        self.redraw(everything=True)

    def redraw(self, everything: bool = False) -> None:
        width, height = self.size
        if width <= 0 or height <= 0 or not self.display:
            return  # drawn when it is shown again
        base = self.rich_style
        view = self.view
        lines = [Text(self.waiting_text)] if view is None else self.rows(view, width, height)
        del lines[height:]
        # Rows are compared as text before they are made strips: most rows of a redraw are
        # unchanged, and a strip costs more to make than to compare (seven caches each).
        rows: list[_Row | None] = [_row(line) for line in lines]
        rows.extend([None] * (height - len(lines)))
        if everything or (width, height, base) != self._drawn_for:
            self._drawn_for = (width, height, base)
            self._rows = rows
            self._strips = [self._strip(line, width, base) for line in lines]
            self._strips.extend([Strip.blank(width, base)] * (height - len(lines)))
            self.refresh()
            return
        for y, row in enumerate(rows):
            if row == self._rows[y]:
                continue
            self._rows[y] = row
            self._strips[y] = (
                Strip.blank(width, base) if row is None else self._strip(lines[y], width, base)
            )
            self.refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(self.size.width, self.rich_style)

    def _strip(self, line: Text, width: int, base: Style) -> Strip:
        line.truncate(width, overflow="ellipsis", pad=True)
        return Strip(line.render(self.app.console, end=""), width).apply_style(base)
