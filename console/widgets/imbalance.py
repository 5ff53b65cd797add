"""The imbalance pane: order-book imbalance at 1/5/15 levels and the microprice offset, now
and over the last minutes (plotext, through textual-plotext)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import var
from textual.widget import Widget
from textual.widgets import Static
from textual_plotext import PlotextPlot

from console.view import ImbalanceView

_SERIES = (
    ("obi_1", "OBI1", "imbalance--obi-1"),
    ("obi_5", "OBI5", "imbalance--obi-5"),
    ("obi_15", "OBI15", "imbalance--obi-15"),
)


class ImbalancePane(Widget):
    """A readout of the current values above a plot of the series. The plot is rebuilt only
    when the series changes (the engine may sample it more coarsely than the readout)."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "imbalance--obi-1",
        "imbalance--obi-5",
        "imbalance--obi-15",
        "imbalance--micro",
        "imbalance--label",
    }

    view: var[ImbalanceView | None] = var(None)

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.border_title = title

    def compose(self) -> ComposeResult:
        yield Static("waiting for the engine", id="imbalance-readout")
        yield PlotextPlot(id="imbalance-plot")

    def watch_view(self, old: ImbalanceView | None, new: ImbalanceView | None) -> None:
        if not self.is_mounted or new is None:
            return
        self.border_title = f"imbalance {new.symbol}"
        if old is None or old.current != new.current:
            # One row whatever it says (styles): no layout pass per reading.
            self.query_one("#imbalance-readout", Static).update(self._readout(new), layout=False)
        if old is None or old.ages_s != new.ages_s or old.series != new.series:
            self._plot(new)

    def on_mount(self) -> None:
        if self.view is not None:
            self.watch_view(None, self.view)

    def _readout(self, view: ImbalanceView) -> Text:
        current = view.current
        row = Text()
        if current is None:
            row.append("no book yet", self._style("imbalance--label"))
            return row
        for field, label, component in _SERIES:
            row.append(f"{label} ", self._style("imbalance--label"))
            row.append(f"{getattr(current, field):+.2f}  ", self._style(component))
        row.append("micro ", self._style("imbalance--label"))
        row.append(f"{current.microprice_offset_bps:+.2f}bps", self._style("imbalance--micro"))
        return row

    def _plot(self, view: ImbalanceView) -> None:
        widget = self.query_one("#imbalance-plot", PlotextPlot)
        plt = widget.plt
        plt.clear_data()
        plt.xlim(-view.window_s, 0)
        plt.ylim(-1, 1, yside="left")
        plt.xlabel("seconds ago")
        if view.series:
            xs = list(view.ages_s)
            for field, label, component in _SERIES:
                ys = [getattr(reading, field) for reading in view.series]
                plt.plot(xs, ys, label=label, color=self._rgb(component), marker="braille")
            micro = [reading.microprice_offset_bps for reading in view.series]
            plt.plot(
                xs,
                micro,
                label="micro bps →",
                color=self._rgb("imbalance--micro"),
                marker="braille",
                yside="right",
            )
        widget.refresh()

    def _style(self, component: str):
        return self.get_component_rich_style(component, partial=True)

    def _rgb(self, component: str) -> tuple[int, int, int] | str:
        color = self._style(component).color
        if color is None:
            return "default"
        triplet = color.get_truecolor()
        return (triplet.red, triplet.green, triplet.blue)
