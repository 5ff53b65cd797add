"""The imbalance pane: order-book imbalance at 1/5/15 levels and the microprice offset, now
and over the last minutes (a plotext plot)."""

from __future__ import annotations

from typing import ClassVar

from rich.color import ColorType
from rich.text import Text
from textual.color import Color
from textual_plotext import Plot

from console.view import ConsoleSnapshot, ImbalanceView, symbol_view
from console.widgets.lines import LinePane

_SERIES = (
    ("obi_1", "OBI1", "imbalance--obi-1"),
    ("obi_5", "OBI5", "imbalance--obi-5"),
    ("obi_15", "OBI15", "imbalance--obi-15"),
)


class ImbalancePane(LinePane[ImbalanceView]):
    """A readout of the current values above a plot of the series. The plot is built again
    only when the series (or the pane's size) changes, and like every row of a `LinePane`
    only its rows that look different are sent: a series that moved no dot sends nothing."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "imbalance--obi-1",
        "imbalance--obi-5",
        "imbalance--obi-15",
        "imbalance--micro",
        "imbalance--label",
    }
    pane_id = "imbalance"
    pane_title = "imbalance"
    budget = "imbalance_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> ImbalanceView | None:
        return symbol_view(snapshot.imbalance, symbol)

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(title, id=id, classes=classes)
        self._plot = Plot()
        self._plotted: tuple[object, ...] | None = None
        self._plot_rows: list[Text] = []

    def title(self, view: ImbalanceView) -> str:
        return f"imbalance {view.symbol}"

    def rows(self, view: ImbalanceView, width: int, height: int) -> list[Text]:
        return [self._readout(view), *self._plot_lines(view, width, height - 1)]

    def _readout(self, view: ImbalanceView) -> Text:
        current = view.current
        row = Text()
        if current is None:
            row.append("no book yet", self.style("imbalance--label"))
            return row
        for field, label, component in _SERIES:
            row.append(f"{label} ", self.style("imbalance--label"))
            row.append(f"{getattr(current, field):+.2f}  ", self.style(component))
        row.append("micro ", self.style("imbalance--label"))
        row.append(f"{current.microprice_offset_bps:+.2f}bps", self.style("imbalance--micro"))
        return row

    def _plot_lines(self, view: ImbalanceView, width: int, height: int) -> list[Text]:
        plotted = (view.window_s, view.ages_s, view.series, width, height)
        if height <= 0:
            return []
        if plotted == self._plotted:
            return [line.copy() for line in self._plot_rows]  # `LinePane` pads them in place
        plt = self._plot
        plt.clear_data()
        plt.theme("clear")
        if not self.app.current_theme.ansi:  # else the terminal's own colours
            variables = self.app.theme_variables
            surface = Color.parse(variables["surface"]).rgb
            plt.canvas_color(surface)
            plt.axes_color(surface)
            plt.ticks_color(Color.parse(variables["foreground"]).rgb)
        plt.plotsize(width, height)
        plt.xlim(-view.window_s, 0)
        plt.ylim(-1, 1, yside="left")
        plt.xlabel("seconds ago")
        if view.series:
            xs = list(view.ages_s)
            for field, label, component in _SERIES:
                ys = [getattr(reading, field) for reading in view.series]
                plt.plot(xs, ys, label=label, color=self._colour(component), marker="braille")
            micro = [reading.microprice_offset_bps for reading in view.series]
            plt.plot(
                xs,
                micro,
                label="micro bps →",
                color=self._colour("imbalance--micro"),
                marker="braille",
                yside="right",
            )
        self._plotted = plotted
        self._plot_rows = list(Text.from_ansi(plt.build()).split("\n"))[:height]
        return [line.copy() for line in self._plot_rows]

    def _colour(self, component: str) -> tuple[int, int, int] | int | str:
        """A series' colour for plotext: the terminal's own when the theme uses its palette."""
        color = self.style(component).color
        if color is None:
            return "default"
        if color.type in (ColorType.STANDARD, ColorType.EIGHT_BIT) and color.number is not None:
            return color.number
        triplet = color.get_truecolor()
        return (triplet.red, triplet.green, triplet.blue)
