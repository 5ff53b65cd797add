"""The console's panes: the one place a pane is registered.

The App builds each, lays them out in this order (styles/console.tcss places them by their
ids), holds each to its redraw budget, feeds it its part of every snapshot, and `v` shows
them beside the ladder in this order. A new pane is a `GridPane` in console/widgets/ and a
line here.
"""

from __future__ import annotations

from console.widgets.book import BookPane
from console.widgets.depth import DepthPane
from console.widgets.events import EventsPane
from console.widgets.imbalance import ImbalancePane
from console.widgets.kev import KevPane
from console.widgets.latency import LatencyPane
from console.widgets.lines import GridPane
from console.widgets.orders import OrdersPane
from console.widgets.scorecard import ScorecardPane
from console.widgets.verdicts import VerdictsPane
from console.widgets.vram import VramPane

PANES: tuple[type[GridPane], ...] = (
    DepthPane,
    BookPane,
    ImbalancePane,
    LatencyPane,
    VramPane,
    VerdictsPane,
    KevPane,
    OrdersPane,
    EventsPane,
    ScorecardPane,
)
