"""How much the console draws: `[console] bandwidth` (`full` or `low`) and each pane's redraw
budget under it.

A pane redraws only the rows that changed, and an ordinary change (a price, a size, a PnL, a
percentile) no more often than its budget allows; a person reads a number that changes more
often than a few times a second as noise, and over SSH every redraw is bytes the link carries
ahead of the operator's keys. What the operator must see at once is drawn at once whatever the
budget: the trading state and why, a flatten running, a position changing (a fill), a feed or
Kev changing state, the engine stopping or dying, a command's answer, the GPU memory alert, a
fill in the orders pane, Kev's decisions, and every event but the routine ones (Laya's actions,
the console's notes, and the fills' lines in the event log, which the orders pane and the
status bar have shown at once), which may wait for the next up to `lists_s`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Bandwidth(enum.StrEnum):
    """FULL for a LAN or a good connection; LOW for links under about 256 kbit/s (a phone, a
    hotel), which also draws in the terminal's own 16 colours (shorter codes)."""

    FULL = "full"
    LOW = "low"


@dataclass(frozen=True, slots=True)
class RedrawBudget:
    """The least time between two ordinary redraws of each pane, in seconds; `output_rate_s`
    how often the status bar's output rate is renewed; `terminal_colours` draws in the
    terminal's own palette."""

    ladder_s: float
    status_s: float
    imbalance_s: float
    latency_s: float
    lists_s: float
    """The book's lines, Laya's verdicts, the open orders, and how long routine events may
    wait."""
    vram_s: float
    output_rate_s: float
    terminal_colours: bool

    @property
    def detail_hz(self) -> float:
        """How often the engine rebuilds what the ladder and the other read-only panes show
        (`EngineAdapterConfig.detail_hz`): twice the ladder's redraw rate, so what it draws
        is at most half its budget old."""
        return 2 / self.ladder_s


BUDGETS = {
    Bandwidth.FULL: RedrawBudget(
        ladder_s=0.4,
        status_s=0.5,
        imbalance_s=1.0,
        latency_s=1.0,
        lists_s=1.0,
        vram_s=1.0,
        output_rate_s=2.0,
        terminal_colours=False,
    ),
    Bandwidth.LOW: RedrawBudget(
        ladder_s=1.5,
        status_s=2.0,
        imbalance_s=5.0,
        latency_s=5.0,
        lists_s=5.0,
        vram_s=5.0,
        output_rate_s=5.0,
        terminal_colours=True,
    ),
}
