"""Laya's verdicts on the picked symbol: newest first, one colour per class, and the count of
each class."""

from __future__ import annotations

from typing import ClassVar, NamedTuple

from rich.text import Text

from console.view import ConsoleSnapshot
from console.widgets import format as fmt
from console.widgets.lines import LinePane
from engine.laya.decide import QuoteIntent, VerdictStreamView
from engine.laya.verdict import Verdict

CLASS_STYLE = {
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


class VerdictsOn(NamedTuple):
    """The verdict stream and the symbol whose verdicts are listed; the counts are the whole
    book's (the stream does not count per symbol)."""

    symbol: str
    stream: VerdictStreamView


class VerdictsPane(LinePane[VerdictsOn]):
    """The stream keeps every non-HOLD verdict and a HOLD only when the verdict changes (the
    engine's decision stage decides that), so the rows are the interesting ones."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {*CLASS_STYLE.values(), "verdicts--label"}
    pane_id = "verdicts"
    pane_title = "Laya verdicts"
    budget = "lists_s"

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> VerdictsOn | None:
        return None if symbol is None else VerdictsOn(symbol, snapshot.verdicts)

    def title(self, view: VerdictsOn) -> str:
        return f"Laya verdicts {view.symbol}"

    def rows(self, view: VerdictsOn, width: int, height: int) -> list[Text]:
        stream = view.stream
        counts = [Text("all symbols", self.style("verdicts--label"))]
        for verdict in Verdict:
            number = stream.counts.get(verdict.name, 0)
            share = number / stream.total * 100 if stream.total else 0.0
            text = Text(f"{verdict.name} ", self.style(CLASS_STYLE[verdict]))
            text.append(f"{fmt.count(number)} {share:.1f}%", self.style("verdicts--label"))
            counts.append(text)
        gap = Text("  ")
        if sum(text.cell_len for text in counts) + 2 * (len(counts) - 1) <= width:
            lines = [gap.join(counts)]
        else:
            half = (len(counts) + 1) // 2
            lines = [gap.join(counts[:half]), gap.join(counts[half:])]
        room = height - len(lines)
        recent = [record for record in stream.recent if record.symbol == view.symbol]
        if not recent:
            lines.append(Text(f"no verdicts on {view.symbol} yet", self.style("verdicts--label")))
        for record in reversed(recent[-room:] if room > 0 else ()):
            row = Text(f"{fmt.clock_ms(record.exchange_ts_ms)} ")
            row.append(f"{record.verdict.name:<10}", self.style(CLASS_STYLE[record.verdict]))
            row.append(f" {record.probability:4.2f}  {_ACTION[record.intent]}")
            lines.append(row)
        return lines
