"""Kev's decisions, newest first: when, how long it took, what it asked, what became of it
and why, and its reasoning."""

from __future__ import annotations

import textwrap
from typing import ClassVar

from rich.text import Text

from console.view import ConsoleSnapshot, KevDecisionView, KevOutcome
from console.widgets import format as fmt
from console.widgets.lines import LinePane

REASONING_LINES = 2
_OUTCOME_STYLE = {
    KevOutcome.ACCEPTED: "kev--accepted",
    KevOutcome.REJECTED: "kev--rejected",
    KevOutcome.STALE: "kev--stale",
}


class KevPane(LinePane[tuple[KevDecisionView, ...]]):
    """Each decision takes a line, one more for why it was rejected or stale (or what it
    changed), and up to two of reasoning; as many decisions as the height holds."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        *_OUTCOME_STYLE.values(),
        "kev--action",
        "kev--label",
        "kev--reasoning",
    }
    pane_id = "kev"
    pane_title = "Kev decisions"
    # No budget: each decision is drawn as it comes (console.bandwidth).

    def part(self, snapshot: ConsoleSnapshot, symbol: str | None) -> tuple[KevDecisionView, ...]:
        return snapshot.kev_decisions

    def rows(self, view: tuple[KevDecisionView, ...], width: int, height: int) -> list[Text]:
        if not view:
            return [Text("no decisions yet", self.style("kev--label"))]
        lines: list[Text] = []
        for decision in reversed(view):
            if len(lines) >= height:
                break
            row = Text(f"{fmt.clock_ns(decision.at_ns)} {fmt.duration_ms(decision.latency_ms):>7} ")
            row.append(f"{decision.action:<10}", self.style("kev--action"))
            row.append(decision.outcome.value, self.style(_OUTCOME_STYLE[decision.outcome]))
            lines.append(row)
            if decision.why:
                lines.append(
                    Text(f"  {decision.why}", self.style(_OUTCOME_STYLE[decision.outcome]))
                )
            wrapped = textwrap.wrap(
                " ".join(decision.reasoning.split()),
                width=max(10, width - 2),
                max_lines=REASONING_LINES,
                placeholder=" …",
            )
            lines += [Text(f"  {line}", self.style("kev--reasoning")) for line in wrapped]
        return lines
