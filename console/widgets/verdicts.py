"""Laya's verdict stream: newest first, one colour per class, and the count of each class."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text

from console.widgets import format as fmt
from console.widgets.lines import LinePane
from engine.laya.decide import QuoteIntent, VerdictStreamView
from engine.laya.verdict import Verdict

_CLASS_STYLE = {
    Verdict.HOLD: "verdicts--hold",
    Verdict.LEAN_BUY: "verdicts--lean-buy",
    Verdict.LEAN_SELL: "verdicts--lean-sell",
    Verdict.EMERGENCY: "verdicts--emergency",
}
_ACTION = {
    QuoteIntent.KEEP_QUOTING: "keep quoting",
    QuoteIntent.PULL_ASKS: "pull asks",
    QuoteIntent.PULL_BIDS: "pull bids",
    QuoteIntent.CANCEL_ALL: "cancel all",
}


class VerdictsPane(LinePane[VerdictStreamView]):
    """The stream keeps every non-HOLD verdict and a HOLD only when the verdict changes (the
    engine's decision stage decides that), so the rows are the interesting ones."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*_CLASS_STYLE.values(), "verdicts--label"}

    def rows(self, view: VerdictStreamView, width: int, height: int) -> list[Text]:
        counts = []
        for verdict in Verdict:
            number = view.counts.get(verdict.name, 0)
            share = number / view.total * 100 if view.total else 0.0
            text = Text(f"{verdict.name} ", self.style(_CLASS_STYLE[verdict]))
            text.append(f"{fmt.count(number)} {share:.1f}%", self.style("verdicts--label"))
            counts.append(text)
        gap = Text("  ")
        if sum(text.cell_len for text in counts) + 2 * (len(counts) - 1) <= width:
            lines = [gap.join(counts)]
        else:
            half = len(counts) // 2
            lines = [gap.join(counts[:half]), gap.join(counts[half:])]
        room = height - len(lines)
        if not view.recent:
            lines.append(Text("no verdicts yet", self.style("verdicts--label")))
        for record in reversed(view.recent[-room:] if room > 0 else ()):
            row = Text(f"{fmt.clock_ms(record.exchange_ts_ms)} {record.symbol:<9} ")
            row.append(f"{record.verdict.name:<10}", self.style(_CLASS_STYLE[record.verdict]))
            row.append(f" {record.probability:4.2f}  {_ACTION[record.intent]}")
            lines.append(row)
        return lines
